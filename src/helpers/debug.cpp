// Terminal colors for DEBUG output.
#include "helpers/debug.h"

#include <unistd.h>

#include <cstring>

namespace tg {

bool use_color() {
  static const bool tty = isatty(1) != 0;
  return tty;
}

std::string colored(const std::string& s, const char* color) {
  if (!use_color() || !color) return s;
  static const char* names[] = {"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"};
  for (int i = 0; i < 8; i++)
    if (std::strcmp(color, names[i]) == 0) return "\033[" + std::to_string(90 + i) + "m" + s + "\033[0m";
  return s;
}

std::string strip_ansi(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\033') {
      while (i < s.size() && s[i] != 'm') i++;
      continue;
    }
    out += s[i];
  }
  return out;
}

size_t ansilen(const std::string& s) { return strip_ansi(s).size(); }

}  // namespace tg
