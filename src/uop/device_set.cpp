#include "uop/device_set.h"

#include "tg/error.h"

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

UOpPtr multi_uop(const std::string& devices, int64_t axis, const std::vector<UOpPtr>& parts) {
  if (parts.empty()) throw Error("MULTI over " + devices + ": no parts");
  std::vector<UOpPtr> src{UOp::make(Ops::DEVICE, dtypes::void_, {}, devices)};
  src.insert(src.end(), parts.begin(), parts.end());
  return UOp::make(Ops::MULTI, parts[0]->dtype, std::move(src), axis);
}

}  // namespace tg
