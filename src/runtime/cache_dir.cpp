// Where the on-disk caches live (runtime/cache_dir.h).
#include "runtime/cache_dir.h"

#include <string>

#include "helpers/env.h"

namespace tg {

std::filesystem::path cache_dir() {
  namespace fs = std::filesystem;
  if (std::string d = getenv_str("CACHEDB_DIR"); !d.empty()) return d;
  if (std::string x = getenv_str("XDG_CACHE_HOME"); !x.empty()) return fs::path(x) / "tinygrad_cpp";
  if (std::string home = getenv_str("HOME"); !home.empty()) return fs::path(home) / ".cache" / "tinygrad_cpp";
  return fs::temp_directory_path() / "tinygrad_cpp";
}

}  // namespace tg
