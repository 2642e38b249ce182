#pragma once
// Test helper: evaluate scalar UOp graphs with exec_alu (the semantics compiled code has). Variables
// (DEFINE_VAR, SPECIAL, RANGE) take their values from the caller, in the order given to the constructor.
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "uop/exec_alu.h"
#include "uop/uop.h"

namespace tg::testing {

class UOpEvaluator {
 public:
  UOpEvaluator(const std::vector<UOpPtr>& roots, const std::vector<UOpPtr>& vars) : roots_(roots) {
    std::unordered_map<const UOp*, int> var_slot;
    for (size_t i = 0; i < vars.size(); i++) var_slot[vars[i].get()] = int(i);
    for (auto& r : roots) {
      for (const UOp* u : toposort(r)) {
        if (index_.count(u)) continue;
        Node n{u, {}, -1};
        for (auto& s : u->src) n.srcs.push_back(index_.at(s.get()));
        if (auto it = var_slot.find(u); it != var_slot.end())
          n.var = it->second;
        else if (u->op != Ops::CONST && u->op != Ops::CAST && u->op != Ops::BITCAST && !is_alu(u->op))
          throw std::runtime_error(std::string("UOpEvaluator: cannot evaluate ") + op_name(u->op));
        index_[u] = nodes_.size();
        nodes_.push_back(std::move(n));
      }
    }
    vals_.resize(nodes_.size());
  }

  // Evaluate everything for one assignment of the variables.
  void run(const std::vector<int64_t>& var_values) {
    std::vector<Num> args;
    for (size_t i = 0; i < nodes_.size(); i++) {
      const Node& n = nodes_[i];
      const UOp& u = *n.u;
      if (n.var >= 0) {
        vals_[i] = Num{var_values[size_t(n.var)], double(var_values[size_t(n.var)])};
      } else if (u.op == Ops::CONST) {
        Num v;
        if (auto* b = std::get_if<bool>(&u.arg))
          v.i = *b;
        else if (auto* k = std::get_if<int64_t>(&u.arg))
          v.i = *k, v.f = double(*k);
        else
          v.f = std::get<double>(u.arg);
        vals_[i] = truncate_num(v, u.dtype);
      } else {
        args.clear();
        for (size_t s : n.srcs) args.push_back(vals_[s]);
        DType src_dt = u.op == Ops::WHERE ? u.src[1]->dtype : u.src[0]->dtype;
        vals_[i] = exec_alu(u.op, u.dtype, src_dt, args);
      }
    }
  }

  const Num& value(size_t root) const { return vals_[index_.at(roots_[root].get())]; }
  size_t size() const { return nodes_.size(); }

 private:
  struct Node {
    const UOp* u;
    std::vector<size_t> srcs;
    int var;
  };
  std::vector<UOpPtr> roots_;
  std::vector<Node> nodes_;
  std::unordered_map<const UOp*, size_t> index_;
  std::vector<Num> vals_;
};

}  // namespace tg::testing
