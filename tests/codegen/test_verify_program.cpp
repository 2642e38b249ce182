// verify_program (codegen/verify_program.h): the rules of codegen/program.h, checked once for every renderer and
// the interpreter. The interpreter's tests cover the scalar rules through it; these cover what only compiled
// backends receive (vectors) and that every kernel the engine makes passes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/kernel_source.h"
#include "codegen/kernel.h"
#include "codegen/opt/heuristic.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "codegen/verify_program.h"
#include "renderer/c.h"
#include "renderer/cuda.h"
#include "tg/error.h"
#include "tg/tg.h"

namespace tg {
namespace {

// A float4 add: out[4i..4i+3] = a[4i..] + b[4i..], i < 4, as a CPU kernel with vector loads would be.
struct VecAdd {
  UOpPtr out = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(), {}, int64_t(0));
  UOpPtr a = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(), {}, int64_t(1));
  UOpPtr b = UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.pointer(), {}, int64_t(2));
  UOpPtr zero = UOp::const_int(0, dtypes::int32), four = UOp::const_int(4, dtypes::int32);
  UOpPtr r = UOp::make(Ops::RANGE, dtypes::int32, {zero, four}, int64_t(0));
  UOpPtr idx = UOp::alu(Ops::MUL, {r, four});
  UOpPtr la = UOp::make(Ops::LOAD, dtypes::float32.vec(4), {a, idx});
  UOpPtr lb = UOp::make(Ops::LOAD, dtypes::float32.vec(4), {b, idx});

  ProgramSpec spec(const UOpPtr& value) const {
    ProgramSpec s;
    s.name = "E_4_4";
    UOpPtr st = UOp::make(Ops::STORE, dtypes::void_, {out, idx, value});
    s.uops = {out, a, b, zero, four, r, idx, la, lb};
    for (const UOpPtr& x : toposort_nodes(value))
      if (std::find(s.uops.begin(), s.uops.end(), x) == s.uops.end()) s.uops.push_back(x);
    s.uops.push_back(st);
    s.uops.push_back(UOp::make(Ops::ENDRANGE, dtypes::void_, {r}));
    s.n_bufs = 3;
    return s;
  }
  static std::vector<UOpPtr> toposort_nodes(const UOpPtr& x) {
    std::vector<UOpPtr> out;
    for (const UOp* u : toposort(x)) out.push_back(u->ptr());
    return out;
  }
};

