// Quoting the source lines a compiler's log names (see source_lines.h).
#include "runtime/source_lines.h"

#include <regex>
#include <set>
#include <sstream>
#include <vector>

namespace tg {

std::string quote_source_lines(const std::string& log, const std::string& src, const std::string& file) {
  std::vector<std::string> lines;
  std::istringstream in(src);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  std::set<int> shown;
  const std::regex where(std::regex_replace(file, std::regex(R"([.])"), R"(\.)") + R"(:(\d+):)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), where); it != std::sregex_iterator(); ++it) {
    const int n = std::stoi((*it)[1]);
    if (n >= 1 && n <= int(lines.size()) && shown.insert(n).second && shown.size() <= 10)
      out += "\n  " + std::to_string(n) + " | " + lines[size_t(n - 1)];
  }
  if (shown.empty() && lines.size() <= 40) out += "\nsource:\n" + src;
  return out;
}

}  // namespace tg
