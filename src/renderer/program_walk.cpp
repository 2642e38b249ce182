// ProgramWalk: the checks, counts and parameters every renderer's walk shares (see program_walk.h).
#include "renderer/program_walk.h"

#include "renderer/renderer.h"
#include "tg/error.h"

namespace tg {

void ProgramWalk::index_nodes() {
  if (!is_identifier(name_)) throw Error("render: kernel name '" + name_ + "' is not an identifier");
  for (size_t i = 0; i < n_; i++) {
    const UOp* u = uops_[i].get();
    if (!u) throw Error("render " + name_ + ": null node at " + std::to_string(i));
    for (auto& s : u->src)
      if (!pos_.count(s.get()))
        throw Error("render " + name_ + ": node " + std::to_string(i) + " (" + op_name(u->op) +
                    ") uses a source that does not come before it in the list");
    if (!pos_.emplace(u, i).second) throw Error("render " + name_ + ": node " + std::to_string(i) + " listed twice");
    if (u->op == Ops::STORE && !u->src.empty()) written_.insert(u->src[0].get());
  }
}

void ProgramWalk::count_uses(const std::function<int(const UOp&, size_t)>& weight) {
  uses_.assign(n_, 0);
  user_.assign(n_, 0);
  for (size_t i = 0; i < n_; i++) {
    const UOp& u = *uops_[i];
    for (size_t k = 0; k < u.src.size(); k++) {
      const size_t s = pos_.at(u.src[k].get());
      uses_[s] += weight ? weight(u, k) : 1;
      user_[s] = i;
    }
  }
}

std::string ProgramWalk::where(size_t i) const {
  return "render " + name_ + ": node " + std::to_string(i) + " (" + op_name(uops_[i]->op) + ")";
}

void ProgramWalk::buffer_param(size_t i, const UOp& u, const std::string& name) {
  if (!u.dtype.ptr) throw Error(where(i) + ": a buffer parameter needs a pointer dtype, got " + u.dtype.repr());
  const int64_t idx = u.get<int64_t>();
  if (idx < 0) throw Error(where(i) + ": negative parameter position");
  if (size_t(idx) >= bufs_.size()) bufs_.resize(size_t(idx) + 1);
  if (!bufs_[size_t(idx)].name.empty()) throw Error(where(i) + ": two buffers at position " + std::to_string(idx));
  bufs_[size_t(idx)] = KernelParam{name, u.dtype, true, written_.count(&u) > 0};
}

void ProgramWalk::var_param(size_t i, const UOp& u, const std::string& name) {
  const auto& nr = u.get<NamedRange>();
  if (!is_identifier(nr.name)) throw Error(where(i) + ": variable name '" + nr.name + "' is not an identifier");
  vars_.push_back(KernelParam{name, u.dtype, false, false});
}

void ProgramWalk::tensor_map_param(int64_t number, const std::string& name, DType dt) {
  tensor_maps_[number] = KernelParam{name, dt, false, false, true};
}

void ProgramWalk::core_param(const std::string& name, DType dt) {
  cores_.push_back(KernelParam{name, dt, false, false});
}

std::vector<KernelParam> ProgramWalk::params() const {
  for (size_t k = 0; k < bufs_.size(); k++)
    if (bufs_[k].name.empty())
      throw Error("render " + name_ + ": no buffer at parameter position " + std::to_string(k));
  std::vector<KernelParam> out = bufs_;
  out.insert(out.end(), vars_.begin(), vars_.end());
  for (auto& entry : tensor_maps_) out.push_back(entry.second);
  out.insert(out.end(), cores_.begin(), cores_.end());
  return out;
}

}  // namespace tg
