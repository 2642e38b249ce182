// The interpreter's loading phase: a linearized kernel checked by codegen's verify_program (the rules of
// codegen/program.h), then every node decoded once into an Instr (interpreter_plan.h).
#include "runtime/interpreter_plan.h"

#include <algorithm>
#include <unordered_map>

#include "codegen/verify_program.h"
#include "renderer/tensor_core.h"

namespace tg::interp {

namespace {

class PlanBuilder {
 public:
  PlanBuilder(const ProgramSpec& spec, Interpreter::Plan& plan) : spec_(spec), p_(plan) {}

  void build() {
    p_.name = spec_.name;
    p_.uops = spec_.uops;
    p_.n_vars = spec_.vars.size();
    p_.var_bounds.assign(p_.n_vars, {0, 0});  // positions no DEFINE_VAR reads (no name) accept any value
    p_.var_names.assign(p_.n_vars, "");
    for (size_t d = 0; d < spec_.global_size.size(); d++) p_.launch.global[d] = spec_.global_size[d];
    for (size_t d = 0; d < spec_.local_size.size(); d++) p_.launch.local[d] = spec_.local_size[d];
    for (size_t i = 0; i < spec_.uops.size(); i++) decode(int32_t(i));
  }

 private:
  [[noreturn]] void fail(int32_t pos, const std::string& why) const {
    throw Error(prefix(spec_.name) + node_str(pos, *spec_.uops[size_t(pos)]) + " " + why);
  }

  // The interpreter's own limits, beyond codegen/program.h: scalar values only (but the lanes of the warp-wide
  // ops), at most 4 sources (but the ops that list more), and the node kinds it executes.
  void check_executable(int32_t pos, const UOp& u) const {
    const bool wide_op = u.op == Ops::WMMA || u.op == Ops::LDMATRIX || u.op == Ops::WGMMA;
    const bool many_srcs = u.op == Ops::WMMA || u.op == Ops::WGMMA || u.op == Ops::CP_ASYNC ||
                           u.op == Ops::ASYNC_COMMIT || u.op == Ops::ASYNC_WAIT || u.op == Ops::LDMATRIX ||
                           u.op == Ops::BARRIER || u.op == Ops::DEFINE_ACC || u.op == Ops::TMA_LOAD ||
                           u.op == Ops::MBAR_INIT || u.op == Ops::MBAR_EXPECT || u.op == Ops::MBAR_WAIT;
    if (u.dtype.count != 1 && !wide_op) fail(pos, "is a vector: vector dtypes are not supported yet");
    if (u.src.size() > Instr{}.src.size() && !many_srcs) fail(pos, "has too many sources");
    if (!Interpreter::executes(u.op)) fail(pos, "is not a node kind the interpreter executes");
    if (u.op == Ops::GEP && !wide_op_node(*u.src[0]))
      fail(pos, "takes a lane of a WMMA, WGMMA or LDMATRIX (the only vectors here)");
  }
  static bool wide_op_node(const UOp& u) { return u.op == Ops::WMMA || u.op == Ops::LDMATRIX || u.op == Ops::WGMMA; }

  int32_t pos_of(const UOpPtr& u) const { return index_.at(u.get()); }
  int32_t buf_of(const UOpPtr& u) const { return p_.code[size_t(pos_of(u))].buf; }
  DType local_dtype(int32_t buf) const { return p_.locals[size_t(buf - kLocalBase)].first; }

  void decode(int32_t pos) {
    const UOp& u = *spec_.uops[size_t(pos)];
    check_executable(pos, u);
    index_.emplace(&u, pos);
    Instr in;
    in.op = u.op;
    in.dtype = u.dtype;
    for (size_t k = 0; k < u.src.size(); k++) {
      const int32_t slot = p_.code[size_t(pos_of(u.src[k]))].out;
      if (u.op == Ops::WMMA || u.op == Ops::WGMMA || (u.op == Ops::CP_ASYNC && k < 6) ||
          (u.op == Ops::TMA_LOAD && k < 8))
        in.wide.push_back(slot);
      if (k < in.src.size()) in.src[k] = slot;
    }
    in.nsrc = uint8_t(std::min(u.src.size(), in.src.size()));
    if (u.dtype != dtypes::void_ && u.op != Ops::ASSIGN) {
      in.out = p_.n_slots;
      p_.n_slots += u.dtype.count;  // a WMMA's lanes take consecutive slots
    }
    decode_kind(pos, u, in);
    p_.code.push_back(in);
  }

