// The C renderer: golden source for small kernels, and hand-linearized programs compiled and run on the
// CPU device, checked value for value (bit for bit where C and exec_alu must agree) against exec_alu.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "renderer/c.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/devices.h"
#include "tg/error.h"
#include "uop/exec_alu.h"

using namespace tg;

namespace {

// ---- building programs by hand ----

UOpPtr global(int64_t pos, DType dt) { return UOp::make(Ops::DEFINE_GLOBAL, dt.pointer(), {}, pos); }
UOpPtr range(int64_t id, int64_t end) {
  return UOp::make(Ops::RANGE, dtypes::int32, {UOp::const_int(0), UOp::const_int(end)}, id);
}
UOpPtr end_range(const UOpPtr& r) { return UOp::make(Ops::ENDRANGE, dtypes::void_, {r}); }
UOpPtr load(const UOpPtr& buf, const UOpPtr& idx) { return UOp::make(Ops::LOAD, buf->dtype.base(), {buf, idx}); }
UOpPtr store(const UOpPtr& buf, const UOpPtr& idx, const UOpPtr& v) {
  return UOp::make(Ops::STORE, dtypes::void_, {buf, idx, v});
}
UOpPtr alu(Ops op, DType dt, std::vector<UOpPtr> src) { return UOp::make(op, dt, std::move(src)); }

// The statements in order; each one's not yet listed sources are placed just before it (a linearizer in
// miniature).
std::vector<UOpPtr> flat(const std::vector<UOpPtr>& statements) {
  std::vector<UOpPtr> out;
  std::unordered_set<const UOp*> seen;
  for (auto& s : statements)
    for (const UOp* u : toposort(s))
      if (seen.insert(u).second) out.push_back(u->ptr());
  return out;
}

std::string render(const std::string& name, const std::vector<UOpPtr>& uops) {
  return ClangRenderer().render(name, uops);
}

// ---- running them ----

std::vector<uint8_t> to_bytes(const std::vector<Num>& v, DType dt) {
  size_t w = size_t(dt.itemsize());
  std::vector<uint8_t> out(v.size() * w);
  for (size_t i = 0; i < v.size(); i++) {
    uint64_t bits = num_to_bits(v[i], dt);
    std::memcpy(out.data() + i * w, &bits, w);  // little-endian: the low bytes
  }
  return out;
}

std::vector<Num> from_bytes(const std::vector<uint8_t>& b, DType dt) {
  size_t w = size_t(dt.itemsize());
  std::vector<Num> out(b.size() / w);
  for (size_t i = 0; i < out.size(); i++) {
    uint64_t bits = 0;
    std::memcpy(&bits, b.data() + i * w, w);
    out[i] = num_from_bits(bits, dt);
  }
  return out;
}

struct Arg {
  DType dtype;
  std::vector<Num> values;  // inputs; for outputs only the size matters
};

// Render, compile (with `cc`, or the CPU device's compiler), load and run; returns every buffer after.
// On another device (`device`, "CL"), that device's renderer and compiler (cc must be empty).
std::vector<std::vector<Num>> run(const std::string& name, const std::vector<UOpPtr>& uops,
                                  const std::vector<Arg>& args, const std::vector<int64_t>& vars = {},
                                  const std::string& cc = "", const std::string& device = "CPU") {
  Device& cpu = get_device(device);
  ProgramSpec spec;
  spec.name = name;
  spec.uops = uops;
  spec.src = cpu.renderer().render(name, uops);
  spec.global_size = spec.local_size = {1, 1, 1};  // (a GPU runs these loops in one thread)
  spec.n_bufs = int(args.size());
  for (auto& u : uops)
    if (u->op == Ops::DEFINE_VAR) spec.vars.push_back(u);
  std::string bin = cc.empty() ? cpu.compiler().compile_cached(spec.src) : make_cpu_compiler(cc)->compile(spec.src);
  auto prog = cpu.load(spec, bin);
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<void*> ptrs;
  for (auto& a : args) {
    bufs.push_back(std::make_unique<Buffer>(device, int64_t(a.values.size()), a.dtype));
    auto bytes = to_bytes(a.values, a.dtype);
    bufs.back()->copyin(bytes.data(), bytes.size());
    ptrs.push_back(bufs.back()->ptr());
  }
  prog->run(ptrs, vars, true);
  cpu.synchronize();
  std::vector<std::vector<Num>> out;
  for (size_t i = 0; i < args.size(); i++) {
    std::vector<uint8_t> bytes(bufs[i]->nbytes());
    bufs[i]->copyout(bytes.data(), bytes.size());
    out.push_back(from_bytes(bytes, args[i].dtype));
  }
  return out;
}

std::vector<Num> floats(std::initializer_list<double> v) {
  std::vector<Num> out;
  for (double x : v) out.push_back(Num{0, x});
  return out;
}
std::vector<Num> ints(std::initializer_list<int64_t> v) {
  std::vector<Num> out;
  for (int64_t x : v) out.push_back(Num{x, 0});
  return out;
}

// Bitwise equality of two values of dt (any NaN equals any NaN).
bool same(Num a, Num b, DType dt) {
  if (dt.is_float() && std::isnan(a.f) && std::isnan(b.f)) return true;
  return num_to_bits(a, dt) == num_to_bits(b, dt);
}

std::vector<std::string> compilers() {
  std::vector<std::string> cs;
  for (const char* c : {"gcc", "clang"})
    if (std::system((std::string("command -v ") + c + " >/dev/null 2>&1").c_str()) == 0) cs.push_back(c);
  return cs;
}

// out[i] = a[i] + b[i], 16 floats.
std::vector<UOpPtr> elementwise_add_16() {
  auto d0 = global(0, dtypes::float32), d1 = global(1, dtypes::float32), d2 = global(2, dtypes::float32);
  auto r = range(0, 16);
  auto st = store(d0, r, alu(Ops::ADD, dtypes::float32, {load(d1, r), load(d2, r)}));
  return flat({d0, d1, d2, r, st, end_range(r)});
}

// out[0] = sum_i a[i] * b[i] over 2 ints, with an accumulator.
std::vector<UOpPtr> int_dot_2() {
  auto d0 = global(0, dtypes::int32), d1 = global(1, dtypes::int32), d2 = global(2, dtypes::int32);
  auto acc = UOp::make(Ops::DEFINE_ACC, dtypes::int32, {UOp::const_int(0)}, int64_t(0));
  auto r = range(0, 2);
  auto prod = alu(Ops::MUL, dtypes::int32, {load(d1, r), load(d2, r)});
  auto asg = UOp::make(Ops::ASSIGN, dtypes::int32, {acc, alu(Ops::ADD, dtypes::int32, {acc, prod})});
  auto st = store(d0, UOp::const_int(0), asg);
  return flat({d0, d1, d2, acc, r, asg, end_range(r), st});
}

}  // namespace

