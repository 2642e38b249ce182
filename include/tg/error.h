#pragma once
// tg::Error: the one exception type tinygrad.cpp throws for bad input or failed devices.
#include <stdexcept>
#include <string>

namespace tg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tg
