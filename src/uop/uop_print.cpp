// tinygrad-style printing of UOp graphs: shared nodes are named `x3:=UOp(...)` once and `x3` after.
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "uop/uop.h"

namespace tg {
namespace {

std::string fmt_double(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string UOp::arg_repr() const {
  struct V {
    std::string operator()(const std::monostate&) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return fmt_double(v); }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
    std::string operator()(const std::vector<int64_t>& v) const { return tuple(v); }
    std::string operator()(const Shape& v) const {
      std::string s = "(";
      for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + v[i].str();
      return s + (v.size() == 1 ? ",)" : ")");
    }
    std::string operator()(const ShapeTracker& st) const { return st.repr(); }
    std::string operator()(const ReduceArg& r) const {
      return std::string("(Ops.") + op_name(r.op) + ", " + tuple(r.axes) + ")";
    }
    std::string operator()(const BufferArg& b) const {
      return "(" + std::to_string(b.id) + ", " + std::to_string(b.size) + ")";
    }
    std::string operator()(const NamedRange& n) const {
      return "('" + n.name + "', " + std::to_string(n.min) + ", " + std::to_string(n.max) + ")";
    }
    std::string operator()(const SpecialArg& s) const { return "('" + s.name() + "', " + std::to_string(s.size) + ")"; }
  };
  return std::visit(V{}, arg);
}

std::string UOp::repr() const {
  // Count users to find shared nodes, then print depth-first with an explicit stack.
  std::unordered_map<const UOp*, int> users;
  auto self = shared_from_this();
  for (const UOp* u : toposort(self))
    for (auto& s : u->src) users[s.get()]++;
  std::unordered_map<const UOp*, int> names;
  std::ostringstream os;
  struct Frame {
    const UOp* u;
    size_t next;
    int depth;
  };
  std::vector<Frame> stack{{this, 0, 0}};
  auto open = [&](const UOp* u, int depth) -> bool {  // returns true when children must be printed
    os << std::string(size_t(depth) * 2, ' ');
    if (auto it = names.find(u); it != names.end()) {
      os << "x" << it->second;
      return false;
    }
    if (users[u] > 1) {
      int n = int(names.size());
      names[u] = n;
      os << "x" << n << ":=";
    }
    os << "UOp(Ops." << op_name(u->op) << ", " << u->dtype.repr() << ", arg=" << u->arg_repr() << ", src=(";
    return true;
  };
  open(this, 0);
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next < f.u->src.size()) {
      const UOp* s = f.u->src[f.next++].get();
      os << "\n";
      int depth = f.depth + 1;
      if (open(s, depth)) {
        stack.push_back({s, 0, depth});
        continue;
      }
      os << ",";
    } else {
      os << (f.u->src.empty() ? "))" : "))");
      stack.pop_back();
      if (!stack.empty()) os << ",";
    }
  }
  return os.str();
}

}  // namespace tg
