// The UOp interpreter, fed linearized kernels built by hand (the format of codegen/program.h) and run on
// raw host memory, and the INTERP device (allocator, listing renderer, programs) through get_device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "renderer/cuda.h"
#include "runtime/device.h"
#include "runtime/interpreter.h"
#include "schedule/schedule.h"
#include "tg/tg.h"
#include "tg/error.h"

namespace tg {
namespace {

// Builds a kernel node by node, in execution order.
struct K {
  std::vector<UOpPtr> uops;
  std::vector<UOpPtr> vars;

  // Nodes are interned, so building a constant twice gives the same node: list it once, like a linearizer.
  UOpPtr add(UOpPtr u) {
    if (std::find(uops.begin(), uops.end(), u) == uops.end()) uops.push_back(u);
    return u;
  }
  UOpPtr global(DType t, int64_t n) { return add(UOp::make(Ops::DEFINE_GLOBAL, t.pointer(), {}, n)); }
  UOpPtr c(int64_t v, DType t = dtypes::int32) { return add(UOp::const_int(v, t)); }
  UOpPtr cf(double v, DType t = dtypes::float32) { return add(UOp::const_(t, v)); }
  UOpPtr range(UOpPtr s, UOpPtr e, int64_t id) { return add(UOp::make(Ops::RANGE, dtypes::int32, {s, e}, id)); }
  UOpPtr end(UOpPtr r) { return add(UOp::make(Ops::ENDRANGE, dtypes::void_, {r})); }
  UOpPtr load(UOpPtr buf, UOpPtr idx) { return add(UOp::make(Ops::LOAD, buf->dtype.scalar_type(), {buf, idx})); }
  UOpPtr load(UOpPtr buf, UOpPtr idx, UOpPtr gate, UOpPtr alt) {
    return add(UOp::make(Ops::LOAD, buf->dtype.scalar_type(), {buf, idx, gate, alt}));
  }
  UOpPtr store(UOpPtr buf, UOpPtr idx, UOpPtr v) { return add(UOp::make(Ops::STORE, dtypes::void_, {buf, idx, v})); }
  UOpPtr alu(Ops op, std::vector<UOpPtr> src) { return add(UOp::alu(op, std::move(src))); }
  UOpPtr cast(UOpPtr x, DType t) { return add(UOp::make(Ops::CAST, t, {x})); }
  UOpPtr acc(UOpPtr init, int64_t id) { return add(UOp::make(Ops::DEFINE_ACC, init->dtype, {init}, id)); }
  UOpPtr assign(UOpPtr acc, UOpPtr v) { return add(UOp::make(Ops::ASSIGN, acc->dtype, {acc, v})); }
  // "gidx0", "lidx1", "idx0", "core_id": tinygrad's spelling of the typed launch axes
  UOpPtr special(const std::string& name, int64_t size) {
    LaunchAxis axis = name == "core_id"               ? LaunchAxis::CORE
                      : name.rfind("gidx", 0) == 0    ? LaunchAxis::GROUP
                      : name.rfind("lidx", 0) == 0    ? LaunchAxis::LOCAL
                                                      : LaunchAxis::GLOBAL;
    int dim = axis == LaunchAxis::CORE ? 0 : name.back() - '0';
    return add(UOp::make(Ops::SPECIAL, dtypes::int32, {}, SpecialArg{axis, dim, size}));
  }
  UOpPtr var(const std::string& name, int64_t lo, int64_t hi) {
    UOpPtr v = add(UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{name, lo, hi}));
    vars.push_back(v);
    return v;
  }

