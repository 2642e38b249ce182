#pragma once
// A set of devices that one sharded or replicated value spans (Tensor::shard), spelled as tinygrad prints its
// device tuples but without quotes: "(CPU, CPU:1)". A plain device name is a set of one. The spelling is the DEVICE
// node's arg under a MULTI node (schedule/multi.h) and a sharded Tensor's device().
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

inline bool is_device_set(const std::string& device) { return !device.empty() && device.front() == '('; }
// "(CPU, CPU:1)" -> {"CPU", "CPU:1"}; "CPU" -> {"CPU"}. The names as written (runtime's canonical_device spells them).
std::vector<std::string> device_set_members(const std::string& device);
// {"CPU", "CPU:1"} -> "(CPU, CPU:1)"
std::string device_set_name(const std::vector<std::string>& devices);

// MULTI(DEVICE `devices`, parts...) with `axis` (-1: replicated): the one way a spread value is spelled (the multi
// pass, schedule/multi.h, lowers it to one graph per device).
UOpPtr multi_uop(const std::string& devices, int64_t axis, const std::vector<UOpPtr>& parts);

}  // namespace tg