// ---- golden source ----

TEST(RenderGolden, ElementwiseAdd16) {
  EXPECT_EQ(render("E_16", elementwise_add_16()),
            "void E_16(float* restrict data0, const float* restrict data1, const float* restrict data2) {\n"
            "  for (int ridx0 = 0; ridx0 < 16; ridx0++) {\n"
            "    float val0 = data1[ridx0];\n"
            "    float val1 = data2[ridx0];\n"
            "    data0[ridx0] = (val0+val1);\n"
            "  }\n"
            "}\n"
            "void E_16_entry(void** bufs, const long long* vars) {\n"
            "  E_16((float*)bufs[0], (const float*)bufs[1], (const float*)bufs[2]);\n"
            "}\n");
}

TEST(RenderGolden, IntDotProductWithAccumulator) {
  EXPECT_EQ(render("r_2", int_dot_2()),
            "void r_2(int* restrict data0, const int* restrict data1, const int* restrict data2) {\n"
            "  int acc0 = 0;\n"
            "  for (int ridx0 = 0; ridx0 < 2; ridx0++) {\n"
            "    int val0 = data1[ridx0];\n"
            "    int val1 = data2[ridx0];\n"
            "    acc0 = (acc0+(val0*val1));\n"
            "  }\n"
            "  data0[0] = acc0;\n"
            "}\n"
            "void r_2_entry(void** bufs, const long long* vars) {\n"
            "  r_2((int*)bufs[0], (const int*)bufs[1], (const int*)bufs[2]);\n"
            "}\n");
}

TEST(RenderGolden, MultiUseValueGetsAVariable) {
  auto d0 = global(0, dtypes::float32), d1 = global(1, dtypes::float32);
  auto r = range(0, 4);
  auto x = load(d1, r);
  auto sq = alu(Ops::MUL, dtypes::float32, {x, x});  // x used twice: still a plain load variable
  auto s = alu(Ops::ADD, dtypes::float32, {sq, UOp::const_(dtypes::float32, 1.0)});
  auto st = store(d0, r, alu(Ops::MUL, dtypes::float32, {s, s}));  // s used twice: alu0
  std::string src = render("E_4", flat({d0, d1, r, st, end_range(r)}));
  EXPECT_NE(src.find("    float alu0 = ((val0*val0)+1.0f);\n"), std::string::npos) << src;
  EXPECT_NE(src.find("    data0[ridx0] = (alu0*alu0);\n"), std::string::npos) << src;
}

TEST(RenderGolden, GatedLoadAndStore) {
  auto d0 = global(0, dtypes::float32), d1 = global(1, dtypes::float32);
  auto r = range(0, 16);
  auto gate = alu(Ops::CMPLT, dtypes::bool_, {r, UOp::const_int(8)});
  auto ld = UOp::make(Ops::LOAD, dtypes::float32, {d1, r, gate, UOp::const_(dtypes::float32, 0.0)});
  auto odd = alu(Ops::CMPNE, dtypes::bool_, {alu(Ops::MOD, dtypes::int32, {r, UOp::const_int(2)}), UOp::const_int(0)});
  auto st = UOp::make(Ops::STORE, dtypes::void_, {d0, r, ld, odd});
  auto uops = flat({d0, d1, r, st, end_range(r)});
  std::string src = render("E_16", uops);
  EXPECT_NE(src.find("    float val0 = ((ridx0<8)?data1[ridx0]:0.0f);\n"), std::string::npos) << src;
  EXPECT_NE(src.find("    if ((ridx0%2)!=0) { data0[ridx0] = val0; }\n"), std::string::npos) << src;

  std::vector<Num> in(8), out(16, Num{0, -1.0});
  for (int i = 0; i < 8; i++) in[size_t(i)].f = i + 1;
  auto res = run("E_16", uops, {{dtypes::float32, out}, {dtypes::float32, in}})[0];  // in has only 8: gate guards
  for (int i = 0; i < 16; i++) EXPECT_EQ(res[size_t(i)].f, i % 2 == 0 ? -1.0 : (i < 8 ? i + 1 : 0.0)) << i;
}

