// Bulk tensor copies (TMA, codegen/staging_tma.cpp, renderer/tensor_map.h): which Hopper matmuls stage their
// operands with them, the CUDA source, the interpreter's emulation of the copies and their barriers, and the
// values. The value test runs on the default device; the op suite runs it again on the interpreter emulating CUDA
// (where these matmuls take TMA) and, with `ctest -L cuda`, on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "../common/kernel_source.h"
#include "../common/random_data.h"
#include "codegen/opt/heuristic.h"
#include "codegen/program.h"
#include "codegen/verify_program.h"
#include "renderer/cuda.h"
#include "renderer/tensor_map.h"
#include "runtime/interpreter.h"
#include "tg/context.h"
#include "tg/error.h"
#include "tg/tg.h"

using tg::Tensor;
using tgtest::has;
using tgtest::last_ast;
using tgtest::render;
using tgtest::small_ints;
namespace dt = tg::dtypes;

namespace {

struct TileKnob {  // TC_TILE is read from the environment
  explicit TileKnob(const char* v) { *v ? ::setenv("TC_TILE", v, 1) : ::unsetenv("TC_TILE"); }
  ~TileKnob() { ::unsetenv("TC_TILE"); }
};

std::string hopper_source(const Tensor& out) {
  tg::CUDARenderer cuda("sm_90");
  tg::Kernel k(last_ast(out), cuda);
  hand_coded_optimizations(k);
  return render(k, cuda);
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) n++;
  return n;
}

}  // namespace