  ProgramSpec spec(const std::string& name, std::vector<int64_t> global = {1, 1, 1},
                   std::vector<int64_t> local = {1, 1, 1}) const {
    ProgramSpec s;
    s.name = name;
    s.uops = uops;
    s.vars = vars;
    s.global_size = std::move(global);
    s.local_size = std::move(local);
    for (auto& u : uops) s.n_bufs += u->op == Ops::DEFINE_GLOBAL;
    return s;
  }
};

template <class T>
InterpBuffer view(std::vector<T>& v) {
  return InterpBuffer{v.data(), v.size() * sizeof(T)};
}

// Runs and returns the tg::Error message ("" when nothing was thrown).
std::string run_error(const ProgramSpec& spec, const std::vector<InterpBuffer>& bufs,
                      const std::vector<int64_t>& vars = {}) {
  try {
    Interpreter(spec).run(bufs, vars);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string load_error(const ProgramSpec& spec) {
  try {
    Interpreter in(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// out[i] = a[i] + b[i] for i in 0..16, float32.
TEST(InterpBasic, ElementwiseAddFloat32) {
  K k;
  auto out = k.global(dtypes::float32, 0), a = k.global(dtypes::float32, 1), b = k.global(dtypes::float32, 2);
  auto r = k.range(k.c(0), k.c(16), 0);
  k.store(out, r, k.alu(Ops::ADD, {k.load(a, r), k.load(b, r)}));
  k.end(r);
  std::vector<float> va(16), vb(16), vo(16, -1.f);
  for (int i = 0; i < 16; i++) va[i] = 0.5f * float(i), vb[i] = 100.f - float(i) * 3.25f;
  Interpreter(k.spec("E_16")).run({view(vo), view(va), view(vb)}, {});
  for (int i = 0; i < 16; i++) EXPECT_EQ(vo[i], va[i] + vb[i]) << i;
}

// r_2: {1,2} . {3,4} = 11 with an int32 accumulator.
TEST(InterpBasic, DotProductWithAccumulator) {
  K k;
  auto out = k.global(dtypes::int32, 0), a = k.global(dtypes::int32, 1), b = k.global(dtypes::int32, 2);
  auto zero = k.c(0);
  auto acc = k.acc(zero, 0);
  auto r = k.range(zero, k.c(2), 0);
  auto sum = k.alu(Ops::ADD, {acc, k.alu(Ops::MUL, {k.load(a, r), k.load(b, r)})});
  auto asg = k.assign(acc, sum);
  k.end(r);
  k.store(out, zero, asg);
  std::vector<int32_t> va{1, 2}, vb{3, 4}, vo{0};
  Interpreter interp(k.spec("r_2"));
  interp.run({view(vo), view(va), view(vb)}, {});
  EXPECT_EQ(vo[0], 11);
  // DEFINE_ACC resets each time control reaches it: a second run gives the same result, not 22.
  interp.run({view(vo), view(va), view(vb)}, {});
  EXPECT_EQ(vo[0], 11);
  EXPECT_EQ(interp.name(), "r_2");
}

// C = A @ B for 4x4 float32, with the accumulator declared inside the j loop so it resets per element.
TEST(InterpBasic, NestedLoopsMatmul) {
  constexpr int n = 4;
  K k;
  auto c = k.global(dtypes::float32, 0), a = k.global(dtypes::float32, 1), b = k.global(dtypes::float32, 2);
  auto zero = k.c(0), four = k.c(n);
  auto fzero = k.cf(0.0);
  auto i = k.range(zero, four, 0);
  auto row = k.alu(Ops::MUL, {i, four});  // placed in the i loop, where a linearizer would put it
  auto j = k.range(zero, four, 1);
  auto acc = k.acc(fzero, 0);
  auto kk = k.range(zero, four, 2);
  auto av = k.load(a, k.alu(Ops::ADD, {row, kk}));
  auto bv = k.load(b, k.alu(Ops::ADD, {k.alu(Ops::MUL, {kk, four}), j}));
  auto asg = k.assign(acc, k.alu(Ops::ADD, {acc, k.alu(Ops::MUL, {av, bv})}));
  k.end(kk);
  k.store(c, k.alu(Ops::ADD, {row, j}), asg);
  k.end(j);
  k.end(i);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> va(n * n), vb(n * n), vc(n * n, 0.f), ref(n * n, 0.f);
  for (auto& x : va) x = dist(rng);
  for (auto& x : vb) x = dist(rng);
  for (int r = 0; r < n; r++)
    for (int col = 0; col < n; col++) {
      float s = 0.f;
      for (int x = 0; x < n; x++) s = s + va[r * n + x] * vb[x * n + col];
      ref[r * n + col] = s;
    }
  Interpreter(k.spec("r_4_4_4")).run({view(vc), view(va), view(vb)}, {});
  for (int e = 0; e < n * n; e++) EXPECT_FLOAT_EQ(vc[e], ref[e]) << e;
}

// out[i] = i < 4 ? in[i] : -1 over i in 0..8 with `in` of size 4: the gate keeps the load in bounds.
TEST(InterpMemory, GatedLoadDoesNotTouchMemory) {
  K k;
  auto out = k.global(dtypes::float32, 0), in = k.global(dtypes::float32, 1);
  auto r = k.range(k.c(0), k.c(8), 0);
  auto gate = k.alu(Ops::CMPLT, {r, k.c(4)});
  k.store(out, r, k.load(in, r, gate, k.cf(-1.0)));
  k.end(r);
  std::vector<float> vin{1.f, 2.f, 3.f, 4.f}, vo(8, 0.f);
  Interpreter(k.spec("E_8")).run({view(vo), view(vin)}, {});
  EXPECT_EQ(vo, (std::vector<float>{1.f, 2.f, 3.f, 4.f, -1.f, -1.f, -1.f, -1.f}));
  // A null buffer is fine as long as no access goes through it.
  std::vector<float> vo2(8, 0.f);
  K z;
  auto zout = z.global(dtypes::float32, 0), zin = z.global(dtypes::float32, 1);
  auto zr = z.range(z.c(0), z.c(8), 0);
  z.store(zout, zr, z.load(zin, zr, z.add(UOp::const_int(0, dtypes::bool_)), z.cf(5.0)));
  z.end(zr);
  Interpreter(z.spec("E_8")).run({view(vo2), InterpBuffer{nullptr, 0}}, {});
  EXPECT_EQ(vo2, std::vector<float>(8, 5.f));
}

// Ungated, the same kernel reads past the end: an error that names the kernel, buffer, index and size.
TEST(InterpMemory, OutOfBoundsLoadThrows) {
  K k;
  auto out = k.global(dtypes::float32, 0), in = k.global(dtypes::float32, 1);
  auto r = k.range(k.c(0), k.c(8), 0);
  k.store(out, r, k.load(in, r));
  k.end(r);
  std::vector<float> vin(4, 1.f), vo(8, 0.f);
  std::string err = run_error(k.spec("E_8"), {view(vo), view(vin)});
  EXPECT_NE(err.find("E_8"), std::string::npos) << err;
  EXPECT_NE(err.find("buffer 1"), std::string::npos) << err;
  EXPECT_NE(err.find("index 4"), std::string::npos) << err;
  EXPECT_NE(err.find("size 4"), std::string::npos) << err;
}

// A store one past the end throws before writing; the memory after the buffer stays as it was.
TEST(InterpMemory, OutOfBoundsStoreThrows) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto r = k.range(k.c(0), k.c(5), 0);
  k.store(out, r, r);
  k.end(r);
  std::vector<int32_t> mem(8, -7);  // the kernel sees the first 4 elements only
  std::string err = run_error(k.spec("E_5"), {InterpBuffer{mem.data(), 4 * sizeof(int32_t)}});
  EXPECT_NE(err.find("E_5"), std::string::npos) << err;
  EXPECT_NE(err.find("writes out of bounds"), std::string::npos) << err;
  EXPECT_NE(err.find("buffer 0"), std::string::npos) << err;
  EXPECT_NE(err.find("index 4"), std::string::npos) << err;
  EXPECT_NE(err.find("size 4"), std::string::npos) << err;
  EXPECT_EQ(mem, (std::vector<int32_t>{0, 1, 2, 3, -7, -7, -7, -7}));
  // Negative indices are out of bounds too.
  K n;
  auto nout = n.global(dtypes::int32, 0);
  n.store(nout, n.c(-1), n.c(3));
  std::string nerr = run_error(n.spec("E_1"), {view(mem)});
  EXPECT_NE(nerr.find("index -1"), std::string::npos) << nerr;
}

// A gated store with a false gate writes nothing, even out of bounds.
TEST(InterpMemory, GatedStore) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto r = k.range(k.c(0), k.c(8), 0);
  auto gate = k.alu(Ops::CMPLT, {r, k.c(3)});
  k.add(UOp::make(Ops::STORE, dtypes::void_, {out, r, k.alu(Ops::ADD, {r, k.c(10)}), gate}));
  k.end(r);
  std::vector<int32_t> vo(3, 0);
  Interpreter(k.spec("E_8")).run({view(vo)}, {});
  EXPECT_EQ(vo, (std::vector<int32_t>{10, 11, 12}));
}

// int8 arithmetic wraps like C on a two's complement machine.
TEST(InterpAlu, Int8Wraparound) {
  K k;
  auto out = k.global(dtypes::int8, 0), in = k.global(dtypes::int8, 1);
  auto r = k.range(k.c(0), k.c(4), 0);
  auto x = k.load(in, r);
  k.store(out, r, k.alu(Ops::MUL, {k.alu(Ops::ADD, {x, k.c(100, dtypes::int8)}), k.c(3, dtypes::int8)}));
  k.end(r);
  std::vector<int8_t> vin{100, -128, 127, 0}, vo(4, 0);
  Interpreter(k.spec("E_4")).run({view(vo), view(vin)}, {});
  for (int i = 0; i < 4; i++) EXPECT_EQ(vo[i], int8_t(uint8_t(uint8_t(vin[i] + 100) * 3))) << i;
  EXPECT_EQ(vo[0], int8_t(88));  // (100 + 100) wraps to -56, * 3 = -168 wraps to 88
}

// Integer division and remainder truncate toward zero, as in C; comparisons give bool.
TEST(InterpAlu, CSemantics) {
  K k;
  auto out = k.global(dtypes::int32, 0), in = k.global(dtypes::int32, 1);
  auto zero = k.c(0), one = k.c(1), two = k.c(2), three = k.c(3);
  auto x = k.load(in, zero);
  k.store(out, zero, k.alu(Ops::IDIV, {x, two}));
  k.store(out, one, k.alu(Ops::MOD, {x, two}));
  k.store(out, two, k.cast(k.alu(Ops::CMPLT, {x, zero}), dtypes::int32));
  k.store(out, three, k.alu(Ops::WHERE, {k.alu(Ops::CMPNE, {x, zero}), k.alu(Ops::NEG, {x}), one}));
  std::vector<int32_t> vin{-7}, vo(4, 0);
  Interpreter(k.spec("E_4")).run({view(vo), view(vin)}, {});
  EXPECT_EQ(vo, (std::vector<int32_t>{-3, -1, 1, 7}));
}

// float32 -> float16 -> float32 and float32 -> bfloat16 -> float32, checked on the bit patterns.
void check_half_round_trip(DType half, const std::vector<float>& in, const std::vector<uint16_t>& bits,
                           const std::vector<float>& back) {
  K k;
  auto hbuf = k.global(half, 0), out = k.global(dtypes::float32, 1), src = k.global(dtypes::float32, 2);
  auto r = k.range(k.c(0), k.c(int64_t(in.size())), 0);
  k.store(hbuf, r, k.cast(k.load(src, r), half));
  k.end(r);
  auto r2 = k.range(k.c(0), k.c(int64_t(in.size())), 1);
  k.store(out, r2, k.cast(k.load(hbuf, r2), dtypes::float32));
  k.end(r2);
  std::vector<uint16_t> vh(in.size(), 0);
  std::vector<float> vo(in.size(), 0.f), vin = in;
  Interpreter(k.spec("E_rt")).run({view(vh), view(vo), view(vin)}, {});
  for (size_t i = 0; i < in.size(); i++) {
    EXPECT_EQ(vh[i], bits[i]) << half.repr() << " of " << in[i];
    EXPECT_EQ(std::memcmp(&vo[i], &back[i], sizeof(float)), 0) << half.repr() << " back " << vo[i] << " vs " << back[i];
  }
}

TEST(InterpMemory, Float16RoundTrip) {
  float inf = std::numeric_limits<float>::infinity();
  check_half_round_trip(dtypes::float16, {1.f, -2.f, 65504.f, 0.1f, 1e-7f, 65520.f, 0.f, -0.f, inf},
                        {0x3C00, 0xC000, 0x7BFF, 0x2E66, 0x0002, 0x7C00, 0x0000, 0x8000, 0x7C00},
                        {1.f, -2.f, 65504.f, 0.0999755859375f, 1.1920928955078125e-07f, inf, 0.f, -0.f, inf});
}

TEST(InterpMemory, BFloat16RoundTrip) {
  check_half_round_trip(dtypes::bfloat16, {1.f, 0.1f, 3.14159265f, -1.5f, 1e30f},
                        {0x3F80, 0x3DCD, 0x4049, 0xBFC0, 0x714A},
                        {1.f, 0.10009765625f, 3.140625f, -1.5f, 1.0002555517425873e+30f});
}

// out[i] = 2 * i for i < n, n a kernel variable bounded to [1, 16].
TEST(InterpVars, DefineVarBoundsLoop) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto n = k.var("n", 1, 16);
  auto r = k.range(k.c(0), n, 0);
  k.store(out, r, k.alu(Ops::MUL, {r, k.c(2)}));
  k.end(r);
  std::vector<int32_t> vo(16, -1);
  Interpreter interp(k.spec("E_n"));
  interp.run({view(vo)}, {5});
  EXPECT_EQ(vo, (std::vector<int32_t>{0, 2, 4, 6, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}));
  std::string err = run_error(k.spec("E_n"), {view(vo)}, {17});
  EXPECT_NE(err.find("'n' = 17"), std::string::npos) << err;
  EXPECT_NE(run_error(k.spec("E_n"), {view(vo)}, {}).find("needs 1 vars"), std::string::npos);
}

// An empty range skips its body; IF blocks run only when their gate holds.
TEST(InterpControl, EmptyRangeAndIf) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto zero = k.c(0), two = k.c(2), three = k.c(3), four = k.c(4), seven = k.c(7), v99 = k.c(99);
  auto r = k.range(three, three, 0);
  k.store(out, zero, v99);
  k.end(r);
  auto r2 = k.range(zero, four, 1);
  auto iff = k.add(UOp::make(Ops::IF, dtypes::void_, {k.alu(Ops::CMPNE, {k.alu(Ops::MOD, {r2, two}), zero})}));
  k.store(out, r2, seven);
  k.add(UOp::make(Ops::ENDIF, dtypes::void_, {iff}));
  k.end(r2);
  std::vector<int32_t> vo(4, 0);
  Interpreter(k.spec("E_4")).run({view(vo)}, {});
  EXPECT_EQ(vo, (std::vector<int32_t>{0, 7, 0, 7}));
}

// gidx/lidx/idx give each thread of the launch grid its ids.
TEST(InterpGpu, SpecialIds) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto g0 = k.special("gidx0", 3), g1 = k.special("gidx1", 2), l0 = k.special("lidx0", 4);
  auto flat = k.alu(Ops::ADD, {k.alu(Ops::MUL, {k.alu(Ops::ADD, {k.alu(Ops::MUL, {g1, k.c(3)}), g0}), k.c(4)}), l0});
  auto val = k.alu(Ops::ADD, {k.alu(Ops::ADD, {k.alu(Ops::MUL, {g1, k.c(100)}), k.alu(Ops::MUL, {g0, k.c(10)})}), l0});
  k.store(out, flat, val);
  std::vector<int32_t> vo(24, -1);
  Interpreter(k.spec("E_2_3_4", {3, 2, 1}, {4, 1, 1})).run({view(vo)}, {});
  for (int y = 0; y < 2; y++)
    for (int x = 0; x < 3; x++)
      for (int l = 0; l < 4; l++) EXPECT_EQ(vo[(y * 3 + x) * 4 + l], y * 100 + x * 10 + l);

  K a;  // idx0 = gidx0 * local0 + lidx0
  auto aout = a.global(dtypes::int32, 0);
  auto i0 = a.special("idx0", 8);
  a.store(aout, i0, a.alu(Ops::MUL, {i0, i0}));
  std::vector<int32_t> va(8, -1);
  Interpreter(a.spec("E_8", {2, 1, 1}, {4, 1, 1})).run({view(va)}, {});
  EXPECT_EQ(va, (std::vector<int32_t>{0, 1, 4, 9, 16, 25, 36, 49}));
}

// Each thread writes its slot, then after the BARRIER reads its mirror's slot: correct only if every
// thread of the workgroup reached the barrier before any went on.
TEST(InterpGpu, BarrierSynchronizesWorkgroup) {
  K k;
  auto out = k.global(dtypes::int32, 0), tmp = k.global(dtypes::int32, 1);
  auto g = k.special("gidx0", 2), l = k.special("lidx0", 4);
  auto slot = k.alu(Ops::ADD, {k.alu(Ops::MUL, {g, k.c(4)}), l});
  auto st = k.store(tmp, slot, k.alu(Ops::ADD, {slot, k.c(1)}));
  k.add(UOp::make(Ops::BARRIER, dtypes::void_, {st}));
  auto mirror = k.alu(Ops::ADD, {k.alu(Ops::MUL, {g, k.c(4)}), k.alu(Ops::SUB, {k.c(3), l})});
  k.store(out, slot, k.load(tmp, mirror));
  std::vector<int32_t> vo(8, 0), vt(8, 0);
  Interpreter(k.spec("E_2_4", {2, 1, 1}, {4, 1, 1})).run({view(vo), view(vt)}, {});
  EXPECT_EQ(vo, (std::vector<int32_t>{4, 3, 2, 1, 8, 7, 6, 5}));
}

// A barrier inside an IF that only some threads enter is a deadlock on a GPU: an error here.
TEST(InterpGpu, DivergentBarrierThrows) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto l = k.special("lidx0", 4);
  auto iff = k.add(UOp::make(Ops::IF, dtypes::void_, {k.alu(Ops::CMPLT, {l, k.c(2)})}));
  k.add(UOp::make(Ops::BARRIER, dtypes::void_, {}));
  k.add(UOp::make(Ops::ENDIF, dtypes::void_, {iff}));
  k.store(out, l, l);
  std::vector<int32_t> vo(4, 0);
  std::string err = run_error(k.spec("E_4", {1, 1, 1}, {4, 1, 1}), {view(vo)});
  EXPECT_NE(err.find("only 2 of 4 threads"), std::string::npos) << err;
}

