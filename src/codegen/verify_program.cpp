// verify_program: codegen/program.h's rules, checked node by node in one walk (see verify_program.h).
#include "codegen/verify_program.h"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "renderer/tensor_core.h"
#include "renderer/tensor_map.h"
#include "tg/error.h"

namespace tg {

namespace {

// The node kinds of a linearized program (codegen/program.h), ALU ops after BARRIER.
constexpr Ops kProgramOps[] = {
    Ops::DEFINE_GLOBAL, Ops::DEFINE_VAR, Ops::SPECIAL, Ops::CONST, Ops::RANGE, Ops::ENDRANGE, Ops::DEFINE_ACC,
    Ops::ASSIGN, Ops::LOAD, Ops::STORE, Ops::IF, Ops::ENDIF, Ops::DEFINE_LOCAL, Ops::BARRIER, Ops::WMMA, Ops::GEP,
    Ops::VECTORIZE, Ops::CP_ASYNC, Ops::ASYNC_COMMIT, Ops::ASYNC_WAIT, Ops::LDMATRIX, Ops::WGMMA, Ops::TENSOR_MAP,
    Ops::TMA_LOAD, Ops::MBAR_INIT, Ops::MBAR_EXPECT, Ops::MBAR_WAIT, Ops::PREFETCH,
    // ALU
    Ops::ADD, Ops::MUL, Ops::SUB, Ops::IDIV, Ops::MOD, Ops::MAX, Ops::CMPLT, Ops::CMPNE, Ops::AND, Ops::OR, Ops::XOR,
    Ops::SHL, Ops::SHR, Ops::FDIV, Ops::WHERE, Ops::MULACC, Ops::DOT4, Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT,
    Ops::RECIP, Ops::NEG, Ops::TRUNC, Ops::CAST, Ops::BITCAST};

constexpr int32_t kBody = -1;  // the kernel body: the block outside every loop and IF

class Verifier {
 public:
  explicit Verifier(const ProgramSpec& spec) : spec_(spec) {}

  void run() {
    open_.push_back({kBody, 0});
    blocks_.push_back(kBody);
    for (size_t i = 0; i < spec_.uops.size(); i++) node(int32_t(i));
    if (open_.size() > 1) {
      const int32_t opener = open_.back().pos;
      fail(opener, std::string("is never closed (missing ") +
                       (spec_.uops[size_t(opener)]->op == Ops::RANGE ? "ENDRANGE" : "ENDIF") + ")");
    }
    launch();
    for (int64_t n = 0; n < int64_t(tensor_maps_.size()); n++)  // kernel parameters, in this order
      if (!tensor_maps_.count(n)) fail_launch("has no tensor map numbered " + std::to_string(n) + " (expected 0 .. " +
                                              std::to_string(tensor_maps_.size() - 1) + ")");
  }

 private:
  struct Open {
    int32_t pos;    // the RANGE or IF that opened the block
    int32_t block;  // its block id
  };

  [[noreturn]] void fail(int32_t pos, const std::string& why) const {
    const UOp& u = *spec_.uops[size_t(pos)];
    throw Error("kernel '" + spec_.name + "': uop " + std::to_string(pos) + " (" + op_name(u.op) + " " +
                u.dtype.repr() + ") " + why);
  }
  [[noreturn]] void fail_launch(const std::string& why) const { throw Error("kernel '" + spec_.name + "': " + why); }

  // A value defined in block `def` is visible from `def` and the blocks nested in it, as C scoping allows.
  bool visible(int32_t def, int32_t use) const {
    for (int32_t b = use; b != kBody; b = blocks_[size_t(b)])
      if (b == def) return true;
    return false;
  }

  // Sources that only order a node (they need not have a value).
  static bool ordering(const UOp& u, size_t k) {
    switch (u.op) {
      case Ops::BARRIER:
      case Ops::ENDIF:
      case Ops::ENDRANGE:
      case Ops::ASYNC_COMMIT:
      case Ops::ASYNC_WAIT:
        return true;
      case Ops::LOAD:
        return k == 2 && u.src.size() == 3;
      case Ops::CP_ASYNC:
        return k >= 6;
      case Ops::LDMATRIX:
        return k >= 2;
      case Ops::TMA_LOAD:
        return k >= 8;
      case Ops::MBAR_INIT:
      case Ops::MBAR_EXPECT:
      case Ops::MBAR_WAIT:
        return k >= 3;
      case Ops::WGMMA:
        return k == 0 || k == 2 || k == 4;
      case Ops::DEFINE_ACC:
        return k >= 1;
      default:
        return false;
    }
  }

