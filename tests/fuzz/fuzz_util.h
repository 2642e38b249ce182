#pragma once
// Shared by the libFuzzer harnesses: a loaded file's tensors are read back in full (every buffer the graph
// refers to, bounds-checked against the file's bytes when it points into them), and a tg::Error is the
// one allowed way to refuse input. Anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstdio>
#include <cstdlib>
#include <unordered_set>
#include <vector>

#include "nn/state/file_bytes.h"
#include "engine/buffers.h"
#include "tg/tg.h"

namespace fuzz {

inline void read_all_buffers(const std::vector<tg::Tensor>& tensors, const tg::nn::state::FileBytes* file) {
  std::vector<const tg::UOp*> stack;
  std::unordered_set<const tg::UOp*> seen;
  for (auto& t : tensors) stack.push_back(t.uop().get());
  while (!stack.empty()) {
    const tg::UOp* u = stack.back();
    stack.pop_back();
    if (!seen.insert(u).second) continue;
    for (auto& s : u->src) stack.push_back(s.get());
    if (u->op != tg::Ops::BUFFER) continue;
    auto buf = tg::buffer_of(u);
    if (!buf->allocated() || buf->nbytes() == 0) continue;
    if (file && buf->external()) {
      auto p = static_cast<const uint8_t*>(buf->ptr());
      if (p < file->data || p + buf->nbytes() > file->data + file->size) {
        std::fprintf(stderr, "buffer of %zu bytes outside the %zu-byte file\n", buf->nbytes(), file->size);
        std::abort();
      }
    }
    std::vector<uint8_t> out(buf->nbytes());
    buf->copyout(out.data(), out.size());
  }
}

template <class M>
std::vector<tg::Tensor> values(const M& m) {
  std::vector<tg::Tensor> v;
  for (auto& [k, t] : m) v.push_back(t);
  return v;
}

}  // namespace fuzz