  // What each node kind needs beyond its slots: buffers, launch ids, constants, jump targets, counts.
  void decode_kind(int32_t pos, const UOp& u, Instr& in) {
    switch (u.op) {
      case Ops::DEFINE_GLOBAL: {
        const auto n = size_t(u.get<int64_t>());
        if (p_.buf_dtypes.size() <= n) p_.buf_dtypes.resize(n + 1, dtypes::void_);
        p_.buf_dtypes[n] = u.dtype.scalar_type();
        in.buf = int32_t(n);
        break;
      }
      case Ops::DEFINE_LOCAL:
        in.buf = kLocalBase + int32_t(p_.locals.size());
        p_.locals.push_back({u.dtype.scalar_type(), u.get<NamedRange>().max + 1});
        break;
      case Ops::DEFINE_VAR: {
        const auto& r = u.get<NamedRange>();
        size_t k = 0;
        while (spec_.vars[k].get() != &u) k++;  // (verified: it is there)
        in.aux = int32_t(k);
        p_.var_bounds[k] = {r.min, r.max};
        p_.var_names[k] = r.name;
        break;
      }
      case Ops::SPECIAL: {
        // core_id (a CPU thread index): the launch's global_size[0] instances, run one after another
        const auto& sp = u.get<SpecialArg>();
        in.special = sp.axis == LaunchAxis::LOCAL    ? SpecialKind::kLocal
                     : sp.axis == LaunchAxis::GLOBAL ? SpecialKind::kAbsolute
                                                     : SpecialKind::kGroup;
        in.aux = sp.dim;
        break;
      }
      case Ops::CONST:
        try {
          in.imm = const_num(u);
        } catch (const Error& e) {
          fail(pos, e.what());
        }
        break;
      case Ops::ENDRANGE:
      case Ops::ENDIF:
        in.target = pos_of(u.src[0]);
        p_.code[size_t(in.target)].target = pos;
        break;
      case Ops::GEP:
        in.aux = int32_t(u.get<int64_t>());
        break;
      case Ops::DEFINE_ACC:
        in.src_dtype = u.src[0]->dtype;
        break;
      case Ops::ASSIGN:
        in.out = in.src[0];  // writes the accumulator; readers of this node read it too
        break;
      case Ops::LOAD:
      case Ops::STORE:
        in.buf = buf_of(u.src[0]);
        in.dtype = u.op == Ops::LOAD ? u.dtype : u.src[2]->dtype;
        break;
      case Ops::CP_ASYNC:
      case Ops::LDMATRIX:
      case Ops::TMA_LOAD:
      case Ops::MBAR_INIT:
      case Ops::MBAR_EXPECT:
      case Ops::MBAR_WAIT:
      case Ops::WGMMA:
        return decode_shared(u, in);
      default:
        if (is_alu(u.op) || u.op == Ops::CAST || u.op == Ops::BITCAST)
          in.src_dtype = u.src[u.op == Ops::WHERE ? 1 : 0]->dtype;  // WHERE's first source is the bool condition
        break;
    }
  }

  // The ops whose first source is a shared buffer (the staging's copies and barriers, the warp-wide reads): that
  // buffer and its element dtype, and what else each needs.
  void decode_shared(const UOp& u, Instr& in) {
    in.buf = buf_of(u.src[0]);
    in.dtype = local_dtype(in.buf);
    switch (u.op) {
      case Ops::CP_ASYNC:  // (dst local, dst idx, src global, src idx, gate, valid, after...)
        in.aux = buf_of(u.src[2]);
        in.count = int32_t(u.get<int64_t>());
        break;
      case Ops::LDMATRIX: {  // (local, row idx, after...)
        const LdmatrixArg arg = LdmatrixArg::unpack(u.get<int64_t>());
        in.count = arg.count;
        in.trans = arg.trans;
        break;
      }
      case Ops::TMA_LOAD:  // (dst local, dst idx, TENSOR_MAP, col, row, bar local, bar idx, gate, after...)
        in.aux = buf_of(u.src[2]->src[0]);
        in.count = int32_t(p_.tma_loads.size());
        p_.tma_loads.push_back({TensorMapArg::of(*u.src[2]), buf_of(u.src[5])});
        break;
      case Ops::MBAR_INIT:  // (bar local, idx, gate, after...): its thread count
      case Ops::MBAR_EXPECT:  // (bar local, idx, gate, after...): its bytes
        in.count = int32_t(u.get<int64_t>());
        break;
      case Ops::WGMMA:  // (A's DEFINE_LOCAL, A idx, B's DEFINE_LOCAL, B idx, after, C's lanes)
        in.aux = buf_of(u.src[2]);
        break;
      default:  // MBAR_WAIT (bar local, idx, parity, after...)
        break;
    }
  }

  const ProgramSpec& spec_;
  Interpreter::Plan& p_;
  std::unordered_map<const UOp*, int32_t> index_;  // node -> position
};

}  // namespace

void build_plan(const ProgramSpec& spec, Interpreter::Plan& plan) {
  verify_program(spec);
  PlanBuilder(spec, plan).build();
}

}  // namespace tg::interp
