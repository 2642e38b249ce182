#include "uop/device_set.h"

namespace tg {

std::vector<std::string> device_set_members(const std::string& device) {
  if (!is_device_set(device)) return {device};
  std::string inner =
      device.substr(1, device.size() >= 2 && device.back() == ')' ? device.size() - 2 : std::string::npos);
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(" \t'\""), e = cur.find_last_not_of(" \t'\"");
    out.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
    cur.clear();
  };
  for (char c : inner) {
    if (c == ',')
      flush();
    else
      cur += c;
  }
  if (cur.find_first_not_of(" \t") != std::string::npos || out.empty()) flush();  // ("CPU",) ends with a comma
  return out;
}

std::string device_set_name(const std::vector<std::string>& devices) {
  std::string s = "(";
  for (size_t i = 0; i < devices.size(); i++) s += (i ? ", " : "") + devices[i];
  return s + ")";
}

}  // namespace tg
