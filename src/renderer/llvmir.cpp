// LLVMRenderer (see llvmir.h) and the kernel's shape: parameters, loops, IFs, accumulators and memory. The values
// themselves are in llvmir_ops.cpp.
#include "renderer/llvmir.h"

#include "renderer/c.h"
#include "renderer/llvmir_walk.h"
#include "tg/error.h"

namespace tg {

// ---- LLVMRenderer ----

std::string LLVMRenderer::render(const std::string& name, const std::vector<UOpPtr>& uops) const {
  return LLVMWalk(*this, name, uops).run();
}

// No tensor cores, shared memory or asynchronous copies: the CPU's kernels.
bool LLVMRenderer::supports(Ops op) const {
  if (op == Ops::WMMA || op == Ops::WGMMA) return false;
  return is_alu(op) || op == Ops::CAST || op == Ops::BITCAST;
}

// The C device's vector choices (renderer/c.cpp), so codegen gives both the same kernels.
bool LLVMRenderer::vectorizes(Ops op, DType scalar) const { return ClangRenderer::cpu_vectorizes(op, scalar); }
bool LLVMRenderer::vectorizes_cast(DType from, DType to) const { return ClangRenderer::cpu_vectorizes_cast(from, to); }

int LLVMRenderer::threads() const { return ClangRenderer::cpu_threads(); }

// ---- the walk ----

LLVMWalk::LLVMWalk(const LLVMRenderer& ren, const std::string& name, const std::vector<UOpPtr>& uops)
    : ProgramWalk(name, uops), opaque_(ren.opaque_pointers()) {}

std::string LLVMWalk::def(const std::string& prefix, const std::string& rhs) {
  std::string v = fresh(prefix);
  ins(v + " = " + rhs);
  return v;
}

void LLVMWalk::start_block(const std::string& l) {
  body_ += l + ":\n";
  block_ = l;
}

std::string LLVMWalk::run() {
  index_nodes();
  count_uses();
  r_.assign(n_, "");
  is_acc_.assign(n_, 0);
  block_ = "body";
  for (size_t i = 0; i < uops_.size(); i++) emit(i);
  return finish();
}

void LLVMWalk::emit(size_t i) {
  const UOp& u = *uops_[i];
  switch (u.op) {
    case Ops::DEFINE_GLOBAL:
      return define_global(i, u);
    case Ops::DEFINE_VAR:
      return define_var(i, u);
    case Ops::SPECIAL:
      return special(i, u);
    case Ops::CONST:
      return constant(i, u);
    case Ops::RANGE:
      return open_range(i, u);
    case Ops::IF:
      return open_if(i, u);
    case Ops::ENDRANGE:
    case Ops::ENDIF:
      return close_block(i);
    case Ops::DEFINE_ACC:
      return define_acc(i, u);
    case Ops::ASSIGN:
      return assign(i, u);
    case Ops::LOAD:
      return load(i, u);
    case Ops::STORE:
      return store(i, u);
    case Ops::PREFETCH:
      return prefetch(i, u);
    default:
      break;
  }
  if (is_alu(u.op) || u.op == Ops::CAST || u.op == Ops::BITCAST || u.op == Ops::VECTORIZE || u.op == Ops::GEP)
    return expression(i, u);
  throw Error(where(i) + ": not a node kind the LLVM renderer (a CPU without workgroups) takes");
}

std::string LLVMWalk::operand(const UOp& u, size_t k) {
  const UOp& s = *u.src.at(k);
  const size_t at = pos_.at(&s);
  if (!is_acc_[at]) return r_[at];
  return def("acc_val", "load " + type(s.dtype) + ", " + ptr(type(s.dtype)) + " " + r_[at]);
}

// ---- parameters ----

void LLVMWalk::define_global(size_t i, const UOp& u) {
  r_[i] = "%data" + std::to_string(u.get<int64_t>());
  buffer_param(i, u, r_[i]);
}

void LLVMWalk::define_var(size_t i, const UOp& u) {
  r_[i] = "%" + u.get<NamedRange>().name;
  var_param(i, u, r_[i]);
}

void LLVMWalk::special(size_t i, const UOp& u) {
  const auto* sp = std::get_if<SpecialArg>(&u.arg);
  if (!sp) throw Error(where(i) + ": SPECIAL needs a SpecialArg, has " + u.arg_repr());
  if (sp->axis != LaunchAxis::CORE)
    throw Error(where(i) + ": SPECIAL " + sp->name() + " (a GPU launch index) on LLVM, which has no launch grid");
  r_[i] = "%" + sp->name();
  core_param(r_[i], u.dtype);
}

// ---- blocks ----

// for (ridx = start; ridx < end; ridx++): the counter lives in an alloca; the header block loads it (its value
// in the body), the ENDRANGE increments it and jumps back.
void LLVMWalk::open_range(size_t i, const UOp& u) {
  const std::string T = type(u.dtype), start = operand(u, 0), end = operand(u, 1);
  const std::string l = label("loop"), slot = "%" + l + ".i";
  allocas_ += "  " + slot + " = alloca " + T + "\n";
  ins("store " + T + " " + start + ", " + ptr(T) + " " + slot);
  ins("br label %" + l);
  start_block(l);
  r_[i] = def("ridx", "load " + T + ", " + ptr(T) + " " + slot);
  const std::string more = def("cond", "icmp slt " + T + " " + r_[i] + ", " + end);
  ins("br i1 " + more + ", label %" + l + ".body, label %" + l + ".exit");
  start_block(l + ".body");
  open_.push_back(Open{i, l});
}

void LLVMWalk::open_if(size_t i, const UOp& u) {
  const std::string gate = operand(u, 0), l = label("if");
  ins("br i1 " + gate + ", label %" + l + ".then, label %" + l + ".end");
  start_block(l + ".then");
  open_.push_back(Open{i, l});
}

void LLVMWalk::close_block(size_t i) {
  if (open_.empty()) throw Error(where(i) + ": closes a block that is not open");
  const Open o = open_.back();
  open_.pop_back();
  const UOp& opener = *uops_[o.pos];
  if (uops_[i]->src.empty() || uops_[i]->src[0].get() != &opener)
    throw Error(where(i) + ": closes node " + std::to_string(o.pos) + "'s block out of order");
  if (opener.op == Ops::IF) {
    ins("br label %" + o.label + ".end");
    start_block(o.label + ".end");
    return;
  }
  const std::string T = type(opener.dtype);
  const std::string next = def("next", "add " + T + " " + r_[o.pos] + ", " + splat(opener.dtype, "1"));
  ins("store " + T + " " + next + ", " + ptr(T) + " %" + o.label + ".i");
  ins("br label %" + o.label);
  start_block(o.label + ".exit");
}

// ---- accumulators ----

void LLVMWalk::define_acc(size_t i, const UOp& u) {
  const std::string T = type(u.dtype), init = operand(u, 0);
  r_[i] = fresh("acc");
  is_acc_[i] = 1;
  allocas_ += "  " + r_[i] + " = alloca " + T + "\n";
  ins("store " + T + " " + init + ", " + ptr(T) + " " + r_[i]);
}

void LLVMWalk::assign(size_t i, const UOp& u) {
  const size_t acc = pos_.at(u.src.at(0).get());
  if (!is_acc_[acc]) throw Error(where(i) + ": ASSIGN to a node that is not an accumulator");
  const std::string T = type(u.dtype), value = operand(u, 1);
  r_[i] = r_[acc];
  is_acc_[i] = 1;
  ins("store " + T + " " + value + ", " + ptr(T) + " " + r_[i]);
}

// ---- memory ----

std::string LLVMWalk::address(const UOp& u, const std::string& elem) {
  const UOp& buf = *u.src.at(0);
  if (buf.op != Ops::DEFINE_GLOBAL)
    throw Error("render " + name_ + ": a memory access of a non-buffer " + op_name(buf.op));
  const std::string E = buffer_type(buf.dtype.base().scalar_type()), idx = operand(u, 1);
  std::string p = def("addr", "getelementptr inbounds " + E + ", " + ptr(E) + " " + r_[pos_.at(&buf)] + ", " +
                                  type(u.src.at(1)->dtype) + " " + idx);
  if (elem != E && !opaque_) p = def("vaddr", "bitcast " + ptr(E) + " " + p + " to " + ptr(elem));
  return p;
}

// A load in the register format: 16-bit floats widen to float, bool bytes become i1; a gated load branches around
// the access (no memory is touched where the gate is false) and merges with the alternative value.
void LLVMWalk::load(size_t i, const UOp& u) {
  if (u.src.size() < 2 || u.src.size() == 3 || u.src.size() > 4)
    throw Error(where(i) + ": LOAD takes (buf, idx) or (buf, idx, gate, alt) on LLVM");
  const DType dt = u.dtype, mem = dt.scalar_type();
  std::string gate, alt, before, l;
  if (u.src.size() == 4) {
    gate = operand(u, 2), alt = operand(u, 3), before = block_, l = label("load");
    ins("br i1 " + gate + ", label %" + l + ", label %" + l + ".end");
    start_block(l);
  }
  std::string E = buffer_type(mem);
  if (dt.count > 1) E = "<" + std::to_string(dt.count) + " x " + E + ">";
  const std::string p = address(u, E);
  std::string v = def("val", "load " + E + ", " + ptr(E) + " " + p + ", align " + std::to_string(mem.itemsize()));
  if (mem == dtypes::float16) v = def("val", "fpext " + E + " " + v + " to " + type(dt));
  if (mem == dtypes::bfloat16) v = float16_from_bits(dt, v);
  if (mem.is_bool()) v = def("val", "icmp ne i8 " + v + ", 0");
  if (!gate.empty()) {
    const std::string loaded_in = block_;
    ins("br label %" + l + ".end");
    start_block(l + ".end");
    v = def("val", "phi " + type(dt) + " [ " + v + ", %" + loaded_in + " ], [ " + alt + ", %" + before + " ]");
  }
  r_[i] = v;
}

void LLVMWalk::store(size_t i, const UOp& u) {
  if (u.src.size() != 3 && u.src.size() != 4)
    throw Error(where(i) + ": STORE takes (buf, idx, value) or (buf, idx, value, gate)");
  const DType dt = u.src[2]->dtype, mem = dt.scalar_type();
  std::string value = operand(u, 2), l;
  if (u.src.size() == 4) {
    const std::string gate = operand(u, 3);
    l = label("store");
    ins("br i1 " + gate + ", label %" + l + ", label %" + l + ".end");
    start_block(l);
  }
  std::string E = buffer_type(mem);
  if (mem == dtypes::float16)
    value = def("st", "fptrunc " + type(dt) + " " + value + " to " +
                          (dt.count > 1 ? "<" + std::to_string(dt.count) + " x half>" : "half"));
  if (mem == dtypes::bfloat16) value = bits16(dt, value);
  if (mem.is_bool()) value = def("st", "zext " + type(dt) + " " + value + " to i8");
  if (dt.count > 1) E = "<" + std::to_string(dt.count) + " x " + E + ">";
  const std::string p = address(u, E);
  ins("store " + E + " " + value + ", " + ptr(E) + " " + p + ", align " + std::to_string(mem.itemsize()));
  if (!l.empty()) {
    ins("br label %" + l + ".end");
    start_block(l + ".end");
  }
}

// __builtin_prefetch(buf + idx): read, high locality.
void LLVMWalk::prefetch(size_t i, const UOp& u) {
  if (u.src.size() != 2) throw Error(where(i) + ": PREFETCH takes (buf, idx)");
  std::string p = address(u, buffer_type(u.src[0]->dtype.base().scalar_type()));
  const std::string i8p = ptr("i8");
  if (!opaque_)
    p = def("pf", "bitcast " + ptr(buffer_type(u.src[0]->dtype.base().scalar_type())) + " " + p + " to i8*");
  const std::string fn = opaque_ ? "@llvm.prefetch.p0" : "@llvm.prefetch.p0i8";
  declares_.insert("declare void " + fn + "(" + i8p + ", i32, i32, i32)");
  ins("call void " + fn + "(" + i8p + " " + p + ", i32 0, i32 3, i32 1)");
}

// ---- the module ----

// The kernel as an internal function of its parameters (noalias: the buffers of one kernel never overlap, as the C
// renderer's `restrict` says), then the entry the runtime calls: it unpacks bufs[] and vars[] and calls the kernel,
// which the optimizer inlines.
std::string LLVMWalk::finish() {
  if (!open_.empty())
    throw Error("render " + name_ + ": " + std::to_string(open_.size()) + " block(s) left open at the end");
  const std::vector<KernelParam> params = this->params();
  std::string sig;
  for (const KernelParam& p : params) {
    if (!sig.empty()) sig += ", ";
    sig += p.is_buffer ? ptr(param_type(p)) + " noalias nocapture" + (p.written ? "" : " readonly") + " " + p.name
                       : param_type(p) + " " + p.name;
  }
  std::string s = "; kernel " + name_ + "\n";
  for (const std::string& d : declares_) s += d + "\n";
  s += helper_definitions();
  s += "define internal void @" + name_ + "(" + sig + ") #0 {\nentry:\n" + allocas_ + "  br label %body\n" + "body:\n" +
       body_ + "  ret void\n}\n\n";
  return s + entry_function(params) + "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\n";
}

std::string LLVMWalk::param_type(const KernelParam& p) const {
  return p.is_buffer ? buffer_type(p.dtype.base().scalar_type()) : type(p.dtype);
}

std::string LLVMWalk::entry_function(const std::vector<KernelParam>& params) const {
  const std::string i8p = ptr("i8"), i8pp = opaque_ ? "ptr" : "i8**", i64p = ptr("i64");
  std::string s = "define void @" + name_ + "_entry(" + i8pp + " %bufs, " + i64p + " %vars) #0 {\n", args;
  int b = 0, v = 0;
  for (const KernelParam& p : params) {
    const std::string n = std::to_string(p.is_buffer ? b : v), a = (p.is_buffer ? "%b" : "%v") + n, T = param_type(p);
    if (p.is_buffer) {
      s += "  " + a + ".p = getelementptr inbounds " + i8p + ", " + i8pp + " %bufs, i64 " + n + "\n";
      s += "  " + a + ".raw = load " + i8p + ", " + i8pp + " " + a + ".p\n";
      if (opaque_)
        s += "  " + a + " = getelementptr i8, ptr " + a + ".raw, i64 0\n";
      else
        s += "  " + a + " = bitcast i8* " + a + ".raw to " + ptr(T) + "\n";
      b++;
    } else {
      s += "  " + a + ".p = getelementptr inbounds i64, " + i64p + " %vars, i64 " + n + "\n";
      s += "  " + a + ".raw = load i64, " + i64p + " " + a + ".p\n";
      s += "  " + a + " = " + (T == "i64" ? "add i64 0, " + a + ".raw" : "trunc i64 " + a + ".raw to " + T) +
           "\n";
      v++;
    }
    args += (args.empty() ? "" : ", ") + (p.is_buffer ? ptr(T) : T) + " " + a;
  }
  return s + "  call void @" + name_ + "(" + args + ")\n  ret void\n}\n";
}

}  // namespace tg
