// For ctest entries that run the op suite on a device that may be absent (DEV=CUDA on a machine without a
// GPU): with TG_SKIP_UNLESS_DEVICE=1, the test binary exits with code 77 (ctest's SKIP_RETURN_CODE) and a
// message when DEV cannot be opened, instead of failing every test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/device.h"
#include "tg/error.h"

namespace {

class DeviceGate : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* gate = std::getenv("TG_SKIP_UNLESS_DEVICE");
    if (!gate || std::string(gate) != "1") return;
    try {
      tg::get_device(tg::default_device());
    } catch (const tg::Error& e) {
      std::fprintf(stderr, "skipped: device %s is not available here: %s\n",
                   std::getenv("DEV") ? std::getenv("DEV") : "(default)", e.what());
      std::exit(77);
    }
  }
};

const auto* const kGate = ::testing::AddGlobalTestEnvironment(new DeviceGate);

}  // namespace
