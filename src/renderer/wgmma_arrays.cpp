#include "renderer/wgmma_arrays.h"

#include "renderer/tensor_core.h"

namespace tg {
namespace {

const UOp* acc_of(const UOp* u) {
  while (u->op == Ops::ASSIGN) u = u->src.at(0).get();
  return u;
}

// The WGMMA that reads lane l of y as its C lane l, for every l (the next one of a chain), or null.
const UOp* next_in_chain(const UOp* y, size_t lanes,
                         const std::unordered_map<const UOp*, std::vector<const UOp*>>& users) {
  auto gep_users = [&](const UOp* g) -> const std::vector<const UOp*>& {
    static const std::vector<const UOp*> none;
    auto it = users.find(g);
    return it == users.end() ? none : it->second;
  };
  const UOp* next = nullptr;
  for (const UOp* g : gep_users(y)) {
    if (g->op != Ops::GEP) return nullptr;  // a lane read by anything but the chain: keep the copies
    for (const UOp* x : gep_users(g)) {
      if (x->op != Ops::WGMMA || (next && next != x)) return nullptr;
      next = x;
    }
  }
  if (!next || next->src.size() != 5 + lanes) return nullptr;
  for (size_t l = 0; l < lanes; l++) {
    const UOp* s = next->src[5 + l].get();
    if (s->op != Ops::GEP || s->src.at(0).get() != y || s->get<int64_t>() != int64_t(l)) return nullptr;
  }
  return next;
}

}  // namespace

WgmmaArrays find_wgmma_arrays(const std::vector<UOpPtr>& uops) {
  WgmmaArrays out;
  std::unordered_map<const UOp*, size_t> pos;
  std::unordered_map<const UOp*, std::vector<const UOp*>> users;
  for (size_t i = 0; i < uops.size(); i++) {
    pos[uops[i].get()] = i;
    for (const UOpPtr& s : uops[i]->src) users[s.get()].push_back(uops[i].get());
  }
  for (const UOpPtr& first : uops) {
    if (first->op != Ops::WGMMA || !WgmmaArg::of(*first).fence) continue;
    const size_t lanes = size_t(WgmmaArg::of(*first).n / 2);
    if (first->src.size() != 5 + lanes) continue;
    std::vector<const UOp*> accs;
    std::unordered_set<const UOp*> seen;
    for (size_t l = 0; l < lanes; l++) {
      const UOp* a = first->src[5 + l].get();
      if (a->op == Ops::DEFINE_ACC && !out.acc.count(a) && seen.insert(a).second) accs.push_back(a);
    }
    if (accs.size() != lanes) continue;
    std::vector<const UOp*> chain{first.get()};
    while (!WgmmaArg::of(*chain.back()).wait) {
      const UOp* next = next_in_chain(chain.back(), lanes, users);
      if (!next) break;
      chain.push_back(next);
    }
    const UOp* last = chain.back();
    if (!WgmmaArg::of(*last).wait) continue;
    // each lane's accumulator: written back from the last WGMMA's same lane, and read by nothing else while the
    // chain updates it (between the first WGMMA and that ASSIGN)
    std::vector<const UOp*> assigns;
    for (size_t l = 0; l < lanes; l++) {
      const UOp* back = nullptr;
      for (const UOp* g : users[last])
        if (g->op == Ops::GEP && g->get<int64_t>() == int64_t(l))
          for (const UOp* a : users[g])
            if (a->op == Ops::ASSIGN && a->src.at(1).get() == g && acc_of(a->src.at(0).get()) == accs[l]) back = a;
      if (!back) break;
      for (const UOp* reader : users[accs[l]])
        if (reader != first.get() && pos[reader] > pos[first.get()] && pos[reader] < pos[back]) back = nullptr;
      if (!back) break;
      assigns.push_back(back);
    }
    if (assigns.size() != lanes) continue;
    const int array = int(out.lanes.size());
    out.lanes.push_back(int(lanes));
    const UOp* init = accs[0]->src.at(0).get();
    for (const UOp* a : accs)
      if (a->src.at(0).get() != init) init = nullptr;
    out.init.push_back(init);
    for (size_t l = 0; l < lanes; l++) out.acc[accs[l]] = {array, int(l)};
    for (const UOp* w : chain) out.wgmma[w] = array;
    out.assign.insert(assigns.begin(), assigns.end());
  }
  return out;
}

}  // namespace tg
