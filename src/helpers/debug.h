#pragma once
// DEBUG output helpers: terminal colors (only when stdout is a terminal) and their visible width.
#include <string>

namespace tg {

bool use_color();
std::string colored(const std::string& s, const char* color);  // "red", "green", "blue", "magenta", "yellow", ...
std::string strip_ansi(const std::string& s);
size_t ansilen(const std::string& s);

}  // namespace tg
