// Environment lookups and the ContextVar / Context knobs.
#include "helpers/env.h"

#include <cstdlib>
#include <map>

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

namespace {
std::map<std::string, ContextVar*>& registry() {
  static std::map<std::string, ContextVar*> r;
  return r;
}
}  // namespace

ContextVar::ContextVar(const char* key, long dflt) : key_(key), value_(getenv_int(key, dflt)) { registry()[key] = this; }

ContextVar* ContextVar::find(const std::string& key) {
  auto it = registry().find(key);
  return it == registry().end() ? nullptr : it->second;
}

ContextVar DEBUG("DEBUG", 0), NOOPT("NOOPT", 0), BEAM("BEAM", 0), CACHELEVEL("CACHELEVEL", 2), JIT("JIT", 1),
    TRAINING("TRAINING", 0);

Context::Context(std::initializer_list<std::pair<std::string, long>> overrides) {
  for (auto& [k, v] : overrides) {
    ContextVar* cv = ContextVar::find(k);
    if (!cv) {
      for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) it->first->set(it->second);
      throw Error("Context: unknown knob '" + k + "' (expected DEBUG, NOOPT, BEAM, CACHELEVEL, JIT or TRAINING)");
    }
    saved_.emplace_back(cv, cv->value());
    cv->set(v);
  }
}

Context::~Context() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) it->first->set(it->second);
}

}  // namespace tg