  void node(int32_t pos) {
    const UOp& u = *spec_.uops[size_t(pos)];
    if (!index_.emplace(&u, pos).second) fail(pos, "appears twice in the program");
    if (!is_program_op(u.op)) fail(pos, "is not a node kind of a linearized program (codegen/program.h)");
    const int32_t cur = open_.back().block;
    for (size_t k = 0; k < u.src.size(); k++) {
      auto it = index_.find(u.src[k].get());
      if (it == index_.end() || it->second == pos)
        fail(pos, "uses a " + std::string(op_name(u.src[k]->op)) + " that is not earlier in the program");
      if (!visible(def_block_[size_t(it->second)], cur))
        fail(pos, "uses uop " + std::to_string(it->second) + " outside the loop or IF that defines it");
      if (u.src[k]->dtype == dtypes::void_ && !ordering(u, k))
        fail(pos, "reads uop " + std::to_string(it->second) + ", which has no value");
    }
    int32_t def_block = cur;
    switch (u.op) {
      case Ops::RANGE:
        need_src(pos, 2);
        if (!u.dtype.is_int()) fail(pos, "must have an integer dtype");
        need_int(pos, 0, "start");
        need_int(pos, 1, "end");
        def_block = open_block(pos);  // the loop variable exists inside the loop only
        break;
      case Ops::IF:
        need_src(pos, 1);
        need_bool(pos, 0, "gate");
        open_block(pos);
        break;
      case Ops::ENDRANGE:
      case Ops::ENDIF:
        close_block(pos, u);
        break;
      case Ops::ASSIGN:
        need_src(pos, 2);
        if (u.src[0]->op != Ops::DEFINE_ACC) fail(pos, "must assign to a DEFINE_ACC");
        if (u.src[0]->dtype != u.dtype || u.src[1]->dtype != u.dtype)
          fail(pos, "mixes dtypes: acc " + u.src[0]->dtype.repr() + ", value " + u.src[1]->dtype.repr());
        def_block = def_block_[size_t(index_.at(u.src[0].get()))];  // readers after the loop read the accumulator
        break;
      default:
        check(pos, u);
    }
    def_block_.push_back(def_block);
  }

