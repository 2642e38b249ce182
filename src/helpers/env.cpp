// Environment lookups and the ContextVar / Context knobs.
#include "helpers/env.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "tg/context.h"
#include "tg/error.h"

namespace tg {

std::string getenv_str(const char* key, const std::string& dflt) {
  const char* v = std::getenv(key);
  return v ? std::string(v) : dflt;
}

long getenv_int(const char* key, long dflt) {
  const char* v = std::getenv(key);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  long r = std::strtol(v, &end, 10);
  return (end && *end == 0) ? r : dflt;
}

std::vector<long> getenv_ints(const char* key, std::vector<long> dflt, long lo, long hi) {
  const std::string s = getenv_str(key);
  if (s.empty()) return dflt;
  auto bad = [&] {
    return Error(std::string(key) + "=" + s + ": expected up to " + std::to_string(dflt.size()) +
                 " comma-separated integers in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  size_t pos = 0;
  for (size_t i = 0;; i++) {
    const size_t end = s.find(',', pos);
    const std::string part = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (i >= dflt.size()) throw bad();
    if (!part.empty()) {
      char* rest = nullptr;
      const long x = std::strtol(part.c_str(), &rest, 10);
      if (*rest != '\0' || x < lo || x > hi) throw bad();
      dflt[i] = x;
    }
    if (end == std::string::npos) return dflt;
    pos = end + 1;
  }
}

namespace {

// Knobs are registered during static initialization, possibly from several libraries' initializers.
struct Registry {
  std::mutex mu;
  std::map<std::string, ContextVar*> by_key;
  size_t count = 0;
};
Registry& registry() {
  static Registry r;
  return r;
}

// This thread's values: slot i holds knob i's value when this thread set it. Plain thread-local data, so
// reading a knob takes no lock.
struct ThreadValues {
  std::vector<long> value;
  std::vector<char> set;
};
ThreadValues& thread_values() {
  thread_local ThreadValues v;
  return v;
}

}  // namespace

ContextVar::ContextVar(const char* key, long dflt) : key_(key), default_(getenv_int(key, dflt)) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  id_ = r.count++;
  r.by_key[key] = this;
}

long ContextVar::value() const {
  const ThreadValues& t = thread_values();
  return id_ < t.set.size() && t.set[id_] ? t.value[id_] : default_;
}

void ContextVar::set(long v) {
  ThreadValues& t = thread_values();
  if (id_ >= t.set.size()) {
    t.set.resize(id_ + 1, 0);
    t.value.resize(id_ + 1, 0);
  }
  t.value[id_] = v;
  t.set[id_] = 1;
}

ContextVar* ContextVar::find(const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_key.find(key);
  return it == r.by_key.end() ? nullptr : it->second;
}

ContextVar DEBUG("DEBUG", 0), NOOPT("NOOPT", 0), BEAM("BEAM", 0), CACHELEVEL("CACHELEVEL", 2), JIT("JIT", 1),
    TRAINING("TRAINING", 0), BEAM_DEBUG("BEAM_DEBUG", 0), IGNORE_BEAM_CACHE("IGNORE_BEAM_CACHE", 0),
    JITBEAM("JITBEAM", 0);

Context::Context(std::initializer_list<std::pair<std::string, long>> overrides) {
  for (auto& [k, v] : overrides) {
    ContextVar* cv = ContextVar::find(k);
    if (!cv) {
      for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) it->first->set(it->second);
      throw Error("Context: unknown knob '" + k + "' (expected DEBUG, NOOPT, BEAM, BEAM_DEBUG, IGNORE_BEAM_CACHE, JITBEAM, CACHELEVEL, JIT, TRAINING or another registered knob)");
    }
    saved_.emplace_back(cv, cv->value());
    cv->set(v);
  }
}

Context::~Context() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) it->first->set(it->second);
}

}  // namespace tg
