// BEAM's on-disk cache (engine/beam_cache.h) and how beam_opts uses it: a second lookup does not search,
// IGNORE_BEAM_CACHE does, stored opts that no longer apply are searched again, a corrupt file is no crash, and two
// writers at once lose nothing. The kernels run on the interpreter (nothing to compile), small, at BEAM=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../common/scoped_cache_dir.h"
#include "engine/beam.h"
#include "engine/beam_cache.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "tg/context.h"
#include "tg/tg.h"

using tg::Opt;
using tg::OptOps;
using tg::Tensor;

namespace {

namespace fs = std::filesystem;

using tgtest::ScopedCacheDir;

// A small reduce kernel's AST (the interpreter runs it in microseconds).
tg::UOpPtr reduce_ast(int64_t rows) {
  Tensor t = Tensor::empty({rows, 12}, {.device = "INTERP"}).sum(1);
  return tg::create_schedule({t.uop()}).items.back().ast;
}

bool applies(const tg::UOpPtr& ast, const std::vector<Opt>& opts) {
  tg::Kernel k(ast, tg::get_device("INTERP").renderer());
  try {
    k.apply_opts(opts);
    return true;
  } catch (const tg::Error&) {
    return false;
  }
}

}  // namespace

TEST(BeamCache, OptsTextRoundTripsAndRejectsGarbage) {
  const std::vector<Opt> opts{
      {OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 1, 0}, {OptOps::SWAP, 0, 2}, {OptOps::THREAD, 0, 2}};
  EXPECT_EQ(tg::format_opts(opts), "UPCAST 0 4;UNROLL 1 0;SWAP 0 2;THREAD 0 2");
  EXPECT_EQ(tg::parse_opts(tg::format_opts(opts)), opts);
  EXPECT_EQ(tg::parse_opts(""), std::vector<Opt>{});
  for (const char* bad : {"UPCAST 0", "FROB 0 4", "UPCAST 0 4 9", "UPCAST x 4", "UPCAST 0 -4", ";;"})
    EXPECT_FALSE(tg::parse_opts(bad).has_value()) << bad;
}

TEST(BeamCache, SecondLookupDoesNotSearchAndIgnoreCacheDoes) {
  if (!tg::BeamCacheDb::available()) GTEST_SKIP() << "built without SQLite: nothing is cached";
  ScopedCacheDir dir;
  const tg::UOpPtr ast = reduce_ast(5);
  const int64_t s0 = tg::beam_searches();
  const auto first = tg::beam_opts("INTERP", ast, 1);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(tg::beam_searches(), s0 + 1);
  EXPECT_TRUE(fs::exists(dir.db()));
  EXPECT_EQ(tg::beam_opts("INTERP", ast, 1), first);
  EXPECT_EQ(tg::beam_searches(), s0 + 1) << "the cached winner was not used";
  // another width is another entry
  tg::beam_opts("INTERP", ast, 2);
  EXPECT_EQ(tg::beam_searches(), s0 + 2);
  tg::Context ignore({{"IGNORE_BEAM_CACHE", 1}});
  tg::beam_opts("INTERP", ast, 1);
  EXPECT_EQ(tg::beam_searches(), s0 + 3) << "IGNORE_BEAM_CACHE=1 did not search";
}

TEST(BeamCache, CorruptFileFallsBackToSearching) {
  ScopedCacheDir dir;
  {
    std::ofstream out(dir.db(), std::ios::binary);
    for (int i = 0; i < 512; i++) out << "this is not an SQLite database ";
  }
  const tg::UOpPtr ast = reduce_ast(6);
  const int64_t s0 = tg::beam_searches();
  const auto opts = tg::beam_opts("INTERP", ast, 1);
  ASSERT_TRUE(opts.has_value());
  EXPECT_TRUE(applies(ast, *opts));
  const auto again = tg::beam_opts("INTERP", ast, 1);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(applies(ast, *again));
  EXPECT_EQ(tg::beam_searches(), s0 + 2) << "nothing can be cached in a corrupt file: each lookup searches";
  EXPECT_EQ(tg::process_beam_cache(), nullptr);
}

