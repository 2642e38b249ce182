#pragma once
// ProgramWalk: what every renderer's walk over a linearized program shares (renderer/cstyle_walk.h and
// renderer/llvmir_walk.h): the nodes' positions, checked once (no null node, each source before its users, no
// node twice); each node's uses and last user; the buffers some STORE writes; fresh names; and the kernel's
// parameters in the order every runtime passes them: buffers by position, then variables in order of appearance,
// then tensor maps by number, then the CPU's core index.
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "uop/uop.h"

namespace tg {

// A kernel parameter: a buffer (DEFINE_GLOBAL), an integer variable (DEFINE_VAR), a tensor map (TENSOR_MAP) or the
// CPU's core index (SPECIAL core_id).
struct KernelParam {
  std::string name;
  DType dtype;  // the pointer dtype for buffers
  bool is_buffer;
  bool written;  // some STORE writes the buffer (else it is only loaded: `const`)
  bool is_tensor_map = false;
};

class ProgramWalk {
 protected:
  ProgramWalk(const std::string& name, const std::vector<UOpPtr>& uops) : name_(name), uops_(uops), n_(uops.size()) {}

  const std::string& name_;
  const std::vector<UOpPtr>& uops_;
  const size_t n_;
  std::unordered_map<const UOp*, size_t> pos_;  // node -> its position
  std::unordered_set<const UOp*> written_;      // buffers some STORE writes
  std::vector<int> uses_;                       // per node: its uses (weighted: count_uses)
  std::vector<size_t> user_;                    // per node: its last user

  // Checks the list and the kernel's name (an identifier in every backend) and fills pos_ and written_.
  void index_nodes();
  // uses_ and user_, each use of source k of a node weighted by weight(node, k) (1 without one).
  void count_uses(const std::function<int(const UOp& user, size_t k)>& weight = nullptr);
  std::string where(size_t i) const;  // "render NAME: node I (OP)", for errors
  size_t pos(const UOp* u) const { return pos_.at(u); }
  // The next number of a prefix's names ("alu" 0, 1, ...).
  int next_id(const std::string& prefix) { return counters_[prefix]++; }

  // ---- parameters ----
  void buffer_param(size_t i, const UOp& u, const std::string& name);  // a DEFINE_GLOBAL, at its position
  void var_param(size_t i, const UOp& u, const std::string& name);     // a DEFINE_VAR (its name checked)
  void tensor_map_param(int64_t number, const std::string& name, DType dt);
  void core_param(const std::string& name, DType dt);
  std::vector<KernelParam> params() const;  // in the runtimes' order; throws where a buffer position is missing

 private:
  std::map<std::string, int> counters_;
  std::vector<KernelParam> bufs_, vars_, cores_;
  std::map<int64_t, KernelParam> tensor_maps_;  // by number
};

}  // namespace tg