// K steps of 64 give both operands the 128-byte swizzle: thread 0 copies each stage with bulk tensor copies
// through two tensor maps (kernel parameters), a barrier per stage counts the bytes, every thread waits on it.
TEST(TmaCopies, HopperMatmulsCopyStagesWithTma) {
  tg::Context on({{"WGMMA", 1}, {"TMA", 1}});
  TileKnob knob("1,32,8,1,4");  // 128 x 256 blocks: 4 stages, wgmmas deferred, copies two steps ahead
  Tensor x = Tensor::empty({256, 512}, {.dtype = dt::float16});
  for (bool transposed_w : {false, true}) {
    Tensor w = transposed_w ? Tensor::empty({512, 512}, {.dtype = dt::float16}).T() : Tensor::empty({512, 512}, {.dtype = dt::float16});
    const std::string src = hopper_source(x.matmul(w));
    EXPECT_TRUE(has(src, "const __grid_constant__ tg_tensor_map tmap0, const __grid_constant__ tg_tensor_map tmap1)"))
        << src;
    EXPECT_TRUE(has(src, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes")) << src;
    EXPECT_TRUE(has(src, "mbarrier.try_wait.parity.shared::cta.b64")) << src;
    EXPECT_FALSE(has(src, "cp.async.cg")) << "no per-thread copies: " << src;
    EXPECT_FALSE(has(src, "fence.proxy.async")) << "TMA writes through the async proxy, as wgmma reads: " << src;
    EXPECT_EQ(count(src, "mbarrier.init.shared::cta.b64"), 4u) << "a barrier per stage: " << src;
    // steps 0 and 1 before the loop, one step in it; A (128 rows) is one box, B one box of 256 rows (x @ w.T)
    // or four of 64 columns (x @ w, N-major: an atom per 64 columns)
    EXPECT_EQ(count(src, "mbarrier.arrive.expect_tx"), 3u) << src;
    EXPECT_EQ(count(src, "cp.async.bulk.tensor"), transposed_w ? 6u : 15u) << src;
    EXPECT_TRUE(has(src, "_, [%0], 49152;")) << "16 KiB of A and 32 KiB of B a stage: " << src;
    tg::Context off({{"TMA", 0}});
    const std::string plain = hopper_source(x.matmul(w));
    EXPECT_TRUE(has(plain, "cp.async.cg") && !has(plain, "cp.async.bulk") && !has(plain, "tg_tensor_map")) << plain;
  }
  // x.T @ w (a weight gradient's layout): A M-major, swizzled too, each warpgroup's 64 rows an atom of their own
  // (the warpgroups a thread dim outside the warps'): two boxes of A and four of B a step
  const std::string xt = hopper_source(Tensor::empty({512, 256}, {.dtype = dt::float16}).T().matmul(
      Tensor::empty({512, 512}, {.dtype = dt::float16})));
  EXPECT_TRUE(has(xt, ", p, 1, 1, 1, 1;")) << "both operands MN-major: " << xt;
  EXPECT_EQ(count(xt, "cp.async.bulk.tensor"), 18u) << xt;
  EXPECT_FALSE(has(xt, "cp.async.cg")) << xt;
}

// What keeps per-thread copies: K steps of 32 (no 128-byte swizzle), a padded operand (a mask), Ampere.
TEST(TmaCopies, OtherKernelsKeepPerThreadCopies) {
  tg::Context on({{"WGMMA", 1}, {"TMA", 1}});
  Tensor x = Tensor::empty({128, 64}, {.dtype = dt::float16}), w = Tensor::empty({64, 128}, {.dtype = dt::float16});
  {
    TileKnob knob("1,16,8,1,2");
    const std::string src = hopper_source(x.matmul(w));
    EXPECT_TRUE(has(src, "wgmma.mma_async") && has(src, "cp.async.cg") && !has(src, "cp.async.bulk")) << src;
  }
  const std::string padded = hopper_source(x.pad({{0, 0}, {0, 64}}).matmul(Tensor::empty({128, 128}, {.dtype = dt::float16})));
  EXPECT_FALSE(has(padded, "cp.async.bulk")) << padded;
  tg::CUDARenderer ampere("sm_80");
  EXPECT_FALSE(ampere.tma());
}

// Values of matmuls that take TMA on Hopper (row- and column-major operands, bfloat16, a batch, 128 x 256 tiles
// with four boxes of B), exact: small integers.
TEST(TmaCopies, MatmulValues) {
  tg::Context on({{"WGMMA", 1}, {"TMA", 1}});
  struct Case {
    int64_t batch, m, k, n;
    bool ta, tb;
    tg::DType dtype;
    const char* tile;
  };
  for (Case c : {Case{1, 128, 128, 128, false, false, dt::float16, ""}, Case{1, 128, 192, 64, false, true, dt::bfloat16, ""},
                 Case{2, 64, 128, 128, false, true, dt::float16, ""}, Case{1, 128, 256, 256, false, false, dt::float16, "1,32,8,1,4"},
                 Case{1, 128, 128, 128, true, false, dt::float16, ""}}) {
    TileKnob knob(c.tile);
    std::vector<float> av = small_ints(size_t(c.batch * c.m * c.k), 30), bv = small_ints(size_t(c.batch * c.k * c.n), 31);
    Tensor a = Tensor(av, {c.batch, c.m, c.k}), b = Tensor(bv, {c.batch, c.k, c.n});
    if (c.ta) a = a.transpose(1, 2).contiguous().transpose(1, 2);
    if (c.tb) b = b.transpose(1, 2).contiguous().transpose(1, 2);
    std::vector<float> got = a.cast(c.dtype).matmul(b.cast(c.dtype)).cast(dt::float32).tolist<float>();
    const std::string what = std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.k) + "x" +
                             std::to_string(c.n) + (c.ta ? " A col-major" : "") + (c.tb ? " B col-major" : "");
    ASSERT_EQ(got.size(), size_t(c.batch * c.m * c.n)) << what;
    for (int64_t z = 0; z < c.batch; z++)
      for (int64_t i = 0; i < c.m; i++)
        for (int64_t j = 0; j < c.n; j++) {
          double want = 0;
          for (int64_t l = 0; l < c.k; l++)
            want += double(av[size_t((z * c.m + i) * c.k + l)]) * bv[size_t((z * c.k + l) * c.n + j)];
          if (c.dtype == dt::bfloat16) want = double(tg::Tensor(std::vector<float>{float(want)}, {1}).cast(dt::bfloat16).cast(dt::float32).item<float>());
          ASSERT_EQ(got[size_t((z * c.m + i) * c.n + j)], want) << what << " at " << z << "," << i << "," << j;
        }
  }
}

namespace tg {
namespace {

// A one-thread program that copies a 4 x 32 box of int32 (rows past the matrix's 3 read as zeros) to shared
// memory through a tensor map, waits on its barrier, and writes shared memory out as it lies (swizzled).
struct TmaProgram {
  UOpPtr out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::int32.pointer(), {}, int64_t(0));
  UOpPtr in = UOp::make(Ops::DEFINE_GLOBAL, dtypes::int32.pointer(), {}, int64_t(1));
  UOpPtr tile = UOp::make(Ops::DEFINE_LOCAL, dtypes::int32.pointer(true), {}, NamedRange{"tile", 0, 127});
  UOpPtr bars = UOp::make(Ops::DEFINE_LOCAL, dtypes::uint64.pointer(true), {}, NamedRange{"bar", 0, 0});
  UOpPtr map = UOp::make(Ops::TENSOR_MAP, in->dtype, {in}, TensorMapArg{0, 4, 32, 3, 4}.pack());
  UOpPtr zero = UOp::const_int(0, dtypes::int32), one = UOp::const_int(1, dtypes::int32);
  UOpPtr yes = UOp::const_(dtypes::bool_, 1);

  // expect: announce the box's bytes; parity: the phase the wait waits for; init: set the barrier up
  ProgramSpec spec(bool expect, int64_t parity, bool init = true) const {
    std::vector<UOpPtr> u{out, in, tile, bars, map, zero, one, yes};
    UOpPtr last = yes;
    auto add = [&](const UOpPtr& x) {  // (nodes are interned: a constant is listed once)
      if (std::find(u.begin(), u.end(), x) == u.end()) u.push_back(x);
      return x;
    };
    if (init) last = add(UOp::make(Ops::MBAR_INIT, dtypes::void_, {bars, zero, yes}, int64_t(1)));
    if (expect) last = add(UOp::make(Ops::MBAR_EXPECT, dtypes::void_, {bars, zero, yes, last}, int64_t(512)));
    last = add(UOp::make(Ops::TMA_LOAD, dtypes::void_, {tile, zero, map, zero, zero, bars, zero, yes, last}));
    UOpPtr p = add(UOp::const_int(parity, dtypes::int32));
    add(UOp::make(Ops::MBAR_WAIT, dtypes::void_, {bars, zero, p, last}));
    UOpPtr n = add(UOp::const_int(128, dtypes::int32));
    UOpPtr r = add(UOp::make(Ops::RANGE, dtypes::int32, {zero, n}, int64_t(0)));
    UOpPtr v = add(UOp::make(Ops::LOAD, dtypes::int32, {tile, r}));
    add(UOp::make(Ops::STORE, dtypes::void_, {out, r, v}));
    add(UOp::make(Ops::ENDRANGE, dtypes::void_, {r}));
    ProgramSpec s;
    s.name = "tma_box";
    s.uops = std::move(u);
    s.n_bufs = 2;
    return s;
  }
};

std::string run_error(const ProgramSpec& spec, std::vector<int32_t>& out, std::vector<int32_t>& in) {
  try {
    Interpreter(spec).run({{out.data(), out.size() * 4}, {in.data(), in.size() * 4}}, {});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The box lands swizzled (each 16-byte chunk of a 128-byte row XORed with the row mod 8), zeros past the matrix.
TEST(TmaCopies, InterpreterCopiesTheBoxSwizzled) {
  TmaProgram p;
  std::vector<int32_t> in(96), out(128, -1);
  for (size_t i = 0; i < in.size(); i++) in[i] = int32_t(i) + 1;
  ASSERT_EQ(run_error(p.spec(true, 0), out, in), "");
  const TensorMapArg arg{0, 4, 32, 3, 4};
  for (int64_t r = 0; r < 4; r++)
    for (int64_t c = 0; c < 32; c++) {
      const int64_t at = arg.landing(0, r, c);
      EXPECT_EQ(at, (r * 32 + c) ^ (4 * r)) << r << "," << c;
      EXPECT_EQ(out[size_t(at)], r < 3 ? in[size_t(r * 32 + c)] : 0) << r << "," << c;
    }
}

// Waits the copies never complete are errors, not hangs: bytes nobody announced, the next phase, no MBAR_INIT.
TEST(TmaCopies, InterpreterChecksTheBarriers) {
  TmaProgram p;
  std::vector<int32_t> in(96, 1), out(128);
  EXPECT_TRUE(has(run_error(p.spec(false, 0), out, in), "waits for phase 0 of barrier 0 (1 arrivals and -512 bytes missing)"))
      << run_error(p.spec(false, 0), out, in);
  EXPECT_TRUE(has(run_error(p.spec(true, 1), out, in), "waits for phase 1 of barrier 0"));
  EXPECT_TRUE(has(run_error(p.spec(true, 0, false), out, in), "before an MBAR_INIT"));
}

TEST(TmaCopies, VerifierChecksTheNodes) {
  TmaProgram p;
  ProgramSpec ok = p.spec(true, 0);
  EXPECT_NO_THROW(verify_program(ok));
  auto error_of = [](const ProgramSpec& s) {
    try {
      verify_program(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto replaced = [&](Ops op, const UOpPtr& with) {
    ProgramSpec s = ok;
    for (auto& u : s.uops)
      if (u->op == op) u = with;
    return s;
  };
  // a copy straight from the buffer
  UOpPtr direct = UOp::make(Ops::TMA_LOAD, dtypes::void_, {p.tile, p.zero, p.in, p.zero, p.zero, p.bars, p.zero, p.yes});
  EXPECT_TRUE(has(error_of(replaced(Ops::TMA_LOAD, direct)), "must copy through a TENSOR_MAP"));
  // barriers in a float buffer
  UOpPtr fbars = UOp::make(Ops::DEFINE_LOCAL, dtypes::float32.pointer(true), {}, NamedRange{"fb", 0, 0});
  ProgramSpec s = ok;
  s.uops.insert(s.uops.begin() + 4, fbars);
  for (auto& u : s.uops)
    if (u->op == Ops::MBAR_INIT) u = UOp::make(Ops::MBAR_INIT, dtypes::void_, {fbars, p.zero, p.yes}, int64_t(1));
  EXPECT_TRUE(has(error_of(s), "barriers in a DEFINE_LOCAL of uint64"));
  // tensor maps are kernel parameters numbered 0 .. n-1
  TmaProgram numbered1;
  numbered1.map = UOp::make(Ops::TENSOR_MAP, p.in->dtype, {p.in}, TensorMapArg{1, 4, 32, 3, 4}.pack());
  EXPECT_TRUE(has(error_of(numbered1.spec(true, 0)), "has no tensor map numbered 0")) << error_of(numbered1.spec(true, 0));
  // a map whose rows are not whole 128-byte box rows
  EXPECT_THROW(TensorMapArg::unpack({0, 4, 48, 3, 4}), Error);
  EXPECT_THROW(TensorMapArg::unpack({0, 2, 64, 3, 257}), Error);
}

}  // namespace tg