TEST(RenderGolden, SpecialFloatConstants) {
  auto d0 = global(0, dtypes::float32);
  std::vector<UOpPtr> st;
  const double vals[] = {INFINITY, -INFINITY, NAN, 0.1, -0.0, 1e-45, 3.4028234663852886e38, 1.0 / 3.0, 16777217.0};
  for (int i = 0; i < 9; i++) st.push_back(store(d0, UOp::const_int(i), UOp::const_(dtypes::float32, vals[i])));
  std::vector<UOpPtr> stmts{d0};
  stmts.insert(stmts.end(), st.begin(), st.end());
  auto uops = flat(stmts);
  std::string src = render("E_9", uops);
  EXPECT_NE(src.find("#define INFINITY (__builtin_inff())\n"), std::string::npos) << src;
  EXPECT_NE(src.find("#define NAN (__builtin_nanf(\"\"))\n"), std::string::npos) << src;
  EXPECT_NE(src.find("data0[0] = INFINITY;"), std::string::npos) << src;
  EXPECT_NE(src.find("data0[1] = -INFINITY;"), std::string::npos) << src;
  EXPECT_NE(src.find("data0[3] = 0.1f;"), std::string::npos) << src;
  EXPECT_NE(src.find("data0[4] = -0.0f;"), std::string::npos) << src;
  auto res = run("E_9", uops, {{dtypes::float32, std::vector<Num>(9)}})[0];
  for (int i = 0; i < 9; i++) EXPECT_TRUE(same(res[size_t(i)], Num{0, double(float(vals[i]))}, dtypes::float32)) << i;
  EXPECT_TRUE(std::signbit(res[4].f));
}

