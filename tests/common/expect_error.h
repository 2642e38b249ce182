#pragma once
// expect_error(f, part): f throws a tg::Error whose message contains `part` (a failure names what was expected).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tg/error.h"

namespace tgtest {

inline void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no tg::Error (expected one mentioning '" << part << "')";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace tgtest
