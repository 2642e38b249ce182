#pragma once
// Points the on-disk caches (compile cache, BEAM's beam.db) at a fresh folder for the object's lifetime, then
// restores CACHEDB_DIR and removes the folder.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tgtest {

class ScopedCacheDir {
 public:
  ScopedCacheDir() {
    const char* old = std::getenv("CACHEDB_DIR");
    old_ = old ? old : "";
    char tmpl[] = "/tmp/tg_test_cache_XXXXXX";
    dir_ = mkdtemp(tmpl) ? tmpl : "";
    setenv("CACHEDB_DIR", dir_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (old_.empty())
      unsetenv("CACHEDB_DIR");
    else
      setenv("CACHEDB_DIR", old_.c_str(), 1);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScopedCacheDir(const ScopedCacheDir&) = delete;
  ScopedCacheDir& operator=(const ScopedCacheDir&) = delete;
  const std::string& path() const { return dir_; }
  std::filesystem::path db() const { return std::filesystem::path(dir_) / "beam.db"; }  // BEAM's cache in it

 private:
  std::string old_, dir_;
};

}  // namespace tgtest