std::string error_of(const ProgramSpec& spec) {
  try {
    verify_program(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(VerifyProgram, VectorProgramPasses) {
  VecAdd k;
  EXPECT_EQ(error_of(k.spec(UOp::alu(Ops::ADD, {k.la, k.lb}))), "");
  // lanes built and taken apart
  UOpPtr x = UOp::make(Ops::GEP, dtypes::float32, {k.la}, int64_t(3));
  UOpPtr v = UOp::make(Ops::VECTORIZE, dtypes::float32.vec(4), {x, x, x, x});
  EXPECT_EQ(error_of(k.spec(UOp::alu(Ops::MUL, {v, k.lb}))), "");
}

TEST(VerifyProgram, VectorRulesAreChecked) {
  VecAdd k;
  UOpPtr x = UOp::make(Ops::GEP, dtypes::float32, {k.la}, int64_t(0));
  // a vector op on a scalar operand
  EXPECT_NE(error_of(k.spec(UOp::make(Ops::ADD, dtypes::float32.vec(4), {k.la, x}))).find("operand 1 is dtypes.float,"),
            std::string::npos);
  // a VECTORIZE short of a lane
  UOpPtr v3 = UOp::make(Ops::VECTORIZE, dtypes::float32.vec(4), {x, x, x});
  EXPECT_NE(error_of(k.spec(v3)).find("one source per lane"), std::string::npos);
  // a lane past the vector's end
  UOpPtr g = UOp::make(Ops::GEP, dtypes::float32, {k.la}, int64_t(4));
  UOpPtr v = UOp::make(Ops::VECTORIZE, dtypes::float32.vec(4), {g, g, g, g});
  EXPECT_NE(error_of(k.spec(v)).find("has no lane 4"), std::string::npos);
  // a cast that changes the lane count
  UOpPtr c = UOp::make(Ops::CAST, dtypes::float32.vec(2), {k.la});
  EXPECT_NE(error_of(k.spec(UOp::make(Ops::VECTORIZE, dtypes::float32.vec(4),
                                      {UOp::make(Ops::GEP, dtypes::float32, {c}, int64_t(0)), x, x, x})))
                .find("changes the lane count"),
            std::string::npos);
  // a vector comparison that gives a scalar bool
  UOpPtr cmp = UOp::make(Ops::CMPLT, dtypes::bool_, {k.la, k.lb});
  EXPECT_NE(error_of(k.spec(UOp::make(Ops::WHERE, dtypes::float32, {cmp, x, x}))).find("must give bool"),
            std::string::npos);
}

TEST(VerifyProgram, MemoryMovesTheBuffersElements) {
  VecAdd k;
  UOpPtr half = UOp::make(Ops::LOAD, dtypes::float16.vec(4), {k.a, k.idx});
  EXPECT_NE(error_of(k.spec(UOp::make(Ops::CAST, dtypes::float32.vec(4), {half}))).find("through a pointer"),
            std::string::npos);
}

TEST(VerifyProgram, LoweringOnlyNodesAreRejected) {
  VecAdd k;
  UOpPtr u = UOp::make(Ops::UNROLL, dtypes::float32.vec(4), {k.la}, int64_t(0));
  EXPECT_NE(error_of(k.spec(u)).find("is not a node kind of a linearized program"), std::string::npos);
}

TEST(VerifyProgram, NamesTheKernelAndTheNode) {
  VecAdd k;
  ProgramSpec s = k.spec(UOp::alu(Ops::ADD, {k.la, k.lb}));
  std::swap(s.uops[7], s.uops[6]);  // the load before its index
  EXPECT_EQ(error_of(s),
            "kernel 'E_4_4': uop 6 (LOAD dtypes.float.vec(4)) uses a MUL that is not earlier in the program");
}

TEST(VerifyProgram, LaunchMustMatchTheSpecials) {
  VecAdd k;
  ProgramSpec s = k.spec(UOp::alu(Ops::ADD, {k.la, k.lb}));
  s.global_size = {2, 1, 1};
  EXPECT_NE(error_of(s).find("does not match the kernel's SPECIALs: gidx0 spans 1"), std::string::npos);
}

TEST(VerifyProgram, EveryKernelOfEveryRendererPasses) {
  // the engine verifies each program it makes; here the same for kernels lowered for C and for CUDA,
  // tensor cores and grouped reduces included
  ClangRenderer c;
  CUDARenderer cuda("sm_90");
  std::vector<Tensor> programs{
      Tensor::empty({64, 64}, {.dtype = dtypes::float16}).matmul(Tensor::empty({64, 64}, {.dtype = dtypes::float16})),
      Tensor::empty({33, 65}).matmul(Tensor::empty({65, 17})), Tensor::empty({64, 300}).softmax(-1),
      Tensor::empty({1 << 16}).sum(), Tensor::empty({31, 7}) + 1};
  std::vector<UOpPtr> asts;
  for (const Tensor& t : programs) asts.push_back(tgtest::last_ast(t));  // (scheduling marks t realized)
  for (const Renderer* r : std::vector<const Renderer*>{&c, &cuda})
    for (const UOpPtr& ast : asts) {
      Kernel k(ast, *r);
      hand_coded_optimizations(k);
      ProgramSpec s;
      s.name = k.name();
      s.uops = linearize_kernel(lower_kernel(k), {.sequential_sums = true});
      for (const UOpPtr& u : s.uops)
        if (u->op == Ops::SPECIAL) {
          const auto& sp = u->get<SpecialArg>();
          (sp.axis == LaunchAxis::LOCAL ? s.local_size : s.global_size)[size_t(sp.dim)] = sp.size;
        } else if (u->op == Ops::DEFINE_VAR) {
          s.vars.push_back(u);
        }
      EXPECT_EQ(error_of(s), "") << r->device() << " " << s.name;
    }
}

}  // namespace tg