  void check(int32_t pos, const UOp& u) {
    switch (u.op) {
      case Ops::DEFINE_GLOBAL:
        return define_global(pos, u);
      case Ops::DEFINE_LOCAL: {
        need_src(pos, 0);
        const auto* r = std::get_if<NamedRange>(&u.arg);
        if (!u.dtype.ptr || !u.dtype.local) fail(pos, "must be a local pointer");
        if (!r || r->min != 0 || r->max < 0 || r->max >= (int64_t(1) << 24))
          fail(pos, "needs a NamedRange arg {name, 0, size-1} of at most 2^24 elements, has " + u.arg_repr());
        return;
      }
      case Ops::DEFINE_VAR: {
        need_src(pos, 0);
        const auto* r = std::get_if<NamedRange>(&u.arg);
        if (!r || !u.dtype.is_int()) fail(pos, "needs an int dtype and a NamedRange arg");
        if (std::none_of(spec_.vars.begin(), spec_.vars.end(), [&](const UOpPtr& v) { return v.get() == &u; }))
          fail(pos, "'" + r->name + "' is not in the kernel's vars");
        return;
      }
      case Ops::SPECIAL:
        return special(pos, u);
      case Ops::CONST:
        need_src(pos, 0);
        if (u.dtype.count != 1 || u.dtype.ptr || u.dtype == dtypes::void_) fail(pos, "must be a scalar");
        if (!std::holds_alternative<bool>(u.arg) && !std::holds_alternative<int64_t>(u.arg) &&
            !std::holds_alternative<double>(u.arg))
          fail(pos, "CONST arg is not a bool, int or float: " + u.arg_repr());
        return;
      case Ops::DEFINE_ACC:
        // tinygrad also lists the RANGEs an accumulator belongs to after the init; they carry no value.
        if (u.src.empty()) fail(pos, "needs an init source");
        if (u.src[0]->dtype != u.dtype) fail(pos, "has an init of dtype " + u.src[0]->dtype.repr());
        for (size_t k = 1; k < u.src.size(); k++)
          if (u.src[k]->op != Ops::RANGE) fail(pos, "takes only RANGEs after its init");
        return;
      case Ops::BARRIER:
      case Ops::ASYNC_COMMIT:
      case Ops::ASYNC_WAIT:
        if (u.dtype != dtypes::void_) fail(pos, "must have dtype void");
        return;  // sources only order it
      case Ops::VECTORIZE:
        if (u.dtype.count < 2 || u.src.size() != size_t(u.dtype.count)) fail(pos, "needs one source per lane");
        for (size_t k = 0; k < u.src.size(); k++)
          if (u.src[k]->dtype != u.dtype.scalar_type())
            fail(pos, "lane " + std::to_string(k) + " is " + u.src[k]->dtype.repr());
        return;
      case Ops::GEP: {
        need_src(pos, 1);
        const int64_t* lane = std::get_if<int64_t>(&u.arg);
        if (!lane || *lane < 0 || *lane >= u.src[0]->dtype.count) fail(pos, "has no lane " + u.arg_repr());
        if (u.dtype != u.src[0]->dtype.scalar_type()) fail(pos, "must have its vector's element dtype");
        return;
      }
      case Ops::LOAD:
      case Ops::STORE:
        return memory(pos, u);
      case Ops::PREFETCH:
        return prefetch(pos, u);
      case Ops::WMMA:
        return wmma(pos, u);
      case Ops::WGMMA:
        return wgmma(pos, u);
      case Ops::CP_ASYNC:
        return cp_async(pos, u);
      case Ops::LDMATRIX:
        return ldmatrix(pos, u);
      case Ops::TENSOR_MAP:
        return tensor_map(pos, u);
      case Ops::TMA_LOAD:
        return tma_load(pos, u);
      case Ops::MBAR_INIT:
      case Ops::MBAR_EXPECT:
      case Ops::MBAR_WAIT:
        return mbarrier(pos, u);
      default:
        return alu(pos, u);
    }
  }

  void need_src(int32_t pos, size_t n) const {
    const UOp& u = *spec_.uops[size_t(pos)];
    if (u.src.size() != n) fail(pos, "needs " + std::to_string(n) + " sources, has " + std::to_string(u.src.size()));
  }
  void need_int(int32_t pos, size_t k, const char* what) const {
    const DType dt = spec_.uops[size_t(pos)]->src[k]->dtype;
    if (!dt.is_int() || dt.count != 1) fail(pos, std::string(what) + " must be an integer, is " + dt.repr());
  }
  void need_bool(int32_t pos, size_t k, const char* what) const {
    const DType dt = spec_.uops[size_t(pos)]->src[k]->dtype;
    if (!dt.is_bool() || dt.count != 1) fail(pos, std::string(what) + " must be bool, is " + dt.repr());
  }
  // The element dtype of the buffer a pointer node (DEFINE_GLOBAL or DEFINE_LOCAL) points to.
  DType element(int32_t pos, const UOpPtr& buf, bool local_only = false) const {
    if (buf->op != Ops::DEFINE_LOCAL && (local_only || buf->op != Ops::DEFINE_GLOBAL))
      fail(pos, local_only ? "must address a DEFINE_LOCAL" : "must address a DEFINE_GLOBAL or DEFINE_LOCAL");
    return buf->dtype.scalar_type();
  }

  int32_t open_block(int32_t pos) {
    auto b = int32_t(blocks_.size());
    blocks_.push_back(open_.back().block);
    open_.push_back({pos, b});
    return b;
  }

