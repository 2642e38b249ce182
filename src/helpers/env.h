#pragma once
// Environment knobs, read the tinygrad way: getenv("DEBUG", 0), with tg::Context overrides on top.
#include <string>

namespace tg {

// Raw environment lookups (no Context overrides).
std::string getenv_str(const char* key, const std::string& dflt = "");
long getenv_int(const char* key, long dflt = 0);

}  // namespace tg
