// The static bounds check of a linearized program's memory accesses (codegen/access_bounds.h).
#include "codegen/access_bounds.h"

namespace tg {
namespace {

bool is_gate(const UOpPtr& g) { return g->dtype.is_bool() && !(g->op == Ops::CONST && g->const_value() != 0); }

// Elements the buffer `buf` (a DEFINE_GLOBAL or DEFINE_LOCAL) holds; -1 when unknown.
int64_t buffer_elements(const UOp& buf, const std::vector<int64_t>& global_elements) {
  if (buf.op == Ops::DEFINE_LOCAL) return buf.get<NamedRange>().max + 1;
  if (buf.op == Ops::DEFINE_GLOBAL) {
    const int64_t param = buf.get<int64_t>();
    return param >= 0 && size_t(param) < global_elements.size() ? global_elements[size_t(param)] : -1;
  }
  return -1;
}

// "" when [idx.vmin, idx.vmax + width - 1] lies inside `buf`.
std::string check_range(const UOp& access, const UOp& buf, const UOp& idx, int64_t width,
                        const std::vector<int64_t>& global_elements) {
  const int64_t n = buffer_elements(buf, global_elements);
  if (idx.vmin >= 0 && n >= 0 && idx.vmax <= n - width) return "";
  return std::string(op_name(access.op)) + " of " + (buf.op == Ops::DEFINE_LOCAL ? "local " : "buffer ") +
         buf.arg_repr() + " (" + std::to_string(n) + " elements) at index [" + std::to_string(idx.vmin) + ", " +
         std::to_string(idx.vmax) + "] + " + std::to_string(width);
}

std::string check_access(const UOp& u, const std::vector<int64_t>& global_elements) {
  switch (u.op) {
    case Ops::LOAD:  // (buf, idx) or (buf, idx, gate, alt); a local's third source orders it (a BARRIER)
      if (u.src.size() >= 4 && is_gate(u.src[2])) return "";
      return check_range(u, *u.src[0], *u.src[1], u.dtype.count, global_elements);
    case Ops::STORE:  // (buf, idx, value) or (buf, idx, value, gate)
      if (u.src.size() >= 4 && is_gate(u.src[3])) return "";
      return check_range(u, *u.src[0], *u.src[1], u.src[2]->dtype.count, global_elements);
    case Ops::CP_ASYNC: {  // (dst local, dst idx, src global, src idx, gate, valid, after...), n elements
      if (is_gate(u.src.at(4))) return "";
      const int64_t n = u.get<int64_t>();
      std::string why = check_range(u, *u.src[0], *u.src[1], n, global_elements);
      if (!why.empty() || is_gate(u.src.at(5))) return why;  // where not valid, the source is not read
      return check_range(u, *u.src[2], *u.src[3], n, global_elements);
    }
    case Ops::LDMATRIX:
      return check_range(u, *u.src[0], *u.src[1], 8, global_elements);  // a row of 8 elements
    case Ops::WGMMA:
      return "WGMMA (shared memory read through descriptors)";
    default:
      return "";
  }
}

}  // namespace

std::string unproven_access(const std::vector<UOpPtr>& uops, const std::vector<int64_t>& global_elements) {
  for (const UOpPtr& u : uops)
    if (std::string why = check_access(*u, global_elements); !why.empty()) return why;
  return "";
}

}  // namespace tg