  void close_block(int32_t pos, const UOp& u) {
    need_src(pos, 1);
    const Ops opener = u.op == Ops::ENDRANGE ? Ops::RANGE : Ops::IF;
    if (u.src[0]->op != opener) fail(pos, "must close a " + std::string(op_name(opener)));
    const int32_t target = index_.at(u.src[0].get());
    if (open_.back().pos != target)
      fail(pos, "closes uop " + std::to_string(target) + " but the innermost open block is " +
                    (open_.size() > 1 ? "uop " + std::to_string(open_.back().pos) : "the kernel body"));
    open_.pop_back();
  }

  void define_global(int32_t pos, const UOp& u) {
    need_src(pos, 0);
    const int64_t* n = std::get_if<int64_t>(&u.arg);
    if (!u.dtype.ptr || u.dtype.local) fail(pos, "must be a global pointer");
    if (!n || *n < 0 || *n > 4096) fail(pos, "needs a parameter number as arg, has " + u.arg_repr());
    if (!params_.emplace(*n, pos).second) fail(pos, "repeats parameter " + std::to_string(*n));
  }

  void special(int32_t pos, const UOp& u) {
    const auto* sp = std::get_if<SpecialArg>(&u.arg);
    if (!sp || !u.src.empty() || !u.dtype.is_int()) fail(pos, "needs an int dtype, no sources and a SpecialArg");
    if (sp->dim < 0 || sp->dim > 2 || sp->size < 1) fail(pos, "has no launch dim 0..2 or an empty range");
    if (sp->axis == LaunchAxis::CORE && sp->dim != 0) fail(pos, "'core_id' must be along dim 0");
    // core_id runs global_size[0] instances of a CPU kernel: it spans the grid's dim 0, as a block index does
    auto& extent = sp->axis == LaunchAxis::LOCAL ? local_ : sp->axis == LaunchAxis::GLOBAL ? absolute_ : group_;
    int64_t& e = extent[size_t(sp->dim)];
    if (e != 0 && e != sp->size) fail(pos, "disagrees with another SPECIAL of its name");
    e = sp->size;
  }

  // LOAD (buf, idx), (buf, idx, barrier or async commit), (buf, idx, gate, alt); STORE (buf, idx, value[, gate]).
  // A vector moves consecutive elements of its buffer's element dtype.
  void memory(int32_t pos, const UOp& u) const {
    const bool load = u.op == Ops::LOAD;
    if (load ? u.src.size() < 2 || u.src.size() > 4 : u.src.size() != 3 && u.src.size() != 4)
      fail(pos, load ? "takes (buf, idx), (buf, idx, barrier or async commit) or (buf, idx, gate, alt)"
                     : "takes (buf, idx, value) or (buf, idx, value, gate)");
    if (load && u.src.size() == 3 && u.src[2]->op != Ops::BARRIER && u.src[2]->op != Ops::ASYNC_COMMIT)
      fail(pos, "has a third source that is not a BARRIER or ASYNC_COMMIT");
    const DType elem = element(pos, u.src[0]);
    need_int(pos, 1, "index");
    const DType value = load ? u.dtype : u.src[2]->dtype;
    if (!load && u.dtype != dtypes::void_) fail(pos, "must have dtype void");
    if (value.scalar_type() != elem || value.ptr)
      fail(pos,
           "moves " + value.repr() + " through a pointer to " + elem.repr() + " (buffer " + u.src[0]->arg_repr() + ")");
    if (load && u.src.size() == 4) {
      need_bool(pos, 2, "gate");
      if (u.src[3]->dtype != u.dtype) fail(pos, "has an alt value of dtype " + u.src[3]->dtype.repr());
    }
    if (!load && u.src.size() == 4) need_bool(pos, 3, "gate");
  }

  // PREFETCH(buf, index): a hint about a global buffer's element (codegen/prefetch.h); it has no value.
  void prefetch(int32_t pos, const UOp& u) const {
    need_src(pos, 2);
    element(pos, u.src[0]);
    need_int(pos, 1, "index");
    if (u.dtype != dtypes::void_) fail(pos, "must have dtype void");
  }