TEST(RenderGolden, IntegerConstantsKeepTheirType) {
  auto d0 = global(0, dtypes::int64), d1 = global(1, dtypes::uint64), d2 = global(2, dtypes::int32);
  auto d3 = global(3, dtypes::uint32), d4 = global(4, dtypes::uint8);
  auto c0 = UOp::const_int(0);
  auto uops = flat({d0, d1, d2, d3, d4,
                    store(d0, c0, UOp::const_int(std::numeric_limits<int64_t>::min(), dtypes::int64)),
                    store(d1, c0, UOp::const_int(-1, dtypes::uint64)),  // the bit pattern of 2^64-1
                    store(d2, c0, UOp::const_int(std::numeric_limits<int32_t>::min(), dtypes::int32)),
                    store(d3, c0, UOp::const_int(4294967295LL, dtypes::uint32)),
                    store(d4, c0, UOp::const_int(-1, dtypes::uint8))});
  std::string src = render("E_1", uops);
  EXPECT_NE(src.find("data0[0] = (-9223372036854775807ll-1);"), std::string::npos) << src;
  EXPECT_NE(src.find("data1[0] = 18446744073709551615ull;"), std::string::npos) << src;
  EXPECT_NE(src.find("data2[0] = (-2147483647-1);"), std::string::npos) << src;
  EXPECT_NE(src.find("data3[0] = 4294967295u;"), std::string::npos) << src;
  EXPECT_NE(src.find("data4[0] = 255;"), std::string::npos) << src;
  auto res = run("E_1", uops, {{dtypes::int64, ints({0})}, {dtypes::uint64, ints({0})}, {dtypes::int32, ints({0})},
                               {dtypes::uint32, ints({0})}, {dtypes::uint8, ints({0})}});
  EXPECT_EQ(res[0][0].i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(uint64_t(res[1][0].i), ~uint64_t(0));
  EXPECT_EQ(res[2][0].i, std::numeric_limits<int32_t>::min());
  EXPECT_EQ(res[3][0].i, 4294967295LL);
  EXPECT_EQ(res[4][0].i, 255);
}

// ---- compile and run ----

TEST(RenderRun, ElementwiseAddFloat32) {
  std::vector<Num> a(16), b(16);
  for (int i = 0; i < 16; i++) a[size_t(i)].f = i * 0.5, b[size_t(i)].f = 100 - i;
  auto res = run("E_16", elementwise_add_16(), {{dtypes::float32, std::vector<Num>(16)}, {dtypes::float32, a},
                                                {dtypes::float32, b}})[0];
  for (int i = 0; i < 16; i++) EXPECT_EQ(res[size_t(i)].f, i * 0.5 + 100 - i);
}

TEST(RenderRun, IntDotProduct) {
  auto res = run("r_2", int_dot_2(), {{dtypes::int32, ints({0})}, {dtypes::int32, ints({1, 2})},
                                      {dtypes::int32, ints({3, 4})}})[0];
  EXPECT_EQ(res[0].i, 11);
}

TEST(RenderRun, Float64SumOfSquareRoots) {
  auto d0 = global(0, dtypes::float64), d1 = global(1, dtypes::float64);
  auto acc = UOp::make(Ops::DEFINE_ACC, dtypes::float64, {UOp::const_(dtypes::float64, 0.0)}, int64_t(0));
  auto r = range(0, 5);
  auto v = alu(Ops::SQRT, dtypes::float64, {load(d1, r)});
  auto asg = UOp::make(Ops::ASSIGN, dtypes::float64, {acc, alu(Ops::ADD, dtypes::float64, {acc, v})});
  auto uops = flat({d0, d1, acc, r, asg, end_range(r), store(d0, UOp::const_int(0), asg)});
  EXPECT_NE(render("r_5", uops).find("__builtin_sqrt(val0)"), std::string::npos);
  auto res = run("r_5", uops, {{dtypes::float64, floats({0})}, {dtypes::float64, floats({2, 3, 5, 7, 11})}})[0];
  EXPECT_EQ(res[0].f, std::sqrt(2.0) + std::sqrt(3.0) + std::sqrt(5.0) + std::sqrt(7.0) + std::sqrt(11.0));
}

TEST(RenderRun, DefineVarBoundsTheLoop) {
  auto d0 = global(0, dtypes::int32);
  auto n = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, NamedRange{"n", 1, 8});
  auto r = UOp::make(Ops::RANGE, dtypes::int32, {UOp::const_int(0), n}, int64_t(0));
  auto st = store(d0, r, alu(Ops::MUL, dtypes::int32, {r, n}));
  auto uops = flat({d0, n, r, st, end_range(r)});
  std::string src = render("E_n", uops);
  EXPECT_NE(src.find("void E_n(int* restrict data0, int n) {"), std::string::npos) << src;
  EXPECT_NE(src.find("for (int ridx0 = 0; ridx0 < n; ridx0++) {"), std::string::npos) << src;
  EXPECT_NE(src.find("E_n((int*)bufs[0], (int)vars[0]);"), std::string::npos) << src;
  auto res = run("E_n", uops, {{dtypes::int32, ints({-1, -1, -1, -1, -1})}}, {3})[0];
  EXPECT_EQ(res[0].i, 0);
  EXPECT_EQ(res[2].i, 6);
  EXPECT_EQ(res[3].i, -1);  // beyond n: untouched
}

TEST(RenderRun, BoolComparisonsAndLogic) {
  auto d0 = global(0, dtypes::bool_), d1 = global(1, dtypes::bool_), d2 = global(2, dtypes::int32);
  auto r = range(0, 4);
  auto lt = alu(Ops::CMPLT, dtypes::bool_, {load(d2, r), UOp::const_int(2)});
  auto st0 = store(d0, r, lt);
  auto st1 = store(d1, r, alu(Ops::ADD, dtypes::bool_, {lt, UOp::const_int(1, dtypes::bool_)}));  // bool add saturates
  auto uops = flat({d0, d1, d2, r, st0, st1, end_range(r)});
  EXPECT_NE(render("E_4", uops).find("_Bool* restrict data0"), std::string::npos);
  auto res = run("E_4", uops, {{dtypes::bool_, ints({0, 0, 0, 0})}, {dtypes::bool_, ints({0, 0, 0, 0})},
                               {dtypes::int32, ints({0, 1, 2, 3})}});
  EXPECT_EQ(res[0][0].i, 1);
  EXPECT_EQ(res[0][1].i, 1);
  EXPECT_EQ(res[0][2].i, 0);
  EXPECT_EQ(res[0][3].i, 0);
  for (int i = 0; i < 4; i++) EXPECT_EQ(res[1][size_t(i)].i, 1) << i;
}

TEST(RenderRun, AccumulatorReadIsNotMovedPastItsUpdate) {
  // before = acc*2 is read, then acc is updated, then `before` is stored: inlining `before` into the store
  // would read the updated accumulator.
  auto d0 = global(0, dtypes::float32), d1 = global(1, dtypes::float32);
  auto acc = UOp::make(Ops::DEFINE_ACC, dtypes::float32, {UOp::const_(dtypes::float32, 1.0)}, int64_t(0));
  auto r = range(0, 3);
  auto before = alu(Ops::MUL, dtypes::float32, {acc, UOp::const_(dtypes::float32, 2.0)});
  auto asg = UOp::make(Ops::ASSIGN, dtypes::float32, {acc, alu(Ops::ADD, dtypes::float32, {acc, load(d1, r)})});
  auto st = store(d0, r, before);
  auto uops = flat({d0, d1, acc, r, before, asg, st, end_range(r)});
  auto res = run("r_3", uops, {{dtypes::float32, floats({0, 0, 0})}, {dtypes::float32, floats({10, 20, 30})}})[0];
  EXPECT_EQ(res[0].f, 2.0);
  EXPECT_EQ(res[1].f, 22.0);
  EXPECT_EQ(res[2].f, 62.0);
}