TEST(InterpGpu, LaunchMustMatchSpecials) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto g = k.special("gidx0", 4);
  k.store(out, g, g);
  EXPECT_NE(load_error(k.spec("E_4", {8, 1, 1})).find("does not match"), std::string::npos);
  EXPECT_NE(load_error(k.spec("E_4", {4, 1, 1}, {2, 1, 1})).find("lidx0 spans 1"), std::string::npos);
  EXPECT_EQ(load_error(k.spec("E_4", {4, 1, 1})), "");
}

// Malformed programs are rejected when loaded, naming the node.
TEST(InterpValidate, RejectsMalformedPrograms) {
  {  // a node kind that never appears in a linearized program
    K k;
    auto out = k.global(dtypes::float32, 0);
    auto v = k.add(UOp::make(Ops::VECTORIZE, dtypes::float32, {k.cf(1.0)}));
    k.store(out, k.c(0), v);
    EXPECT_NE(load_error(k.spec("bad")).find("VECTORIZE"), std::string::npos);
  }
  {  // a loop value used after its loop closed: C would not compile this
    K k;
    auto out = k.global(dtypes::int32, 0);
    auto r = k.range(k.c(0), k.c(4), 0);
    auto x = k.alu(Ops::ADD, {r, k.c(1)});
    k.end(r);
    k.store(out, k.c(0), x);
    EXPECT_NE(load_error(k.spec("bad")).find("outside the loop"), std::string::npos);
  }
  {  // a RANGE never closed
    K k;
    auto out = k.global(dtypes::int32, 0);
    auto r = k.range(k.c(0), k.c(4), 0);
    k.store(out, r, r);
    EXPECT_NE(load_error(k.spec("bad")).find("never closed"), std::string::npos);
  }
  {  // ENDRANGEs out of order
    K k;
    auto r0 = k.range(k.c(0), k.c(4), 0);
    auto r1 = k.range(k.c(0), k.c(4), 1);
    k.end(r0);
    k.end(r1);
    EXPECT_NE(load_error(k.spec("bad")).find("innermost open block"), std::string::npos);
  }
  {  // a source that comes after its user
    K k;
    auto out = k.global(dtypes::int32, 0);
    auto one = UOp::const_int(1);
    k.store(out, k.c(0), one);
    k.add(one);
    EXPECT_NE(load_error(k.spec("bad")).find("not earlier"), std::string::npos);
  }
  {  // one node listed twice
    K k;
    auto out = k.global(dtypes::int32, 0);
    auto one = k.c(1);
    k.uops.push_back(one);
    k.store(out, k.c(0), one);
    EXPECT_NE(load_error(k.spec("bad")).find("appears twice"), std::string::npos);
  }
  {  // a DEFINE_VAR the kernel's vars do not list
    K k;
    auto out = k.global(dtypes::int32, 0);
    k.store(out, k.c(0), k.add(UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"m", 0, 9})));
    EXPECT_NE(load_error(k.spec("bad")).find("'m' is not in the kernel's vars"), std::string::npos);
  }
  {  // an ALU op on mixed dtypes (a missing CAST)
    K k;
    auto out = k.global(dtypes::float32, 0);
    k.store(out, k.c(0), k.add(UOp::make(Ops::ADD, dtypes::float32, {k.cf(1.0), k.c(2)})));
    EXPECT_NE(load_error(k.spec("bad")).find("operand 1 is dtypes.int, expected dtypes.float"), std::string::npos);
  }
  {  // a value read from a node that has none
    K k;
    auto out = k.global(dtypes::int32, 0);
    auto st = k.store(out, k.c(0), k.c(1));
    k.add(UOp::make(Ops::ADD, dtypes::int32, {st, k.c(1)}));
    EXPECT_NE(load_error(k.spec("bad")).find("has no value"), std::string::npos);
  }
  {  // LOAD of the wrong dtype through a buffer
    K k;
    auto in = k.global(dtypes::float32, 0);
    k.add(UOp::make(Ops::LOAD, dtypes::int32, {in, k.c(0)}));
    EXPECT_NE(load_error(k.spec("bad")).find("through a pointer"), std::string::npos);
  }
}