  // Operand dtypes as tinygrad's uop spec wants them: a missing CAST is caught here, not read as garbage.
  // A vector op's operands are vectors of as many lanes.
  void alu(int32_t pos, const UOp& u) const {
    const size_t n = is_unary(u.op) || u.op == Ops::CAST || u.op == Ops::BITCAST ? 1 : is_binary(u.op) ? 2 : 3;
    need_src(pos, n);
    if (u.dtype == dtypes::void_ || u.dtype.ptr) fail(pos, "must have a value dtype");
    const DType x = u.src[0]->dtype;
    if (x == dtypes::void_ || x.ptr) fail(pos, "has an operand of dtype " + x.repr());
    auto same = [&](size_t k, DType want) {
      if (u.src[k]->dtype != want)
        fail(pos, "operand " + std::to_string(k) + " is " + u.src[k]->dtype.repr() + ", expected " + want.repr());
    };
    const int lanes = u.dtype.count;
    switch (u.op) {
      case Ops::CAST:
        if (x.count != lanes) fail(pos, "changes the lane count of " + x.repr());
        return;
      case Ops::BITCAST:
        if (x.itemsize() * size_t(x.count) != u.dtype.itemsize() * size_t(lanes))
          fail(pos, "changes the size of " + x.repr());
        return;
      case Ops::CMPLT:
      case Ops::CMPNE:
        same(1, x);
        if (!u.dtype.is_bool() || x.count != lanes) fail(pos, "must give bool");
        return;
      case Ops::WHERE:
        same(0, lanes == 1 ? dtypes::bool_ : dtypes::bool_.vec(lanes));
        same(1, u.dtype);
        same(2, u.dtype);
        return;
      case Ops::SHL:
      case Ops::SHR:
        same(0, u.dtype);
        if (u.src[1]->dtype != u.dtype) same(1, lanes == 1 ? dtypes::uint32 : dtypes::uint32.vec(lanes));
        return;
      default:
        for (size_t k = 0; k < n; k++) same(k, u.dtype);
    }
  }

  // WMMA(A's a_regs() registers, B's b_regs(), C's kC) -> kC lanes, a warp-wide op of renderer/tensor_core.h.
  void wmma(int32_t pos, const UOp& u) const {
    const std::string* nm = std::get_if<std::string>(&u.arg);
    const TensorCore* tc = nm ? TensorCore::from_name(*nm) : nullptr;
    if (!tc) fail(pos, "names no tensor core: " + u.arg_repr());
    const size_t na = size_t(tc->a_regs()), nb = size_t(tc->b_regs()), nc = TensorCore::kC;
    if (u.src.size() != na + nb + nc) fail(pos, "needs " + std::to_string(na + nb + nc) + " sources");
    for (size_t k = 0; k < u.src.size(); k++)
      if (u.src[k]->dtype != (k < na + nb ? tc->in : tc->acc))
        fail(pos, "register " + std::to_string(k) + " is " + u.src[k]->dtype.repr());
    if (u.dtype != tc->acc.vec(int(nc))) fail(pos, "must give " + tc->acc.vec(int(nc)).repr());
  }

  // WGMMA (A's DEFINE_LOCAL, A idx, B's DEFINE_LOCAL, B idx, after, C's n / 2 lanes) -> n / 2 float lanes.
  void wgmma(int32_t pos, const UOp& u) const {
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
    if (u.src[0]->op != Ops::DEFINE_LOCAL || u.src[2]->op != Ops::DEFINE_LOCAL)
      fail(pos, "reads A and B from DEFINE_LOCALs");
    need_int(pos, 1, "A index");
    need_int(pos, 3, "B index");
    const DType in_dt = arg.bf16 ? dtypes::bfloat16 : dtypes::float16;
    for (size_t k : {size_t(0), size_t(2)})
      if (u.src[k]->dtype.scalar_type() != in_dt)
        fail(pos, "reads " + in_dt.repr() + " operands from another dtype's buffer");
    for (size_t k = 5; k < u.src.size(); k++)
      if (u.src[k]->dtype != dtypes::float32)
        fail(pos, "C lane " + std::to_string(k - 5) + " is " + u.src[k]->dtype.repr());
    if (u.dtype != dtypes::float32.vec(int(lanes))) fail(pos, "must give " + dtypes::float32.vec(int(lanes)).repr());
  }