TEST(BeamCache, StoredOptsThatNoLongerApplyAreSearchedAgain) {
  if (!tg::BeamCacheDb::available()) GTEST_SKIP() << "built without SQLite: nothing is cached";
  ScopedCacheDir dir;
  const tg::UOpPtr ast = reduce_ast(7);
  tg::Device& dev = tg::get_device("INTERP");
  const tg::BeamCacheKey key = tg::beam_cache_key(dev, ast, 1);
  {
    tg::BeamCacheDb db(dir.db());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db.put(key, {{OptOps::UPCAST, 9, 3}}));  // no axis 9 in this kernel
  }
  const int64_t s0 = tg::beam_searches();
  const auto opts = tg::beam_opts("INTERP", ast, 1);
  EXPECT_EQ(tg::beam_searches(), s0 + 1);
  ASSERT_TRUE(opts.has_value());
  EXPECT_TRUE(applies(ast, *opts));
  tg::BeamCacheDb db(dir.db());
  EXPECT_EQ(db.get(key), opts) << "the new winner replaced the stale entry";
}

TEST(BeamCache, KeyMustMatchWhole) {
  if (!tg::BeamCacheDb::available()) GTEST_SKIP() << "built without SQLite: nothing is cached";
  ScopedCacheDir dir;
  tg::BeamCacheDb db(dir.db());
  ASSERT_TRUE(db.ok());
  const tg::BeamCacheKey key{"INTERP", "target", "SINK(...)", 2};
  ASSERT_TRUE(db.put(key, {{OptOps::UPCAST, 0, 4}}));
  EXPECT_TRUE(db.get(key).has_value());
  std::vector<tg::BeamCacheKey> others(4, key);
  others[0].device = "CPU";
  others[1].target = "other";
  others[2].ast = "SINK(..)";
  others[3].level = 1;
  for (size_t i = 0; i < others.size(); i++) EXPECT_FALSE(db.get(others[i]).has_value()) << "field " << i;
}

TEST(BeamCache, TwoWritersAtOnceLoseNothing) {
  if (!tg::BeamCacheDb::available()) GTEST_SKIP() << "built without SQLite: nothing is cached";
  ScopedCacheDir dir;
  constexpr int kPerWriter = 150;
  auto writer = [&](int id) {
    tg::BeamCacheDb db(dir.db());  // a connection of its own, as another process would have
    ASSERT_TRUE(db.ok());
    for (int i = 0; i < kPerWriter; i++)
      ASSERT_TRUE(db.put({"INTERP", "t", "ast " + std::to_string(id) + " " + std::to_string(i), 1},
                         {{OptOps::UPCAST, id, i + 1}}));
  };
  std::thread a(writer, 0), b(writer, 1);
  a.join();
  b.join();
  tg::BeamCacheDb reader(dir.db());
  for (int id = 0; id < 2; id++)
    for (int i = 0; i < kPerWriter; i++) {
      const auto got = reader.get({"INTERP", "t", "ast " + std::to_string(id) + " " + std::to_string(i), 1});
      ASSERT_TRUE(got.has_value()) << id << " " << i;
      EXPECT_EQ(*got, (std::vector<Opt>{{OptOps::UPCAST, id, i + 1}}));
    }
}

// The key's AST text must be the same in another process: it may not carry buffer ids, addresses or counters. Two
// schedules of the same op over different buffers (ids that differ, as another process's would) give one text.
TEST(BeamCache, AstTextDoesNotDependOnTheBuffers) {
  const tg::UOpPtr a = reduce_ast(9);
  Tensor other = Tensor::empty({100}, {.device = "INTERP"});  // moves the buffer counter on
  const tg::UOpPtr b = reduce_ast(9);
  const tg::BeamCacheKey ka = tg::beam_cache_key(tg::get_device("INTERP"), a, 2);
  const tg::BeamCacheKey kb = tg::beam_cache_key(tg::get_device("INTERP"), b, 2);
  EXPECT_EQ(ka.ast, kb.ast);
  EXPECT_EQ(ka.target, kb.target);
  EXPECT_EQ(ka.ast.find("0x"), std::string::npos) << "an address in the key: " << ka.ast;
}
