// BEAM's SQLite cache of winning opts (engine/beam_cache.h).
#include "engine/beam_cache.h"

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "runtime/cache_dir.h"
#include "tg/context.h"

#ifdef TG_HAVE_SQLITE3
#include <sqlite3.h>
#endif

namespace tg {
namespace {

constexpr const char* kOpNames[] = {"UPCAST", "UNROLL", "LOCAL",    "GROUP", "GROUPTOP",
                                    "TC",     "PADTO",  "NOLOCALS", "SWAP",  "THREAD"};
constexpr int kNumOptOps = int(sizeof(kOpNames) / sizeof(kOpNames[0]));

}  // namespace

std::string format_opts(const std::vector<Opt>& opts) {
  std::string s;
  for (const Opt& o : opts)
    s += (s.empty() ? "" : ";") + std::string(kOpNames[int(o.op)]) + " " + std::to_string(o.axis) + " " +
         std::to_string(o.amount);
  return s;
}

std::optional<std::vector<Opt>> parse_opts(const std::string& text) {
  std::vector<Opt> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ';');) {
    std::istringstream fields(item);
    std::string name, rest;
    long axis = 0, amount = 0;
    if (!(fields >> name >> axis >> amount) || (fields >> rest)) return std::nullopt;
    int op = 0;
    while (op < kNumOptOps && name != kOpNames[op]) op++;
    if (op == kNumOptOps || axis < -1 || axis > 1024 || amount < 0 || amount > (1 << 20)) return std::nullopt;
    out.push_back({OptOps(op), int(axis), int(amount)});
  }
  return out;
}

void BeamCacheDb::warn(const std::string& what) {
  if (DEBUG >= 1) std::fprintf(stderr, "BEAM cache %s: %s (searching without it)\n", file_.c_str(), what.c_str());
}

#ifdef TG_HAVE_SQLITE3

namespace {

// FNV-1a, 64 bits, as hex: stable across processes and builds (std::hash is not promised to be).
std::string stable_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS beam_v1 (device TEXT NOT NULL, target TEXT NOT NULL, ast_hash TEXT NOT NULL, "
    "level INTEGER NOT NULL, ast TEXT NOT NULL, opts TEXT NOT NULL, PRIMARY KEY (device, target, ast_hash, level))";

// A prepared statement, finalized on every path out.
struct Statement {
  sqlite3_stmt* s = nullptr;
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
  ~Statement() { sqlite3_finalize(s); }
  void bind(int i, const std::string& v) { sqlite3_bind_text(s, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, int v) { sqlite3_bind_int(s, i, v); }
  std::string column(int i) {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t), size_t(sqlite3_column_bytes(s, i))) : std::string();
  }
};

}  // namespace

// sqlite3_exec, tried again while another connection holds the lock (up to 10 s). The busy timeout does not cover
// every case: two processes opening a new database at once, one switching it to WAL while the other creates the
// table, get SQLITE_BUSY at once (seen in CI: a writer of BeamCache.TwoWritersAtOnceLoseNothing opened no cache).
static int exec_waiting(sqlite3* db, const char* sql, char** err) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const int rc = sqlite3_exec(db, sql, nullptr, nullptr, err);
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() > deadline) return rc;
    sqlite3_free(*err);
    *err = nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool BeamCacheDb::available() { return true; }

BeamCacheDb::BeamCacheDb(const std::filesystem::path& file) : file_(file) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    warn(std::string("cannot open: ") + (db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return;
  }
  // Other processes may hold the database: wait for their write (up to 10 s) instead of failing at once. WAL lets
  // readers go on while one process writes; a killed writer's half transaction is rolled back by the next opener.
  sqlite3_busy_timeout(db, 10000);
  char* err = nullptr;
  if (exec_waiting(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", &err) != SQLITE_OK ||
      exec_waiting(db, kSchema, &err) != SQLITE_OK) {
    warn(err ? err : sqlite3_errmsg(db));  // e.g. "file is not a database"
    sqlite3_free(err);
    sqlite3_close(db);
    return;
  }
  db_ = db;
}

BeamCacheDb::~BeamCacheDb() { sqlite3_close(db_); }

std::optional<std::vector<Opt>> BeamCacheDb::get(const BeamCacheKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!db_) return std::nullopt;
  Statement st(db_, "SELECT ast, opts FROM beam_v1 WHERE device=?1 AND target=?2 AND ast_hash=?3 AND level=?4");
  if (!st.s) {
    warn(sqlite3_errmsg(db_));
    return std::nullopt;
  }
  st.bind(1, key.device);
  st.bind(2, key.target);
  st.bind(3, stable_hash(key.ast));
  st.bind(4, key.level);
  const int rc = sqlite3_step(st.s);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) {
    warn(sqlite3_errmsg(db_));
    return std::nullopt;
  }
  if (st.column(0) != key.ast) return std::nullopt;  // another AST with the same hash
  return parse_opts(st.column(1));
}

bool BeamCacheDb::put(const BeamCacheKey& key, const std::vector<Opt>& opts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!db_) return false;
  // One statement is one transaction: it lands whole or not at all.
  Statement st(db_,
               "INSERT OR REPLACE INTO beam_v1 (device, target, ast_hash, level, ast, opts) "
               "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!st.s) {
    warn(sqlite3_errmsg(db_));
    return false;
  }
  st.bind(1, key.device);
  st.bind(2, key.target);
  st.bind(3, stable_hash(key.ast));
  st.bind(4, key.level);
  st.bind(5, key.ast);
  st.bind(6, format_opts(opts));
  if (sqlite3_step(st.s) != SQLITE_DONE) {
    warn(sqlite3_errmsg(db_));
    return false;
  }
  return true;
}

#else  // built without SQLite: nothing is cached

bool BeamCacheDb::available() { return false; }
BeamCacheDb::BeamCacheDb(const std::filesystem::path& file) : file_(file) {}
BeamCacheDb::~BeamCacheDb() = default;
std::optional<std::vector<Opt>> BeamCacheDb::get(const BeamCacheKey&) { return std::nullopt; }
bool BeamCacheDb::put(const BeamCacheKey&, const std::vector<Opt>&) { return false; }

#endif

std::shared_ptr<BeamCacheDb> process_beam_cache() {
  static std::mutex mu;
  static std::shared_ptr<BeamCacheDb> db;
  std::lock_guard<std::mutex> lock(mu);
  if (CACHELEVEL <= 0) return nullptr;
  if (!BeamCacheDb::available()) {
    static bool said = false;
    if (DEBUG >= 1 && !said) std::fprintf(stderr, "BEAM: built without SQLite, search results are not cached\n");
    said = true;
    return nullptr;
  }
  const std::filesystem::path file = cache_dir() / "beam.db";
  if (!db || db->file() != file) db = std::make_shared<BeamCacheDb>(file);
  return db->ok() ? db : nullptr;
}

}  // namespace tg