  // CP_ASYNC (dst local, dst idx, src global, src idx, gate, valid, after...): n elements of one dtype.
  void cp_async(int32_t pos, const UOp& u) const {
    const int64_t* n = std::get_if<int64_t>(&u.arg);
    if (u.src.size() < 6) fail(pos, "takes (dst, dst idx, src, src idx, gate, valid, after...)");
    if (u.src[0]->op != Ops::DEFINE_LOCAL || u.src[2]->op != Ops::DEFINE_GLOBAL)
      fail(pos, "copies from a DEFINE_GLOBAL to a DEFINE_LOCAL");
    if (!n || *n < 1 || *n > 64) fail(pos, "needs an element count 1..64 as arg, has " + u.arg_repr());
    if (u.dtype != dtypes::void_) fail(pos, "must have dtype void");
    need_int(pos, 1, "dst index");
    need_int(pos, 3, "src index");
    need_bool(pos, 4, "gate");
    need_bool(pos, 5, "valid");
    const DType dst = u.src[0]->dtype.scalar_type(), src = u.src[2]->dtype.scalar_type();
    if (dst != src) fail(pos, "copies " + src.repr() + " into shared " + dst.repr());
  }

  // LDMATRIX (local, row idx, after...): count 8x8 matrices of a 16-bit dtype.
  void ldmatrix(int32_t pos, const UOp& u) const {
    const int64_t* a = std::get_if<int64_t>(&u.arg);
    if (u.src.size() < 2) fail(pos, "takes (DEFINE_LOCAL, row idx, after...)");
    const DType elem = element(pos, u.src[0], /*local_only=*/true);
    need_int(pos, 1, "row index");
    LdmatrixArg arg = a ? LdmatrixArg::unpack(*a) : LdmatrixArg{0, false};
    if (arg.count != 1 && arg.count != 2 && arg.count != 4) fail(pos, "needs 1, 2 or 4 matrices, has " + u.arg_repr());
    if (elem.itemsize() != 2 || u.dtype != elem.vec(2 * arg.count))
      fail(pos, "must give " + std::to_string(2 * arg.count) + " lanes of the 16-bit elements of its buffer (" +
                    elem.repr() + ")");
  }

  // TENSOR_MAP (DEFINE_GLOBAL): a map of the buffer's elements, one parameter number each.
  void tensor_map(int32_t pos, const UOp& u) {
    need_src(pos, 1);
    if (u.src[0]->op != Ops::DEFINE_GLOBAL || u.dtype != u.src[0]->dtype) fail(pos, "must map a DEFINE_GLOBAL, as its dtype");
    const auto* packed = std::get_if<std::vector<int64_t>>(&u.arg);
    if (!packed) fail(pos, "needs a TensorMapArg, has " + u.arg_repr());
    TensorMapArg arg;
    try {
      arg = TensorMapArg::unpack(*packed);
    } catch (const Error& e) {
      fail(pos, e.what());
    }
    if (arg.itemsize != int64_t(u.dtype.scalar_type().itemsize()))
      fail(pos, "maps " + std::to_string(arg.itemsize) + "-byte elements of a " + u.dtype.repr() + " buffer");
    if (!tensor_maps_.emplace(arg.number, pos).second) fail(pos, "repeats tensor map " + std::to_string(arg.number));
  }

  // TMA_LOAD (dst local, dst idx, TENSOR_MAP, col, row, bar local, bar idx, gate, after...).
  void tma_load(int32_t pos, const UOp& u) const {
    if (u.src.size() < 8) fail(pos, "takes (dst, dst idx, TENSOR_MAP, col, row, bar, bar idx, gate, after...)");
    if (u.dtype != dtypes::void_) fail(pos, "must have dtype void");
    const DType dst = element(pos, u.src[0], /*local_only=*/true);
    need_int(pos, 1, "dst index");
    if (u.src[2]->op != Ops::TENSOR_MAP) fail(pos, "must copy through a TENSOR_MAP");
    if (u.src[2]->dtype.scalar_type() != dst)
      fail(pos, "copies " + u.src[2]->dtype.scalar_type().repr() + " into shared " + dst.repr());
    need_int(pos, 3, "col");
    need_int(pos, 4, "row");
    barrier_at(pos, u, 5);
    need_bool(pos, 7, "gate");
  }

