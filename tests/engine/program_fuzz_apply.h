#pragma once
// One program_fuzz::Node as tensor ops (apply) and as the C++ line that does the same (describe_node).
#include <string>
#include <vector>

#include "program_fuzz.h"

namespace program_fuzz {

std::string fmt(const tg::Shape& s);
// Node n on `device`, its sources taken from `built` (the tensors of the earlier nodes).
tg::Tensor apply(const Node& n, const std::vector<tg::Tensor>& built, const std::string& device);
std::string describe_node(const Node& n, int index);

}  // namespace program_fuzz
