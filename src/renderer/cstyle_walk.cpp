// CStyleWalk: the analyses of a linearized kernel, then a statement per node (see cstyle_walk.h).
#include "renderer/cstyle_walk.h"

#include <algorithm>
#include <cctype>

#include "renderer/matrix_syntax.h"
#include "renderer/tensor_core.h"
#include "tg/error.h"

namespace tg {
namespace {

// Nodes that are pure expressions (printed inline or as a named value).
bool is_expr(Ops op) {
  return is_alu(op) || op == Ops::CAST || op == Ops::BITCAST || op == Ops::VECTORIZE || op == Ops::GEP;
}

const UOp* acc_of(const UOp* u) {
  while (u->op == Ops::ASSIGN) u = u->src.at(0).get();
  return u;
}

}  // namespace

std::string CStyleRenderer::render(const std::string& name, const std::vector<UOpPtr>& uops) const {
  return CStyleWalk(*this, name, uops).run();
}

CStyleWalk::CStyleWalk(const CStyleRenderer& ren, const std::string& name, const std::vector<UOpPtr>& uops)
    : ProgramWalk(name, uops), ren_(ren) {}

std::string CStyleWalk::run() {
  index_nodes();
  count_uses([this](const UOp& u, size_t k) { return ren_.operand_uses(u, k); });
  count_depths();
  choose_inlined();
  find_raw16();
  wg_arrays_ = find_wgmma_arrays(uops_);
  has_wgmma_ = std::any_of(uops_.begin(), uops_.end(), [](const UOpPtr& u) { return u->op == Ops::WGMMA; });
  wg_declared_.assign(wg_arrays_.lanes.size(), 0);
  collect_types();
  r_.assign(n_, "");
  for (size_t i = 0; i < n_; i++) emit(i);
  return finish();
}

// ---- analyses ----

// Loop depth: the blocks open around each node.
void CStyleWalk::count_depths() {
  depth_.assign(n_, 0);
  int d = 0;
  for (size_t i = 0; i < n_; i++) {
    const Ops op = uops_[i]->op;
    if (op == Ops::ENDRANGE || op == Ops::ENDIF) d--;
    depth_[i] = d;
    if (op == Ops::RANGE || op == Ops::IF) d++;
  }
}

// Which nodes print inside their user. Pure expressions used once qualify, unless moving them would read an
// accumulator at a different moment: when an ASSIGN to it lies between, or the user sits in a deeper loop (then it
// would see later iterations' values). An expression nested kMaxNesting deep gets a name instead: compilers limit
// parenthesis nesting (clang: 256), and long chains would copy long strings.
void CStyleWalk::choose_inlined() {
  constexpr int kMaxNesting = 64;
  std::vector<int> nesting(n_, 0);  // levels of inlined expressions inside the node's text
  inlined_.assign(n_, 0);
  std::vector<std::unordered_set<const UOp*>> reads_acc(n_);    // accumulators read by the expression text
  std::unordered_map<const UOp*, std::vector<size_t>> assigns;  // acc -> positions of ASSIGNs to it
  for (size_t i = 0; i < n_; i++)
    if (uops_[i]->op == Ops::ASSIGN) assigns[acc_of(uops_[i]->src.at(0).get())].push_back(i);
  for (size_t i = 0; i < n_; i++) {
    const UOp& u = *uops_[i];
    if (!is_expr(u.op)) continue;
    for (auto& s : u.src) {
      size_t si = pos(s.get());
      if (s->op == Ops::DEFINE_ACC || s->op == Ops::ASSIGN) reads_acc[i].insert(acc_of(s.get()));
      if (inlined_[si]) reads_acc[i].insert(reads_acc[si].begin(), reads_acc[si].end());
      if (inlined_[si]) nesting[i] = std::max(nesting[i], nesting[si] + 1);
    }
    if (uses_[i] != 1 || nesting[i] >= kMaxNesting) continue;
    bool ok = true;
    for (const UOp* acc : reads_acc[i]) {
      if (depth_[user_[i]] != depth_[i]) ok = false;
      for (size_t k : assigns[acc])
        if (k > i && k < user_[i]) ok = false;
    }
    inlined_[i] = ok;
  }
}

// 16-bit float loads (and lanes of 16-bit vector loads) read only by tensor cores stay 16-bit (no round trip
// through float registers).
void CStyleWalk::find_raw16() {
  raw16_.assign(n_, 0);
  for (size_t i = 0; i < n_; i++) {
    const UOp& u = *uops_[i];
    const bool b16 = u.dtype == dtypes::float16 || u.dtype == dtypes::bfloat16;
    if (b16 && u.op == Ops::LOAD && u.src.size() == 2) raw16_[i] = 1;
    if (b16 && u.op == Ops::GEP && u.src[0]->op == Ops::LOAD) raw16_[i] = 1;
  }
  for (size_t i = 0; i < n_; i++)
    if (uops_[i]->op != Ops::WMMA)
      for (auto& s : uops_[i]->src) raw16_[pos(s.get())] = 0;
}

// The vector types and 16-bit formats the kernel's prelude defines.
void CStyleWalk::collect_types() {
  for (auto& u : uops_) {
    DType dt = u->dtype;
    if (dt.count > 1 && !dt.ptr && u->op != Ops::WGMMA) {  // (a WGMMA's lanes are an array)
      pre_.need_vector_type(dt);
    }
    if (dt.scalar == Scalar::Float16) pre_.half = true;
    if (dt.scalar == Scalar::BFloat16) pre_.bf16 = true;
  }
}

// ---- emission ----

const MatrixSyntax& CStyleWalk::matrix(size_t i) const {
  const MatrixSyntax* m = ren_.matrix_syntax();
  if (!m) throw Error(where(i) + " on " + ren_.device() + ", which has no tensor cores or asynchronous copies");
  return *m;
}

void CStyleWalk::lines(const std::string& stmts) {
  for (size_t at = 0; at <= stmts.size();) {
    size_t nl = std::min(stmts.find('\n', at), stmts.size());
    if (nl > at) line(stmts.substr(at, nl - at));
    at = nl + 1;
  }
}

void CStyleWalk::emit(size_t i) {
  const UOp& u = *uops_[i];
  switch (u.op) {
    case Ops::DEFINE_GLOBAL:
      return define_global(i, u);
    case Ops::DEFINE_VAR:
      return define_var(i, u);
    case Ops::DEFINE_LOCAL:
      return define_local(i, u);
    case Ops::CONST:
      r_[i] = ren_.render_const(u, pre_);
      return;
    case Ops::SPECIAL:
      return special(i, u);
    case Ops::RANGE:
    case Ops::IF:
      return open_block(i, u);
    case Ops::ENDRANGE:
    case Ops::ENDIF:
      return close_block(i);
    case Ops::BARRIER:
      line(ren_.render_barrier());
      return;
    case Ops::WMMA:
      return wmma(i, u);
    case Ops::WGMMA:
      return wgmma(i, u);
    case Ops::CP_ASYNC:
      return cp_async(i, u);
    case Ops::ASYNC_COMMIT:
      line(matrix(i).async_commit());
      return;
    case Ops::ASYNC_WAIT:
      line(matrix(i).async_wait(u.get<int64_t>()));
      return;
    case Ops::TENSOR_MAP:
      return tensor_map(i, u);
    case Ops::TMA_LOAD:
    case Ops::MBAR_INIT:
    case Ops::MBAR_EXPECT:
    case Ops::MBAR_WAIT:
      return bulk_copy(i, u);
    case Ops::LDMATRIX:
      r_[i] = fresh("ldm");
      line(matrix(i).ldmatrix(r_[i], src(u, 0), CStyleRenderer::strip_parens(src(u, 1)), u));
      return;
    case Ops::DEFINE_ACC:
      return define_acc(i, u);
    case Ops::ASSIGN:
      r_[i] = src(u, 0);
      if (!wg_arrays_.assign.count(&u)) line(r_[i] + " = " + src(u, 1) + ";");  // (a chain's lane: already there)
      return;
    case Ops::LOAD:
      return load(i, u);
    case Ops::STORE:
      return store(i, u);
    case Ops::PREFETCH:  // (codegen/prefetch.h; only where the renderer has prefetches)
      if (u.src.size() != 2) throw Error(where(i) + ": PREFETCH takes (buf, idx)");
      line("__builtin_prefetch(" + src(u, 0) + "+" + src(u, 1) + ");");
      return;
    default:
      return expression(i, u);
  }
}

void CStyleWalk::define_global(size_t i, const UOp& u) {
  r_[i] = "data" + std::to_string(u.get<int64_t>());
  buffer_param(i, u, r_[i]);
}

void CStyleWalk::define_var(size_t i, const UOp& u) {
  r_[i] = u.get<NamedRange>().name;
  var_param(i, u, r_[i]);
}

void CStyleWalk::define_local(size_t i, const UOp& u) {
  const auto& nr = u.get<NamedRange>();
  if (!is_identifier(nr.name)) throw Error(where(i) + ": local buffer name '" + nr.name + "' is not an identifier");
  if (!u.dtype.ptr || !u.dtype.local) throw Error(where(i) + ": needs a local pointer dtype, got " + u.dtype.repr());
  r_[i] = nr.name;
  const DType elem = u.dtype.base().scalar_type();
  const int64_t offset = shared_offset(shared_end_, (nr.max + 1) * elem.itemsize());
  shared_end_ = offset + (nr.max + 1) * elem.itemsize();
  line(ren_.render_define_local(nr.name, elem, nr.max + 1, offset, pre_) + ";");
}

void CStyleWalk::special(size_t i, const UOp& u) {
  const auto* sp = std::get_if<SpecialArg>(&u.arg);
  if (!sp) throw Error(where(i) + ": SPECIAL needs a SpecialArg, has " + u.arg_repr());
  r_[i] = sp->name();
  if (ren_.dialect_.core_id_param && sp->axis == LaunchAxis::CORE) {
    core_param(r_[i], u.dtype);
    return;
  }
  if (sp->axis == LaunchAxis::LOCAL) pre_.local_threads *= sp->size;
  line(ren_.type_name(u.dtype) + " " + r_[i] + " = " + ren_.render_special(*sp) + ";");
}

void CStyleWalk::open_block(size_t i, const UOp& u) {
  block_drains_.emplace_back();
  if (u.op == Ops::IF) {
    line("if (" + CStyleRenderer::strip_parens(src(u, 0)) + ") {");
  } else {
    r_[i] = fresh("ridx");
    line("for (" + ren_.type_name(u.dtype) + " " + r_[i] + " = " + CStyleRenderer::strip_parens(src(u, 0)) + "; " +
         r_[i] + " < " + CStyleRenderer::strip_parens(src(u, 1)) + "; " + r_[i] + "++) {");
  }
  indent_++;
}

void CStyleWalk::close_block(size_t i) {
  if (--indent_ < 1 || block_drains_.empty()) throw Error(where(i) + ": closes a block that is not open");
  line("}");
  lines(block_drains_.back());
  block_drains_.pop_back();
}

void CStyleWalk::wmma(size_t i, const UOp& u) {
  std::vector<std::string> a;
  std::vector<bool> raw;
  for (size_t k = 0; k < u.src.size(); k++) {
    a.push_back(src(u, k));
    raw.push_back(raw16_[pos(u.src[k].get())] != 0);
  }
  // operand pairs that are one 32-bit register of an LDMATRIX: lanes 2q, 2q + 1 of the same one
  std::vector<std::string> packed;
  for (size_t k = 0; k + 1 < u.src.size() - size_t(TensorCore::kC); k += 2) {
    const UOp *x = u.src[k].get(), *y = u.src[k + 1].get();
    bool pair = x->op == Ops::GEP && y->op == Ops::GEP && x->src[0] == y->src[0] && x->src[0]->op == Ops::LDMATRIX &&
                x->get<int64_t>() % 2 == 0 && y->get<int64_t>() == x->get<int64_t>() + 1;
    packed.push_back(pair ? matrix(i).ldmatrix_reg(r_[pos(x->src[0].get())], x->get<int64_t>() / 2) : "");
  }
  r_[i] = fresh("wmma");
  line(ren_.type_name(u.dtype) + " " + r_[i] + " = " + matrix(i).wmma(u, a, raw, packed, pre_) + ";");
}

void CStyleWalk::wgmma(size_t i, const UOp& u) {
  std::vector<std::string> a;
  for (size_t k = 0; k < u.src.size(); k++)
    a.push_back(k == 1 || k == 3 ? CStyleRenderer::strip_parens(src(u, k)) : src(u, k));
  auto in_place = wg_arrays_.wgmma.find(&u);
  r_[i] = in_place == wg_arrays_.wgmma.end() ? fresh("wg") : "wgacc" + std::to_string(in_place->second);
  std::string stmts = matrix(i).wgmma_step(u, r_[i], a, in_place != wg_arrays_.wgmma.end(), pre_);
  const WgmmaArg arg = WgmmaArg::of(u);
  if (arg.defer) {
    if (block_drains_.empty()) throw Error(where(i) + ": a WGMMA left in flight outside any loop");
    block_drains_.back() += matrix(i).wgmma_drain(r_[i], arg.n / 2) + "\n";
  }
  lines(stmts);
}

void CStyleWalk::cp_async(size_t i, const UOp& u) {
  if (u.src.size() < 6) throw Error(where(i) + ": CP_ASYNC takes (dst, dst idx, src, src idx, gate, valid, after...)");
  auto is_true = [](const UOp& b) { return b.op == Ops::CONST && b.const_value() != 0; };
  // gated: a predicated copy in a kernel with WGMMAs (a branch in their loop made ptxas serialize deferred
  // wgmmas), else a branch around it (the predicated form, an address select per copy, cost the float32 gemm 7%)
  const bool predicated = !is_true(*u.src[4]) && has_wgmma_;
  std::string st =
      matrix(i).cp_async(src(u, 0), CStyleRenderer::strip_parens(src(u, 1)), src(u, 2),
                         CStyleRenderer::strip_parens(src(u, 3)), predicated ? src(u, 4) : "",
                         is_true(*u.src[5]) ? "" : src(u, 5), u.get<int64_t>(), u.src[2]->dtype.base().scalar_type());
  line(is_true(*u.src[4]) || predicated ? st : "if (" + CStyleRenderer::strip_parens(src(u, 4)) + ") { " + st + " }");
}

void CStyleWalk::tensor_map(size_t i, const UOp& u) {
  const auto* arg = std::get_if<std::vector<int64_t>>(&u.arg);
  if (!arg || arg->empty()) throw Error(where(i) + ": TENSOR_MAP needs a TensorMapArg, has " + u.arg_repr());
  r_[i] = "tmap" + std::to_string(arg->front());
  tensor_map_param(arg->front(), r_[i], u.dtype);  // (verify_program: numbered 0 .. n-1)
}

void CStyleWalk::bulk_copy(size_t i, const UOp& u) {
  std::vector<std::string> a;
  for (size_t k = 0; k < u.src.size(); k++) a.push_back(CStyleRenderer::strip_parens(src(u, k)));
  lines(matrix(i).bulk_copy(u, a, pre_));
}

void CStyleWalk::define_acc(size_t i, const UOp& u) {
  const std::string init = CStyleRenderer::strip_parens(src(u, 0));
  if (auto it = wg_arrays_.acc.find(&u); it != wg_arrays_.acc.end()) {  // a lane of a WGMMA chain's array
    const auto [array, lane] = it->second;
    const std::string name = "wgacc" + std::to_string(array);
    const std::string size = std::to_string(wg_arrays_.lanes[size_t(array)]);
    r_[i] = name + "[" + std::to_string(lane) + "]";
    const bool uniform = wg_arrays_.init[size_t(array)] != nullptr;
    if (!wg_declared_[size_t(array)]++) {
      line(ren_.type_name(u.dtype) + " " + name + "[" + size + "];");
      if (uniform) line("for (int i = 0; i < " + size + "; i++) " + name + "[i] = " + init + ";");
    }
    if (!uniform) line(r_[i] + " = " + init + ";");
    return;
  }
  r_[i] = fresh("acc");
  line(ren_.type_name(u.dtype) + " " + r_[i] + " = " + init + ";");
}

void CStyleWalk::load(size_t i, const UOp& u) {
  if (raw16_[i]) {
    r_[i] = fresh("val");
    line(ren_.buffer_type_name(u.dtype) + " " + r_[i] + " = " + src(u, 0) + "[" +
         CStyleRenderer::strip_parens(src(u, 1)) + "];");
    return;
  }
  std::string e = ren_.render_load(src(u, 0), CStyleRenderer::strip_parens(src(u, 1)), u.dtype, pre_);
  if (u.src.size() == 4)
    e = "(" + src(u, 2) + "?" + e + ":" + src(u, 3) + ")";
  else if (u.src.size() == 3 && u.src[2]->op != Ops::BARRIER && u.src[2]->op != Ops::ASYNC_COMMIT)
    throw Error(where(i) + ": a LOAD's third source must be the BARRIER or ASYNC_COMMIT it waits for");
  else if (u.src.size() < 2 || u.src.size() > 4)
    throw Error(where(i) + ": LOAD takes (buf, idx), (buf, idx, barrier) or (buf, idx, gate, alt)");
  r_[i] = fresh("val");
  line(ren_.type_name(u.dtype) + " " + r_[i] + " = " + e + ";");
}

void CStyleWalk::store(size_t i, const UOp& u) {
  if (u.src.size() != 3 && u.src.size() != 4)
    throw Error(where(i) + ": STORE takes (buf, idx, value) or (buf, idx, value, gate)");
  std::string st =
      ren_.render_store(src(u, 0), CStyleRenderer::strip_parens(src(u, 1)), src(u, 2), u.src[2]->dtype, pre_);
  line(u.src.size() == 4 ? "if (" + CStyleRenderer::strip_parens(src(u, 3)) + ") { " + st + " }" : st);
}

void CStyleWalk::expression(size_t i, const UOp& u) {
  if (!is_expr(u.op)) throw Error(where(i) + ": not a node kind of a linearized program");
  std::vector<std::string> a;
  for (size_t k = 0; k < u.src.size(); k++) a.push_back(src(u, k));
  const Ops from = u.op == Ops::GEP ? u.src[0]->op : Ops::NOOP;  // what a GEP takes a lane of
  std::string e;
  if (u.op == Ops::CAST)
    e = ren_.render_cast(u.dtype, u.src.at(0)->dtype, a.at(0), pre_);
  else if (u.op == Ops::BITCAST)
    e = ren_.render_bitcast(u.dtype, u.src.at(0)->dtype, a.at(0), pre_);
  else if (u.op == Ops::VECTORIZE)
    e = ren_.render_vectorize(u, a, pre_);
  else if (from == Ops::LDMATRIX)
    e = matrix(i).ldmatrix_lane(a.at(0), u.get<int64_t>(), u.dtype);
  else if (from == Ops::WGMMA)
    e = a.at(0) + "[" + std::to_string(u.get<int64_t>()) + "]";
  else if (u.op == Ops::GEP && raw16_[i] && ren_.matrix_syntax())
    e = ren_.matrix_syntax()->raw16_lane(a.at(0), u.get<int64_t>());
  else if (u.op == Ops::GEP)
    e = ren_.render_gep(u, a.at(0), pre_);
  else
    e = ren_.render_alu(u, a, pre_);
  // (a lane of an LDMATRIX is a cheap view of its registers, mostly read as registers by WMMAs)
  if (inlined_[i] || uses_[i] == 0 || from == Ops::LDMATRIX || from == Ops::WGMMA) {
    r_[i] = e;
    return;
  }
  bool is_cast = u.op == Ops::CAST || u.op == Ops::BITCAST || u.op == Ops::VECTORIZE;
  r_[i] = fresh(is_cast ? "cast" : u.op == Ops::GEP ? "gep" : "alu");
  line((raw16_[i] ? ren_.buffer_type_name(u.dtype) : ren_.type_name(u.dtype)) + " " + r_[i] + " = " + e + ";");
}

std::string CStyleWalk::finish() {
  if (indent_ != 1)
    throw Error("render " + name_ + ": " + std::to_string(indent_ - 1) + " block(s) left open at the end");
  const std::vector<Param> params = this->params();
  return ren_.prefix(pre_) + ren_.kernel_head(name_, params, pre_) + body_ + "}\n" + ren_.epilogue(name_, params);
}

}  // namespace tg