// GCC ignores aligned() written before vector_size (the vector keeps its 16-byte alignment), so float4
// loads at an odd element offset became aligned moves and crashed under CC=gcc. Both compilers must see
// element alignment: checked at compile time with each compiler that is installed.
TEST(RenderRun, VectorTypedefAlignmentHoldsForGccAndClang) {
  auto d0 = global(0, dtypes::float32), d1 = global(1, dtypes::float32);
  auto v = UOp::make(Ops::LOAD, dtypes::float32.vec(4), {d1, UOp::const_int(1)});  // float4 at element 1
  auto uops = flat({d0, d1, store(d0, UOp::const_int(0), UOp::make(Ops::GEP, dtypes::float32, {v}, int64_t(0)))});
  std::string src = render("E_unaligned", uops) + "\n_Static_assert(_Alignof(float4) == 4, \"float4 must be 4-aligned\");\n";
  int compilers = 0;
  for (const char* cc : {"gcc", "clang"}) {
    if (std::system((std::string("command -v ") + cc + " >/dev/null 2>&1").c_str()) != 0) continue;
    compilers++;
    EXPECT_NO_THROW(make_cpu_compiler(cc)->compile(src)) << cc << ":\n" << src;
  }
  EXPECT_GE(compilers, 1) << "neither gcc nor clang is on PATH";
}

TEST(RenderRun, VectorizeAndGep) {
  auto d0 = global(0, dtypes::float32), d1 = global(1, dtypes::float32);
  auto r = range(0, 2);
  auto base = alu(Ops::MUL, dtypes::int32, {r, UOp::const_int(4)});
  auto v = UOp::make(Ops::LOAD, dtypes::float32.vec(4), {d1, base});  // a float4 load
  auto twice = alu(Ops::ADD, dtypes::float32.vec(4), {v, v});
  std::vector<UOpPtr> stmts{d0, d1, r};
  for (int k = 0; k < 4; k++) {
    auto e = UOp::make(Ops::GEP, dtypes::float32, {twice}, int64_t(3 - k));  // reversed
    stmts.push_back(store(d0, alu(Ops::ADD, dtypes::int32, {base, UOp::const_int(k)}), e));
  }
  stmts.push_back(end_range(r));
  auto uops = flat(stmts);
  std::string src = render("E_2_4", uops);
  EXPECT_NE(src.find("typedef float float4 __attribute__((vector_size(16),aligned(4)));"), std::string::npos) << src;
  std::vector<Num> in(8);
  for (int i = 0; i < 8; i++) in[size_t(i)].f = i;
  auto res = run("E_2_4", uops, {{dtypes::float32, std::vector<Num>(8)}, {dtypes::float32, in}})[0];
  for (int i = 0; i < 8; i++) EXPECT_EQ(res[size_t(i)].f, 2.0 * ((i / 4) * 4 + 3 - i % 4)) << i;

  auto vec = UOp::make(Ops::VECTORIZE, dtypes::float32.vec(2),
                       {load(d1, UOp::const_int(0)), UOp::const_(dtypes::float32, 5.0)});
  auto st = store(d0, UOp::const_int(0), UOp::make(Ops::GEP, dtypes::float32, {vec}, int64_t(1)));
  auto uops2 = flat({d0, d1, st});
  EXPECT_NE(render("E_1", uops2).find("((float2){val0,5.0f})[1]"), std::string::npos) << render("E_1", uops2);
  EXPECT_EQ(run("E_1", uops2, {{dtypes::float32, floats({0})}, {dtypes::float32, floats({1})}})[0][0].f, 5.0);
}

TEST(RenderErrors, MalformedProgramsThrow) {
  auto d0 = global(0, dtypes::float32);
  auto r = range(0, 4);
  auto st = store(d0, r, UOp::const_(dtypes::float32, 1.0));
  auto ok = flat({d0, r, st, end_range(r)});
  EXPECT_THROW(render("E_4", {ok[0], ok[1], ok[2], ok[3], ok[4]}), Error);  // loop never closed
  std::vector<UOpPtr> backwards = ok;
  std::swap(backwards[0], backwards[3]);  // the RANGE before its bounds
  EXPECT_THROW(render("E_4", backwards), Error);
  EXPECT_THROW(render("not a name", ok), Error);
  auto special = UOp::make(Ops::SPECIAL, dtypes::int32, {}, SpecialArg{LaunchAxis::GROUP, 0, 4});
  try {
    render("E_4", flat({d0, special, store(d0, special, UOp::const_(dtypes::float32, 1.0))}));
    FAIL() << "SPECIAL rendered on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gidx0"), std::string::npos) << e.what();
  }
  auto missing = global(1, dtypes::float32);  // position 1 without a position 0
  EXPECT_THROW(render("E_1", flat({missing, store(missing, UOp::const_int(0), UOp::const_(dtypes::float32, 1.0))})),
               Error);
}

