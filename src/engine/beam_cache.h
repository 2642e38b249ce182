#pragma once
// BEAM's on-disk cache: the winning opts per (device, compile target, kernel AST, BEAM width), in an SQLite
// database beside the compile cache (runtime/cache_dir.h: beam.db). Several processes may search and write at
// once (WAL journal, a busy timeout, one transaction per write), and a process killed mid-write loses at most
// its own last write. The cache is only an optimization: a corrupt or unreadable file is a warning under DEBUG,
// never an error, and the kernel is searched again. Without SQLite at build time nothing is cached.
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel.h"

struct sqlite3;

namespace tg {

struct BeamCacheKey {
  std::string device;  // "CPU", "CUDA:1"
  std::string target;  // what the opts were timed on: the compiler's identity (version, flags, CPU or GPU arch)
  std::string ast;     // canonical text of the kernel AST; stored whole and compared, so a hash collision misses
  int level = 0;       // the beam width
};

// Opts as stored: "UPCAST 0 4;UNROLL 1 0". parse_opts returns nullopt for text that is not such a list.
std::string format_opts(const std::vector<Opt>& opts);
std::optional<std::vector<Opt>> parse_opts(const std::string& text);

class BeamCacheDb {
 public:
  // Opens (creating) the database at `file`. Never throws: when it cannot be opened or is not a database, ok()
  // is false (and DEBUG>=1 says why).
  explicit BeamCacheDb(const std::filesystem::path& file);
  ~BeamCacheDb();
  BeamCacheDb(const BeamCacheDb&) = delete;
  BeamCacheDb& operator=(const BeamCacheDb&) = delete;

  bool ok() const { return db_ != nullptr; }
  const std::filesystem::path& file() const { return file_; }
  std::optional<std::vector<Opt>> get(const BeamCacheKey& key);
  // Stores (replacing) the winner of `key`; false when the write failed.
  bool put(const BeamCacheKey& key, const std::vector<Opt>& opts);

  // Whether this build has SQLite (without it every BeamCacheDb is !ok()).
  static bool available();

 private:
  void warn(const std::string& what);
  std::filesystem::path file_;
  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

// This process's cache at cache_dir() / "beam.db" (reopened when CACHEDB_DIR points elsewhere); nullptr when it
// cannot be used (CACHELEVEL=0, no SQLite, an unusable file).
std::shared_ptr<BeamCacheDb> process_beam_cache();

}  // namespace tg
