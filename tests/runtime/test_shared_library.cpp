// SharedLibrary (runtime/shared_library.h), the loader behind every dlopen'd runtime: candidates in order, the
// reasons of each that failed, entry points bound by name, an acceptance check that moves on to the next name.
#include <gtest/gtest.h>

#include <string>

#include "runtime/shared_library.h"

namespace {

using tg::SharedLibrary;

// zlib: libtg links it, so its soname opens on every machine the tests run on.
const char* kZlib = "libz.so.1";

TEST(SharedLibrary, OpensTheFirstCandidateThatLoads) {
  std::string why;
  auto lib = SharedLibrary::open({"libtg-does-not-exist.so.7", kZlib}, &why);
  ASSERT_TRUE(lib) << why;
  EXPECT_EQ(lib->name(), kZlib);
  EXPECT_NE(lib->symbol("zlibVersion"), nullptr);
  EXPECT_EQ(lib->symbol("tg_no_such_symbol"), nullptr);
}

TEST(SharedLibrary, NamesEveryCandidateThatFailed) {
  std::string why;
  auto lib = SharedLibrary::open({"libtg-missing-a.so", "libtg-missing-b.so.2"}, &why);
  EXPECT_FALSE(lib);
  EXPECT_NE(why.find("libtg-missing-a.so"), std::string::npos) << why;
  EXPECT_NE(why.find("libtg-missing-b.so.2"), std::string::npos) << why;
  EXPECT_EQ(why.find("libtg-missing-a.so: libtg-missing-a.so"), std::string::npos) << "each name once: " << why;
  EXPECT_FALSE(SharedLibrary::open({}, &why));
  EXPECT_FALSE(why.empty());
}

TEST(SharedLibrary, BindsVersionedNamesFirstAndNamesTheFirstMissing) {
  std::string why;
  auto lib = SharedLibrary::open({kZlib}, &why);
  ASSERT_TRUE(lib) << why;
  const char* (*version)() = nullptr;
  std::string missing;
  EXPECT_TRUE(lib->bind(version, {"zlibVersion_v9", "zlibVersion"}, &missing));
  ASSERT_NE(version, nullptr);
  EXPECT_FALSE(std::string(version()).empty());
  EXPECT_TRUE(missing.empty());
  int (*absent)() = nullptr, (*also_absent)() = nullptr;
  EXPECT_FALSE(lib->bind(absent, {"tg_absent_v2", "tg_absent"}, &missing));
  EXPECT_EQ(absent, nullptr);
  EXPECT_EQ(missing, "tg_absent_v2");
  EXPECT_FALSE(lib->bind(also_absent, "tg_also_absent", &missing));
  EXPECT_EQ(missing, "tg_absent_v2") << "the first entry point missing stays named";
}

TEST(SharedLibrary, AcceptCheckMovesOnToTheNextName) {
  std::string why;
  int asked = 0;
  auto refuse_first = [&](const SharedLibrary& lib, std::string* reason) {
    if (asked++ > 0) return true;
    *reason = "is not the version wanted";
    return lib.symbol("zlibVersion") == nullptr;
  };
  auto lib = SharedLibrary::open({kZlib, kZlib}, &why, refuse_first);
  ASSERT_TRUE(lib) << why;
  EXPECT_EQ(asked, 2);
  auto none = SharedLibrary::open({kZlib}, &why, [](const SharedLibrary&, std::string* reason) {
    *reason = "is LLVM 99";
    return false;
  });
  EXPECT_FALSE(none);
  EXPECT_NE(why.find(std::string(kZlib) + ": is LLVM 99"), std::string::npos) << why;
}

}  // namespace
