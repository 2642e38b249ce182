#pragma once
// Environment knobs, read the tinygrad way: getenv("DEBUG", 0), with tg::Context overrides on top.
#include <string>
#include <vector>

namespace tg {

// Raw environment lookups (no Context overrides).
std::string getenv_str(const char* key, const std::string& dflt = "");
long getenv_int(const char* key, long dflt = 0);
// A list of integers "a,b,c" (tuning knobs such as TC_TILE): each given entry replaces the default at its
// position, an empty one keeps it ("4,,2"). Throws tg::Error naming the knob when an entry is not an integer in
// [lo, hi] or there are more entries than defaults.
std::vector<long> getenv_ints(const char* key, std::vector<long> dflt, long lo, long hi);

}  // namespace tg
