// The interpreter's loading phase: every node of a linearized kernel decoded once into an Instr, with every
// structural rule of codegen/program.h checked (interpreter_plan.h).
#include "runtime/interpreter_plan.h"

#include <algorithm>
#include <unordered_map>

#include "renderer/tensor_core.h"

namespace tg::interp {

// ---------------------------------------------------------------------------------------------------
// Loading: decode and validate.
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
    set_launch();
    blocks_.push_back(kNone);  // block 0: the kernel body
    open_.push_back({kNone, 0});
    for (size_t i = 0; i < spec_.uops.size(); i++) decode(int32_t(i));
    if (open_.size() > 1) {
      int32_t opener = open_.back().pos;
      fail(opener, "is never closed (missing " +
                       std::string(p_.code[size_t(opener)].op == Ops::RANGE ? "ENDRANGE" : "ENDIF") + ")");
    }
    check_specials();
  }

 private:
  struct Open {
    int32_t pos;    // the RANGE or IF that opened the block
    int32_t block;  // its block id
  };

  [[noreturn]] void fail(int32_t pos, const std::string& why) const {
    throw Error(prefix(spec_.name) + node_str(pos, *spec_.uops[size_t(pos)]) + " " + why);
  }

  void set_launch() {
    auto copy = [&](const std::vector<int64_t>& from, std::array<int64_t, 3>& to, const char* what) {
      if (from.size() > 3) throw Error(prefix(spec_.name) + what + " has more than 3 dimensions");
      for (size_t d = 0; d < from.size(); d++) {
        if (from[d] < 1) throw Error(prefix(spec_.name) + what + " has a dimension < 1");
        to[d] = from[d];
      }
    };
    copy(spec_.global_size, p_.launch.global, "global_size");
    copy(spec_.local_size, p_.launch.local, "local_size");
  }

  // Is a value defined in block `def` visible from block `use`? Only from `def` itself and blocks nested
  // in it, exactly as C scoping would allow.
  bool visible(int32_t def, int32_t use) const {
    for (int32_t b = use; b != kNone; b = blocks_[size_t(b)])
      if (b == def) return true;
    return false;
  }

  void decode(int32_t pos) {
    const UOp& u = *spec_.uops[size_t(pos)];
    if (!index_.emplace(&u, pos).second) fail(pos, "appears twice in the program");
    // vector results, read lane by lane with GEP
    const bool wide_op = u.op == Ops::WMMA || u.op == Ops::LDMATRIX || u.op == Ops::WGMMA;
    const bool many_srcs = u.op == Ops::WMMA || u.op == Ops::WGMMA || u.op == Ops::CP_ASYNC || u.op == Ops::ASYNC_COMMIT ||
                           u.op == Ops::ASYNC_WAIT || u.op == Ops::LDMATRIX;
    if (u.dtype.count != 1 && !wide_op) fail(pos, "is a vector: vector dtypes are not supported yet");
    Instr in;
    in.op = u.op;
    in.dtype = u.dtype;
    if (u.src.size() > in.src.size() && !many_srcs) fail(pos, "has too many sources");
    int32_t cur = open_.back().block;
    for (size_t k = 0; k < u.src.size(); k++) {
      auto it = index_.find(u.src[k].get());
      if (it == index_.end() || it->second == pos)
        fail(pos, "uses a " + std::string(op_name(u.src[k]->op)) + " that is not earlier in the program");
      if (!visible(def_block_[size_t(it->second)], cur))
        fail(pos, "uses uop " + std::to_string(it->second) + " outside the loop or IF that defines it");
      const int32_t slot = p_.code[size_t(it->second)].out;
      if (u.op == Ops::WMMA || u.op == Ops::WGMMA || (u.op == Ops::CP_ASYNC && k < 6)) in.wide.push_back(slot);
      if (k < in.src.size()) in.src[k] = slot;
      // Only ordering sources may be void (a BARRIER's stores, an ENDIF's IF, the BARRIER a LOAD of shared
      // memory waits for): a value read must exist.
      bool ordering = u.op == Ops::BARRIER || u.op == Ops::ENDIF ||
                      (u.op == Ops::LOAD && k == 2 && u.src.size() == 3) || (u.op == Ops::CP_ASYNC && k >= 6) ||
                      u.op == Ops::ASYNC_COMMIT || u.op == Ops::ASYNC_WAIT || (u.op == Ops::LDMATRIX && k >= 2) ||
                      (u.op == Ops::WGMMA && (k == 0 || k == 2 || k == 4));
      if (slot == kNone && !ordering) fail(pos, "reads uop " + std::to_string(it->second) + ", which has no value");
    }
    in.nsrc = uint8_t(u.src.size());
    int32_t def_block = cur;
    if (u.dtype != dtypes::void_ && u.op != Ops::ASSIGN) {
      in.out = p_.n_slots;
      p_.n_slots += u.dtype.count;  // a WMMA's lanes take consecutive slots
    }
    auto need_src = [&](size_t n) {
      if (u.src.size() != n) fail(pos, "needs " + std::to_string(n) + " sources, has " + std::to_string(u.src.size()));
    };
    auto src_pos = [&](size_t k) { return index_.at(u.src[k].get()); };
    auto need_int = [&](size_t k, const char* what) {
      if (!u.src[k]->dtype.is_int()) fail(pos, std::string(what) + " must be an integer, is " + u.src[k]->dtype.repr());
    };
    auto need_bool = [&](size_t k, const char* what) {
      if (!u.src[k]->dtype.is_bool()) fail(pos, std::string(what) + " must be bool, is " + u.src[k]->dtype.repr());
    };

    switch (u.op) {
      case Ops::DEFINE_GLOBAL: {
        need_src(0);
        const int64_t* n = std::get_if<int64_t>(&u.arg);
        if (!u.dtype.ptr || u.dtype.local) fail(pos, "must be a global pointer");
        if (!n || *n < 0 || *n > 4096) fail(pos, "needs a parameter number as arg, has " + u.arg_repr());
        if (p_.buf_dtypes.size() <= size_t(*n)) p_.buf_dtypes.resize(size_t(*n) + 1, dtypes::void_);
        DType& bt = p_.buf_dtypes[size_t(*n)];
        if (bt != dtypes::void_) fail(pos, "repeats parameter " + std::to_string(*n));
        bt = u.dtype.scalar_type();
        in.buf = int32_t(*n);
        break;
      }
      case Ops::DEFINE_LOCAL: {
        need_src(0);
        const auto* r = std::get_if<NamedRange>(&u.arg);
        if (!u.dtype.ptr || !u.dtype.local) fail(pos, "must be a local pointer");
        if (!r || r->min != 0 || r->max < 0 || r->max >= (int64_t(1) << 24))
          fail(pos, "needs a NamedRange arg {name, 0, size-1} of at most 2^24 elements, has " + u.arg_repr());
        in.buf = kLocalBase + int32_t(p_.locals.size());
        p_.locals.push_back({u.dtype.scalar_type(), r->max + 1});
        break;
      }
      case Ops::DEFINE_VAR: {
        need_src(0);
        const auto* r = std::get_if<NamedRange>(&u.arg);
        if (!r || !u.dtype.is_int()) fail(pos, "needs an int dtype and a NamedRange arg");
        size_t k = 0;
        while (k < spec_.vars.size() && spec_.vars[k].get() != &u) k++;
        if (k == spec_.vars.size()) fail(pos, "'" + r->name + "' is not in the kernel's vars");
        in.aux = int32_t(k);
        p_.var_bounds[k] = {r->min, r->max};
        p_.var_names[k] = r->name;
        break;
      }
      case Ops::SPECIAL:
        decode_special(pos, u, in);
        break;
      case Ops::CONST:
        need_src(0);
        try {
          in.imm = const_num(u);
        } catch (const Error& e) {
          fail(pos, e.what());
        }
        break;
      case Ops::RANGE:
        need_src(2);
        if (!u.dtype.is_int()) fail(pos, "must have an integer dtype");
        need_int(0, "start");
        need_int(1, "end");
        def_block = open_block(pos);  // the loop variable exists inside the loop only
        break;
      case Ops::ENDRANGE:
      case Ops::ENDIF: {
        need_src(1);
        Ops opener = u.op == Ops::ENDRANGE ? Ops::RANGE : Ops::IF;
        if (u.src[0]->op != opener) fail(pos, "must close a " + std::string(op_name(opener)));
        if (open_.back().pos != src_pos(0))
          fail(pos, "closes uop " + std::to_string(src_pos(0)) + " but the innermost open block is " +
                        (open_.size() > 1 ? "uop " + std::to_string(open_.back().pos) : "the kernel body"));
        in.target = src_pos(0);
        p_.code[size_t(in.target)].target = pos;
        open_.pop_back();
        break;
      }
      case Ops::IF:
        need_src(1);
        need_bool(0, "gate");
        open_block(pos);
        break;
      case Ops::BARRIER:
        break;  // sources only order it after the stores it waits for
      case Ops::WMMA:
        check_wmma(pos, u);
        break;
      case Ops::WGMMA:
        decode_wgmma(pos, u, in, need_int);
        break;
      case Ops::CP_ASYNC:
        decode_cp_async(pos, u, in, need_int, need_bool);
        break;
      case Ops::ASYNC_COMMIT:
      case Ops::ASYNC_WAIT:
        if (u.dtype != dtypes::void_) fail(pos, "must have dtype void");
        break;  // the interpreter's copies are done when issued
      case Ops::LDMATRIX:
        decode_ldmatrix(pos, u, in, need_int);
        break;
      case Ops::GEP: {
        need_src(1);
        const int64_t* lane = std::get_if<int64_t>(&u.arg);
        if (u.src[0]->op != Ops::WMMA && u.src[0]->op != Ops::LDMATRIX && u.src[0]->op != Ops::WGMMA)
          fail(pos, "takes a lane of a WMMA, WGMMA or LDMATRIX (the only vectors here)");
        if (!lane || *lane < 0 || *lane >= u.src[0]->dtype.count) fail(pos, "has no lane " + u.arg_repr());
        if (u.dtype != u.src[0]->dtype.scalar_type()) fail(pos, "must have its vector's element dtype");
        in.aux = int32_t(*lane);
        break;
      }
      case Ops::DEFINE_ACC:
        // tinygrad also lists the RANGEs an accumulator belongs to after the init; they carry no value.
        if (u.src.empty()) fail(pos, "needs an init source");
        for (size_t k = 1; k < u.src.size(); k++)
          if (u.src[k]->op != Ops::RANGE) fail(pos, "takes only RANGEs after its init");
        in.src_dtype = u.src[0]->dtype;
        break;
      case Ops::ASSIGN: {
        need_src(2);
        if (u.src[0]->op != Ops::DEFINE_ACC) fail(pos, "must assign to a DEFINE_ACC");
        if (u.src[0]->dtype != u.dtype || u.src[1]->dtype != u.dtype)
          fail(pos, "mixes dtypes: acc " + u.src[0]->dtype.repr() + ", value " + u.src[1]->dtype.repr());
        in.out = in.src[0];  // writes the accumulator; readers of this node read it too
        def_block = def_block_[size_t(src_pos(0))];
        break;
      }
      case Ops::LOAD:
      case Ops::STORE:
        decode_memory(pos, u, in, need_int, need_bool);
        break;
      default:
        // Every other node kind was handled above, so what is left and executable is an ALU op.
        if (!Interpreter::executes(u.op)) fail(pos, "is not a node kind of a linearized program (codegen/program.h)");
        check_alu(pos, u);
        // The operands' dtype: WHERE's first source is the bool condition.
        in.src_dtype = u.src[u.op == Ops::WHERE ? 1 : 0]->dtype;
        break;
    }
    def_block_.push_back(def_block);
    p_.code.push_back(in);
  }

  // Operand dtypes as tinygrad's uop spec wants them: a missing CAST in codegen is caught here rather than
  // read as garbage (an int's Num has no float value).
  void check_alu(int32_t pos, const UOp& u) const {
    size_t n = is_unary(u.op) || u.op == Ops::CAST || u.op == Ops::BITCAST ? 1 : is_binary(u.op) ? 2 : 3;
    if (u.src.size() != n) fail(pos, "needs " + std::to_string(n) + " sources, has " + std::to_string(u.src.size()));
    if (u.dtype == dtypes::void_ || u.dtype.ptr) fail(pos, "must have a value dtype");
    const DType x = u.src[0]->dtype;
    if (x == dtypes::void_ || x.ptr) fail(pos, "has an operand of dtype " + x.repr());
    auto same = [&](size_t k, DType want) {
      if (u.src[k]->dtype != want)
        fail(pos, "operand " + std::to_string(k) + " is " + u.src[k]->dtype.repr() + ", expected " + want.repr());
    };
    switch (u.op) {
      case Ops::CAST:
        return;
      case Ops::BITCAST:
        if (x.itemsize() != u.dtype.itemsize()) fail(pos, "changes the size of " + x.repr());
        return;
      case Ops::CMPLT:
      case Ops::CMPNE:
        same(1, x);
        if (!u.dtype.is_bool()) fail(pos, "must give bool");
        return;
      case Ops::WHERE:
        same(0, dtypes::bool_);
        same(1, u.dtype);
        same(2, u.dtype);
        return;
      case Ops::SHL:
      case Ops::SHR:
        same(0, u.dtype);
        if (u.src[1]->dtype != u.dtype) same(1, dtypes::uint32);
        return;
      default:
        for (size_t k = 0; k < n; k++) same(k, u.dtype);
    }
  }

  // WMMA(A's kA registers, B's kB, C's kC) -> kC lanes, a warp-wide op of renderer/tensor_core.h.
  void check_wmma(int32_t pos, const UOp& u) const {
    const std::string* nm = std::get_if<std::string>(&u.arg);
    const TensorCore* tc = nm ? TensorCore::from_name(*nm) : nullptr;
    if (!tc) fail(pos, "names no tensor core: " + u.arg_repr());
    const size_t na = TensorCore::kA, nb = TensorCore::kB, nc = TensorCore::kC;
    if (u.src.size() != na + nb + nc) fail(pos, "needs " + std::to_string(na + nb + nc) + " sources");
    for (size_t k = 0; k < u.src.size(); k++)
      if (u.src[k]->dtype != (k < na + nb ? tc->in : tc->acc))
        fail(pos, "register " + std::to_string(k) + " is " + u.src[k]->dtype.repr());
    if (u.dtype != tc->acc.vec(int(nc))) fail(pos, "must give " + tc->acc.vec(int(nc)).repr());
  }

  int32_t open_block(int32_t pos) {
    auto b = int32_t(blocks_.size());
    blocks_.push_back(open_.back().block);
    open_.push_back({pos, b});
    return b;
  }

  void decode_special(int32_t pos, const UOp& u, Instr& in) {
    const auto* sp = std::get_if<SpecialArg>(&u.arg);
    if (!sp || !u.src.empty() || !u.dtype.is_int()) fail(pos, "needs an int dtype, no sources and a SpecialArg");
    if (sp->dim < 0 || sp->dim > 2 || sp->size < 1) fail(pos, "has no launch dim 0..2 or an empty range");
    if (sp->axis == LaunchAxis::CORE && sp->dim != 0) fail(pos, "'core_id' must be along dim 0");
    // core_id (a CPU thread index): the launch's global_size[0] instances, run one after another
    in.special = sp->axis == LaunchAxis::LOCAL    ? SpecialKind::kLocal
                 : sp->axis == LaunchAxis::GLOBAL ? SpecialKind::kAbsolute
                                                  : SpecialKind::kGroup;
    in.aux = sp->dim;
  }

  template <class NeedInt, class NeedBool>
  void decode_memory(int32_t pos, const UOp& u, Instr& in, NeedInt need_int, NeedBool need_bool) {
    bool load = u.op == Ops::LOAD;
    if (load ? u.src.size() < 2 || u.src.size() > 4 : u.src.size() != 3 && u.src.size() != 4)
      fail(pos, load ? "takes (buf, idx), (buf, idx, barrier or async commit) or (buf, idx, gate, alt)"
                     : "takes (buf, idx, value) or (buf, idx, value, gate)");
    if (load && u.src.size() == 3 && u.src[2]->op != Ops::BARRIER && u.src[2]->op != Ops::ASYNC_COMMIT)
      fail(pos, "has a third source that is not a BARRIER or ASYNC_COMMIT");
    if (u.src[0]->op != Ops::DEFINE_GLOBAL && u.src[0]->op != Ops::DEFINE_LOCAL)
      fail(pos, "must address a DEFINE_GLOBAL or DEFINE_LOCAL");
    need_int(1, "index");
    in.buf = p_.code[size_t(index_.at(u.src[0].get()))].buf;
    DType elem = in.buf >= kLocalBase ? p_.locals[size_t(in.buf - kLocalBase)].first : p_.buf_dtypes[size_t(in.buf)];
    DType value = load ? u.dtype : u.src[2]->dtype;
    if (!load && u.dtype != dtypes::void_) fail(pos, "must have dtype void");
    if (value != elem)
      fail(pos, "moves " + value.repr() + " through a pointer to " + elem.repr() + " (buffer " +
                    std::to_string(in.buf) + ")");
    if (load && u.src.size() == 4) {
      need_bool(2, "gate");
      if (u.src[3]->dtype != u.dtype) fail(pos, "has an alt value of dtype " + u.src[3]->dtype.repr());
    }
    if (!load && u.src.size() == 4) need_bool(3, "gate");
    in.dtype = value;
  }

  // CP_ASYNC (dst local, dst idx, src global, src idx, gate, valid, after...): n elements of one dtype.
  template <class NeedInt, class NeedBool>
  void decode_cp_async(int32_t pos, const UOp& u, Instr& in, NeedInt need_int, NeedBool need_bool) {
    const int64_t* n = std::get_if<int64_t>(&u.arg);
    if (u.src.size() < 6) fail(pos, "takes (dst, dst idx, src, src idx, gate, valid, after...)");
    if (u.src[0]->op != Ops::DEFINE_LOCAL || u.src[2]->op != Ops::DEFINE_GLOBAL)
      fail(pos, "copies from a DEFINE_GLOBAL to a DEFINE_LOCAL");
    if (!n || *n < 1 || *n > 64) fail(pos, "needs an element count 1..64 as arg, has " + u.arg_repr());
    if (u.dtype != dtypes::void_) fail(pos, "must have dtype void");
    need_int(1, "dst index");
    need_int(3, "src index");
    need_bool(4, "gate");
    need_bool(5, "valid");
    in.buf = p_.code[size_t(index_.at(u.src[0].get()))].buf;
    in.aux = p_.code[size_t(index_.at(u.src[2].get()))].buf;
    in.count = int32_t(*n);
    in.dtype = p_.locals[size_t(in.buf - kLocalBase)].first;
    if (p_.buf_dtypes[size_t(in.aux)] != in.dtype)
      fail(pos, "copies " + p_.buf_dtypes[size_t(in.aux)].repr() + " into shared " + in.dtype.repr());
  }

  // LDMATRIX (local, row idx, after...): count 8x8 matrices of a 16-bit dtype.
  template <class NeedInt>
  void decode_ldmatrix(int32_t pos, const UOp& u, Instr& in, NeedInt need_int) {
    const int64_t* a = std::get_if<int64_t>(&u.arg);
    if (u.src.size() < 2 || u.src[0]->op != Ops::DEFINE_LOCAL) fail(pos, "takes (DEFINE_LOCAL, row idx, after...)");
    need_int(1, "row index");
    LdmatrixArg arg = a ? LdmatrixArg::unpack(*a) : LdmatrixArg{0, false};
    if (arg.count != 1 && arg.count != 2 && arg.count != 4) fail(pos, "needs 1, 2 or 4 matrices, has " + u.arg_repr());
    in.buf = p_.code[size_t(index_.at(u.src[0].get()))].buf;
    const DType elem = p_.locals[size_t(in.buf - kLocalBase)].first;
    if (elem.itemsize() != 2 || u.dtype != elem.vec(2 * arg.count))
      fail(pos, "must give " + std::to_string(2 * arg.count) + " lanes of the 16-bit elements of its buffer (" +
                    elem.repr() + ")");
    in.dtype = elem;
    in.count = arg.count;
    in.trans = arg.trans;
  }

  // WGMMA (A's DEFINE_LOCAL, A idx, B's DEFINE_LOCAL, B idx, after, C's n / 2 lanes) -> n / 2 float lanes.
  template <class NeedInt>
  void decode_wgmma(int32_t pos, const UOp& u, Instr& in, NeedInt need_int) {
    const auto* packed = std::get_if<std::vector<int64_t>>(&u.arg);
    if (!packed) fail(pos, "needs a WgmmaArg, has " + u.arg_repr());
    WgmmaArg arg;
    try {
      arg = WgmmaArg::unpack(*packed);
    } catch (const Error& e) {
      fail(pos, e.what());
    }
    const size_t lanes = size_t(arg.n / 2);
    if (u.src.size() != 5 + lanes) fail(pos, "needs " + std::to_string(5 + lanes) + " sources");
    if (u.src[0]->op != Ops::DEFINE_LOCAL || u.src[2]->op != Ops::DEFINE_LOCAL) fail(pos, "reads A and B from DEFINE_LOCALs");
    need_int(1, "A index");
    need_int(3, "B index");
    in.buf = p_.code[size_t(index_.at(u.src[0].get()))].buf;
    in.aux = p_.code[size_t(index_.at(u.src[2].get()))].buf;
    const DType in_dt = arg.bf16 ? dtypes::bfloat16 : dtypes::float16;
    for (int32_t b : {in.buf, in.aux})
      if (p_.locals[size_t(b - kLocalBase)].first != in_dt) fail(pos, "reads " + in_dt.repr() + " operands from another dtype's buffer");
    in.dtype = in_dt;
    for (size_t k = 5; k < u.src.size(); k++)
      if (u.src[k]->dtype != dtypes::float32) fail(pos, "C lane " + std::to_string(k - 5) + " is " + u.src[k]->dtype.repr());
    if (u.dtype != dtypes::float32.vec(int(lanes))) fail(pos, "must give " + dtypes::float32.vec(int(lanes)).repr());
  }

  // The launch must be exactly the grid the SPECIALs describe, so no thread is lost or run twice.
  void check_specials() {
    std::array<int64_t, 3> g{0, 0, 0}, l{0, 0, 0}, a{0, 0, 0};  // extent named by gidx/lidx/idx (0: none)
    for (size_t i = 0; i < p_.code.size(); i++) {
      if (p_.code[i].op != Ops::SPECIAL) continue;
      const Instr& in = p_.code[i];
      auto ext = spec_.uops[i]->get<SpecialArg>().size;
      auto& slot = in.special == SpecialKind::kGroup ? g : in.special == SpecialKind::kLocal ? l : a;
      if (slot[size_t(in.aux)] != 0 && slot[size_t(in.aux)] != ext)
        fail(int32_t(i), "disagrees with another SPECIAL of its name");
      slot[size_t(in.aux)] = ext;
    }
    const Launch& ln = p_.launch;
    for (size_t d = 0; d < 3; d++) {
      auto bad = [&](const std::string& what) {
        throw Error(prefix(spec_.name) + "launch global_size " + dims(ln.global) + " local_size " + dims(ln.local) +
                    " does not match the kernel's SPECIALs: " + what);
      };
      auto dn = std::to_string(d);
      if (a[d] && (g[d] || l[d])) bad("idx" + dn + " together with gidx" + dn + "/lidx" + dn);
      if (a[d] && a[d] != ln.global[d] * ln.local[d]) bad("idx" + dn + " spans " + std::to_string(a[d]));
      if (!a[d] && ln.global[d] != (g[d] ? g[d] : 1)) bad("gidx" + dn + " spans " + std::to_string(g[d] ? g[d] : 1));
      if (!a[d] && ln.local[d] != (l[d] ? l[d] : 1)) bad("lidx" + dn + " spans " + std::to_string(l[d] ? l[d] : 1));
    }
  }

  static std::string dims(const std::array<int64_t, 3>& v) {
    return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
  }

  const ProgramSpec& spec_;
  Interpreter::Plan& p_;
  std::unordered_map<const UOp*, int32_t> index_;  // node -> position
  std::vector<int32_t> def_block_;                 // per position: the block its value lives in
  std::vector<int32_t> blocks_;                    // per block: its parent (kNone for the kernel body)
  std::vector<Open> open_;                         // blocks open at the current position
};

}  // namespace

void build_plan(const ProgramSpec& spec, Interpreter::Plan& plan) { PlanBuilder(spec, plan).build(); }

}  // namespace tg::interp
