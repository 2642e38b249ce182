// helpers/env.h: list knobs (TC_TILE, GEMM_TILE) read with getenv_ints.
#include <gtest/gtest.h>

#include <cstdlib>

#include "helpers/env.h"
#include "tg/error.h"

TEST(Env, IntListKnobs) {
  const char* key = "TG_TEST_INT_LIST";
  ::unsetenv(key);
  EXPECT_EQ(tg::getenv_ints(key, {2, 8, 4}, 1, 64), (std::vector<long>{2, 8, 4})) << "unset: the defaults";
  ::setenv(key, "4,,16", 1);
  EXPECT_EQ(tg::getenv_ints(key, {2, 8, 4}, 1, 64), (std::vector<long>{4, 8, 16}))
      << "an empty entry keeps its default";
  ::setenv(key, "3", 1);
  EXPECT_EQ(tg::getenv_ints(key, {2, 8, 4}, 1, 64), (std::vector<long>{3, 8, 4}));
  for (const char* bad : {"1,2,3,4", "0", "65", "2,x", "2,8,4,"}) {
    ::setenv(key, bad, 1);
    try {
      tg::getenv_ints(key, {2, 8, 4}, 1, 64);
      ADD_FAILURE() << bad << " was taken";
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("TG_TEST_INT_LIST="), std::string::npos) << e.what();
    }
  }
  ::unsetenv(key);
}