  // MBAR_INIT / MBAR_EXPECT (bar, idx, gate, after...), MBAR_WAIT (bar, idx, parity, after...).
  void mbarrier(int32_t pos, const UOp& u) const {
    if (u.src.size() < 3) fail(pos, "takes (bar, idx, " + std::string(u.op == Ops::MBAR_WAIT ? "parity" : "gate") + ", after...)");
    if (u.dtype != dtypes::void_) fail(pos, "must have dtype void");
    barrier_at(pos, u, 0);
    if (u.op == Ops::MBAR_WAIT) return need_int(pos, 2, "parity");
    need_bool(pos, 2, "gate");
    const int64_t* n = std::get_if<int64_t>(&u.arg);
    const int64_t most = u.op == Ops::MBAR_INIT ? 1024 : (int64_t(1) << 20) - 1;  // threads; the tx count's range
    if (!n || *n < 1 || *n > most)
      fail(pos, std::string("needs ") + (u.op == Ops::MBAR_INIT ? "a thread count" : "a byte count") + " 1.." +
                    std::to_string(most) + " as arg, has " + u.arg_repr());
  }
  // sources k (a DEFINE_LOCAL of uint64: the barriers) and k + 1 (the index of one)
  void barrier_at(int32_t pos, const UOp& u, size_t k) const {
    if (u.src[k]->op != Ops::DEFINE_LOCAL || u.src[k]->dtype.scalar_type() != dtypes::uint64)
      fail(pos, "needs its barriers in a DEFINE_LOCAL of uint64");
    need_int(pos, k + 1, "barrier index");
  }

  // The launch must be exactly the grid the SPECIALs describe, so no thread is lost or run twice.
  void launch() const {
    std::array<int64_t, 3> global{1, 1, 1}, local{1, 1, 1};
    auto copy = [&](const std::vector<int64_t>& from, std::array<int64_t, 3>& to, const char* what) {
      if (from.size() > 3) fail_launch(std::string(what) + " has more than 3 dimensions");
      for (size_t d = 0; d < from.size(); d++) {
        if (from[d] < 1) fail_launch(std::string(what) + " has a dimension < 1");
        to[d] = from[d];
      }
    };
    copy(spec_.global_size, global, "global_size");
    copy(spec_.local_size, local, "local_size");
    auto dims = [](const std::array<int64_t, 3>& v) {
      return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
    };
    for (size_t d = 0; d < 3; d++) {
      auto bad = [&](const std::string& what) {
        fail_launch("launch global_size " + dims(global) + " local_size " + dims(local) +
                    " does not match the kernel's SPECIALs: " + what);
      };
      const auto dn = std::to_string(d);
      const int64_t a = absolute_[d], g = group_[d] ? group_[d] : 1, l = local_[d] ? local_[d] : 1;
      if (a && (group_[d] || local_[d])) bad("idx" + dn + " together with gidx" + dn + "/lidx" + dn);
      if (a && a != global[d] * local[d]) bad("idx" + dn + " spans " + std::to_string(a));
      if (!a && global[d] != g) bad("gidx" + dn + " spans " + std::to_string(g));
      if (!a && local[d] != l) bad("lidx" + dn + " spans " + std::to_string(l));
    }
  }

  const ProgramSpec& spec_;
  std::unordered_map<const UOp*, int32_t> index_;          // node -> position
  std::unordered_map<int64_t, int32_t> params_;            // parameter number -> its DEFINE_GLOBAL's position
  std::unordered_map<int64_t, int32_t> tensor_maps_;       // tensor map number -> its TENSOR_MAP's position
  std::vector<int32_t> def_block_;                         // per position: the block its value lives in
  std::vector<int32_t> blocks_;                            // per block: its parent (kBody for the kernel body, block 0)
  std::vector<Open> open_;                                 // blocks open at the current position
  std::array<int64_t, 3> group_{}, local_{}, absolute_{};  // extent each SPECIAL kind names per dim (0: none)
};

}  // namespace

bool is_program_op(Ops op) {
  static const std::array<bool, kNumOps> table = [] {
    std::array<bool, kNumOps> t{};
    for (Ops o : kProgramOps) t[size_t(o)] = true;
    return t;
  }();
  return table[size_t(op)];
}

void verify_program(const ProgramSpec& spec) { Verifier(spec).run(); }

}  // namespace tg