// ---- compiled C agrees with exec_alu, bit for bit ----

namespace {

const DType kAllTypes[] = {dtypes::bool_,  dtypes::int8,   dtypes::uint8,   dtypes::int16,    dtypes::uint16,
                           dtypes::int32,  dtypes::uint32, dtypes::int64,   dtypes::uint64,   dtypes::float16,
                           dtypes::bfloat16, dtypes::float32, dtypes::float64};

// Edge values of dt: wrapped/rounded into it, so they are what a buffer of dt can hold.
std::vector<Num> edge_values(DType dt) {
  std::vector<Num> out;
  if (dt.is_float()) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    const double fv[] = {0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, 1e-3, 1e30, -1e30, inf, -inf, nan, 65504.0, 1e-7,
                         7.0, 255.5, -3.7, 3e9, 1e19, -1e19, 1.0 / 3.0};
    for (double v : fv) out.push_back(truncate_num(Num{0, v}, dt));
  } else {
    for (int64_t v : {int64_t(0), int64_t(1), int64_t(-1), int64_t(2), int64_t(-2), int64_t(3), int64_t(7), int64_t(-7),
                      int64_t(31), int64_t(33), int64_t(64), int64_t(100), int64_t(-128), int64_t(200),
                      std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t(2147483647),
                      int64_t(-2147483648LL), int64_t(65535), int64_t(-32768)})
      out.push_back(truncate_num(Num{v, 0}, dt));
  }
  return out;
}

struct OpCase {
  Ops op;
  int64_t const_rhs = 0;  // with has_const, the right operand is this CONST (the renderer's plain path)
  bool has_const = false;
};

std::vector<OpCase> op_cases(DType dt) {
  if (dt.is_bool()) return {{Ops::ADD}, {Ops::MUL}, {Ops::MAX}, {Ops::AND}, {Ops::OR}, {Ops::XOR}, {Ops::WHERE}};
  if (dt.is_float())
    return {{Ops::ADD}, {Ops::SUB}, {Ops::MUL}, {Ops::FDIV}, {Ops::MAX}, {Ops::NEG}, {Ops::RECIP}, {Ops::SQRT},
            {Ops::TRUNC}, {Ops::IDIV}, {Ops::MOD}, {Ops::MULACC}, {Ops::WHERE}};
  return {{Ops::ADD},           {Ops::SUB},           {Ops::MUL},          {Ops::IDIV},         {Ops::MOD},
          {Ops::MAX},           {Ops::AND},           {Ops::OR},           {Ops::XOR},          {Ops::SHL},
          {Ops::SHR},           {Ops::NEG},           {Ops::MULACC},       {Ops::WHERE},        {Ops::IDIV, 3, true},
          {Ops::MOD, -3, true}, {Ops::IDIV, -1, true}, {Ops::SHL, 3, true}, {Ops::SHR, 5, true}, {Ops::SHL, 31, true},
          {Ops::RECIP},         {Ops::FDIV},          {Ops::SQRT}};
}

// Pairs (a[i], b[i]) over all combinations of the edge values; c is a shifted copy of a (MULACC's addend).
struct Inputs {
  std::vector<Num> a, b, c;
};
Inputs pairs(DType dt) {
  auto v = edge_values(dt);
  Inputs in;
  for (size_t i = 0; i < v.size(); i++)
    for (size_t j = 0; j < v.size(); j++) {
      in.a.push_back(v[i]);
      in.b.push_back(v[j]);
      in.c.push_back(v[(i + j) % v.size()]);
    }
  return in;
}

Num expected(const OpCase& oc, DType dt, Num a, Num b, Num c) {
  if (oc.has_const) b = truncate_num(Num{oc.const_rhs, 0}, dt);
  if (oc.op == Ops::WHERE) return exec_alu(Ops::WHERE, dt, dt, {exec_alu(Ops::CMPLT, dtypes::bool_, dt, {a, b}), a, b});
  if (oc.op == Ops::MULACC) return exec_alu(oc.op, dt, dt, {a, b, c});
  if (is_unary(oc.op)) return exec_alu(oc.op, dt, dt, {a});
  return exec_alu(oc.op, dt, dt, {a, b});
}