// One line per node: position, op, dtype, sources by position (constants by value), arg.
TEST(InterpDevice, UopsListing) {
  K k;
  auto out = k.global(dtypes::int32, 0);
  auto r = k.range(k.c(0), k.c(4), 0);
  k.store(out, r, r);
  k.end(r);
  std::string s = uops_listing(k.uops);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 6) << s;
  EXPECT_NE(s.find("   3 Ops.RANGE"), std::string::npos) << s;
  EXPECT_NE(s.find("[0, 4]"), std::string::npos) << s;     // RANGE's constant bounds by value
  EXPECT_NE(s.find("[0, 3, 3]"), std::string::npos) << s;  // STORE(out, r, r) by position
}

// The device: host memory with known sizes, an identity compiler, a listing as source, and programs that
// run the uops with bounds checks against the allocations themselves.
TEST(InterpDevice, RunsKernelsOnItsOwnMemory) {
  Device& dev = get_device("INTERP");
  EXPECT_EQ(dev.name(), "INTERP");
  EXPECT_EQ(dev.compiler().cache_key(), "INTERP");
  EXPECT_EQ(dev.compiler().compile("abc"), "abc");
  EXPECT_EQ(dev.renderer().device(), "INTERP");
  EXPECT_TRUE(dev.renderer().supports(Ops::MULACC));
  EXPECT_FALSE(dev.renderer().supports(Ops::THREEFRY));

  K k;
  auto out = k.global(dtypes::int32, 0), a = k.global(dtypes::int32, 1), b = k.global(dtypes::int32, 2);
  auto zero = k.c(0);
  auto acc = k.acc(zero, 0);
  auto r = k.range(zero, k.c(2), 0);
  auto asg = k.assign(acc, k.alu(Ops::ADD, {acc, k.alu(Ops::MUL, {k.load(a, r), k.load(b, r)})}));
  k.end(r);
  k.store(out, zero, asg);
  ProgramSpec spec = k.spec("r_2");
  spec.src = dev.renderer().render(spec.name, spec.uops);
  EXPECT_NE(spec.src.find("r_2"), std::string::npos);
  EXPECT_NE(spec.src.find("Ops.DEFINE_ACC"), std::string::npos) << spec.src;
  EXPECT_NE(spec.src.find("Ops.ASSIGN"), std::string::npos) << spec.src;

  Allocator& mem = dev.allocator();
  std::vector<int32_t> va{1, 2}, vb{3, 4}, vo{0};
  void* po = mem.alloc(4);
  void* pa = mem.alloc(8);
  void* pb = mem.alloc(8);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pa) % 64, 0u);
  mem.copyin(pa, va.data(), 8);
  mem.copyin(pb, vb.data(), 8);
  auto prog = dev.load(spec, dev.compiler().compile(spec.src));
  EXPECT_GE(prog->run({po, pa, pb}, {}, true), 0.0);
  mem.copyout(vo.data(), po, 4);
  EXPECT_EQ(vo[0], 11);

  // A buffer of one element where two are read: the device knows the allocation's size.
  void* small = mem.alloc(4);
  try {
    prog->run({po, small, pb}, {}, false);
    ADD_FAILURE() << "expected an out-of-bounds error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("buffer 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("size 1"), std::string::npos) << e.what();
  }
  // Memory that is not the device's is refused rather than trusted.
  int32_t foreign[2] = {1, 2};
  EXPECT_THROW(prog->run({po, foreign, pb}, {}, false), Error);
  for (void* p : {po, pa, pb}) mem.free(p, p == po ? 4 : 8);
  mem.free(small, 4);
}

}  // namespace
}  // namespace tg