void check_alu_against_exec(DType dt, const std::string& cc, const std::string& device = "CPU") {
  Inputs in = pairs(dt);
  const int64_t n = int64_t(in.a.size());
  auto cases = op_cases(dt);
  auto d0 = global(0, dt), d1 = global(1, dtypes::bool_), d2 = global(2, dt), d3 = global(3, dt), d4 = global(4, dt);
  auto r = range(0, n);
  auto a = load(d2, r), b = load(d3, r), c = load(d4, r);
  std::vector<UOpPtr> stmts{d0, d1, d2, d3, d4, r, a, b, c};
  auto at = [&](int64_t k) { return alu(Ops::ADD, dtypes::int32, {r, UOp::const_int(k * n)}); };
  for (size_t k = 0; k < cases.size(); k++) {
    const OpCase& oc = cases[k];
    UOpPtr rhs = oc.has_const ? UOp::const_int(oc.const_rhs, dt) : b, v;
    if (oc.op == Ops::WHERE) v = alu(Ops::WHERE, dt, {alu(Ops::CMPLT, dtypes::bool_, {a, b}), a, b});
    else if (oc.op == Ops::MULACC) v = alu(oc.op, dt, {a, b, c});
    else if (is_unary(oc.op)) v = alu(oc.op, dt, {a});
    else v = alu(oc.op, dt, {a, rhs});
    stmts.push_back(store(d0, at(int64_t(k)), v));
  }
  stmts.push_back(store(d1, r, alu(Ops::CMPLT, dtypes::bool_, {a, b})));
  stmts.push_back(store(d1, at(1), alu(Ops::CMPNE, dtypes::bool_, {a, b})));
  stmts.push_back(end_range(r));
  auto uops = flat(stmts);
  auto res = run("alu_" + dt.name().substr(0, 1), uops,
                 {{dt, std::vector<Num>(size_t(n) * cases.size())}, {dtypes::bool_, std::vector<Num>(size_t(2 * n))},
                  {dt, in.a}, {dt, in.b}, {dt, in.c}}, {}, cc, device);
  int failures = 0;
  for (size_t k = 0; k < cases.size(); k++)
    for (int64_t i = 0; i < n && failures < 10; i++) {
      Num want = expected(cases[k], dt, in.a[size_t(i)], in.b[size_t(i)], in.c[size_t(i)]);
      Num got = res[0][size_t(int64_t(k) * n + i)];
      if (!same(got, want, dt)) {
        failures++;
        ADD_FAILURE() << cc << " " << device << " " << dt.repr() << " " << op_name(cases[k].op) << (cases[k].has_const ? " const" : "")
                      << " a=" << in.a[size_t(i)].i << "/" << in.a[size_t(i)].f << " b=" << in.b[size_t(i)].i << "/"
                      << in.b[size_t(i)].f << ": got " << got.i << "/" << got.f << ", exec_alu " << want.i << "/"
                      << want.f;
      }
    }
  for (int64_t i = 0; i < n; i++) {
    Num a0 = in.a[size_t(i)], b0 = in.b[size_t(i)];
    EXPECT_EQ(res[1][size_t(i)].i, exec_alu(Ops::CMPLT, dtypes::bool_, dt, {a0, b0}).i) << dt.repr() << " CMPLT " << i;
    EXPECT_EQ(res[1][size_t(n + i)].i, exec_alu(Ops::CMPNE, dtypes::bool_, dt, {a0, b0}).i) << dt.repr() << " CMPNE";
  }
}

void check_casts_against_exec(DType from, const std::string& cc, const std::string& device = "CPU") {
  auto vals = edge_values(from);
  const int64_t n = int64_t(vals.size());
  auto src = global(0, from);
  auto r = range(0, n);
  auto x = load(src, r);
  std::vector<UOpPtr> stmts{src, r, x};
  std::vector<Arg> args{{from, vals}};
  for (size_t k = 0; k < std::size(kAllTypes); k++) {
    auto out = global(int64_t(k + 1), kAllTypes[k]);
    stmts.insert(stmts.begin() + 1 + int(k), out);
    stmts.push_back(store(out, r, UOp::make(Ops::CAST, kAllTypes[k], {x})));
    args.push_back({kAllTypes[k], std::vector<Num>(size_t(n))});
  }
  stmts.push_back(end_range(r));
  auto res = run("cast_from", flat(stmts), args, {}, cc, device);
  for (size_t k = 0; k < std::size(kAllTypes); k++)
    for (int64_t i = 0; i < n; i++) {
      Num want = cast_num(vals[size_t(i)], from, kAllTypes[k]);
      EXPECT_TRUE(same(res[k + 1][size_t(i)], want, kAllTypes[k]))
          << cc << " " << device << " cast " << from.repr() << " -> " << kAllTypes[k].repr() << " of " << vals[size_t(i)].i << "/"
          << vals[size_t(i)].f << ": got " << res[k + 1][size_t(i)].i << "/" << res[k + 1][size_t(i)].f
          << ", exec_alu " << want.i << "/" << want.f;
    }
}

}  // namespace

// Every dtype through both system compilers: gcc 12 has _Float16 and clang 14 does not, so both float16
// paths of the prefix are exercised.
TEST(RenderMatchesExecAlu, BinaryUnaryAndTernaryOps) {
  for (const std::string& cc : compilers())
    for (DType dt : kAllTypes) check_alu_against_exec(dt, cc);
}

TEST(RenderMatchesExecAlu, CastsBetweenAllTypes) {
  for (const std::string& cc : compilers())
    for (DType dt : kAllTypes) check_casts_against_exec(dt, cc);
}

// The OpenCL renderer on the CL device (PoCL in CI), bit for bit as the C renderer: every op and cast of every
// dtype at the edge values (NaN, inf, -0, extremes, ties).
TEST(RenderMatchesExecAlu, OpenCLOpsAndCasts) {
  if (cl_device_count() == 0) GTEST_SKIP() << "no OpenCL device here";
  for (DType dt : kAllTypes) check_alu_against_exec(dt, "", "CL");
  for (DType dt : kAllTypes) check_casts_against_exec(dt, "", "CL");
}

// The LLVM renderer on the LLVM device (IR compiled in-process), bit for bit as the C renderer, the same way.
TEST(RenderMatchesExecAlu, LLVMOpsAndCasts) {
  if (llvm_device_count() == 0) GTEST_SKIP() << "no LLVM device here (built without LLVM, or libLLVM missing)";
  for (DType dt : kAllTypes) check_alu_against_exec(dt, "", "LLVM");
  for (DType dt : kAllTypes) check_casts_against_exec(dt, "", "LLVM");
}

// The CPU devices: C through a compiler process, and LLVM where it is present.
std::vector<std::string> cpu_devices() {
  std::vector<std::string> d{"CPU"};
  if (llvm_device_count() > 0) d.push_back("LLVM");
  return d;
}

TEST(RenderMatchesExecAlu, TranscendentalsAreClose) {
  for (const std::string& device : cpu_devices())
  for (DType dt : {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64}) {
    std::vector<Num> xs;
    for (double v : {0.0, 0.5, 1.0, 2.0, 3.25, 10.0, -1.5, -7.0, 100.0}) xs.push_back(truncate_num(Num{0, v}, dt));
    auto d0 = global(0, dt), d1 = global(1, dt);
    auto r = range(0, int64_t(xs.size()));
    auto x = load(d1, r);
    const Ops ops[] = {Ops::EXP2, Ops::LOG2, Ops::SIN};
    std::vector<UOpPtr> stmts{d0, d1, r};
    for (int k = 0; k < 3; k++)
      stmts.push_back(store(d0, alu(Ops::ADD, dtypes::int32, {r, UOp::const_int(k * int64_t(xs.size()))}),
                            alu(ops[k], dt, {x})));
    stmts.push_back(end_range(r));
    auto res = run("transcendental", flat(stmts), {{dt, std::vector<Num>(xs.size() * 3)}, {dt, xs}}, {}, "", device)[0];
    double tol = dt.scalar == Scalar::Float64 ? 1e-15 : dt.scalar == Scalar::Float32 ? 1e-6 : 1e-2;
    for (int k = 0; k < 3; k++)
      for (size_t i = 0; i < xs.size(); i++) {
        double want = exec_alu(ops[k], dt, dt, {xs[i]}).f, got = res[size_t(k) * xs.size() + i].f;
        if (std::isnan(want) || std::isinf(want)) EXPECT_TRUE(same(Num{0, got}, Num{0, want}, dt)) << op_name(ops[k]);
        else
          EXPECT_NEAR(got, want, tol * std::max(1.0, std::fabs(want)))
              << device << " " << dt.repr() << " " << op_name(ops[k]) << " " << xs[i].f;
      }
  }
}

TEST(RenderMatchesExecAlu, BitcastsAndThreefry) {
  for (const std::string& device : cpu_devices()) {
  SCOPED_TRACE(device);
  auto f = global(0, dtypes::float32), i = global(1, dtypes::int32), h = global(2, dtypes::float16);
  auto s = global(3, dtypes::int16), u = global(4, dtypes::uint64), c0 = UOp::const_int(0), c1 = UOp::const_int(1);
  auto uops = flat({f, i, h, s, u,
                    store(i, c0, UOp::make(Ops::BITCAST, dtypes::int32, {load(f, c0)})),
                    store(f, c1, UOp::make(Ops::BITCAST, dtypes::float32, {load(i, c1)})),
                    store(s, c0, UOp::make(Ops::BITCAST, dtypes::int16, {load(h, c0)})),
                    store(h, c1, UOp::make(Ops::BITCAST, dtypes::float16, {load(s, c1)})),
                    store(u, c0, alu(Ops::THREEFRY, dtypes::uint64, {load(u, c0), load(u, c1)}))});
  Num fv{0, -1.5}, iv{0x40490fdb, 0}, hv{0, 0.333251953125}, sv{int64_t(int16_t(0xbc00)), 0};
  Num ux{int64_t(0x0123456789abcdefULL), 0}, ukey{int64_t(0xfedcba9876543210ULL), 0};
  auto res = run("bitcasts", uops, {{dtypes::float32, {fv, Num{}}}, {dtypes::int32, {Num{}, iv}},
                                    {dtypes::float16, {hv, Num{}}}, {dtypes::int16, {Num{}, sv}},
                                    {dtypes::uint64, {ux, ukey}}}, {}, "", device);
  EXPECT_EQ(res[1][0].i, bitcast_num(fv, dtypes::float32, dtypes::int32).i);
  EXPECT_EQ(res[0][1].f, bitcast_num(iv, dtypes::int32, dtypes::float32).f);
  EXPECT_EQ(res[3][0].i, bitcast_num(hv, dtypes::float16, dtypes::int16).i);
  EXPECT_EQ(res[2][1].f, -1.0);
  EXPECT_EQ(res[4][0].i, exec_alu(Ops::THREEFRY, dtypes::uint64, dtypes::uint64, {ux, ukey}).i);
  }
}