// Shared memory through the device: grouped reduces (DEFINE_LOCAL, BARRIER, LOAD after the barrier) run in
// the interpreter with GPU semantics and agree with the CPU.
TEST(InterpGpu, GroupedReduceThroughSharedMemoryMatchesCpu) {
  tg::CUDARenderer cuda;
  std::vector<float> data(3 * 4096);
  for (size_t i = 0; i < data.size(); i++) data[i] = float(i % 13) * 0.5f;  // every sum order is exact
  tg::Tensor cpu_in(data, {3, 4096});
  std::vector<float> want = cpu_in.sum(1).tolist<float>();
  tg::Tensor in = cpu_in.to("INTERP").realize();
  tg::Schedule s = tg::create_schedule({in.sum(1).uop()});
  ASSERT_EQ(s.items.size(), 1u);
  tg::Kernel k(s.items[0].ast, cuda);
  k.apply_opt({tg::OptOps::GROUP, 0, 64});
  tg::ProgramSpec spec;
  spec.name = k.name();
  spec.uops = tg::linearize_kernel(tg::lower_kernel(k));
  spec.global_size = {3, 1, 1};
  spec.local_size = {64, 1, 1};
  tg::Interpreter interp(spec);
  std::vector<float> out(3, -1.0f);
  interp.run({{out.data(), out.size() * 4}, {data.data(), data.size() * 4}}, {});
  for (size_t i = 0; i < 3; i++) EXPECT_EQ(out[i], want[i]) << i;
  // a launch that does not match the kernel's workgroup is refused, not run half
  spec.local_size = {32, 1, 1};
  EXPECT_THROW(tg::Interpreter{spec}, tg::Error);
}
