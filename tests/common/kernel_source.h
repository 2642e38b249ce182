#pragma once
// Kernels of a tensor program, lowered and rendered outside any device: for tests that look at codegen's
// choices and the source a renderer writes.
#include <gtest/gtest.h>

#include <string>

#include "codegen/kernel.h"
#include "codegen/linearize.h"
#include "codegen/lowerer.h"
#include "schedule/schedule.h"
#include "tg/tg.h"

namespace tgtest {

// The AST of the last kernel of t's schedule. (create_schedule marks what it schedules as realized: build t
// from tensors that are not realized later, e.g. Tensor::empty.)
inline tg::UOpPtr last_ast(const tg::Tensor& t) {
  tg::Schedule s = tg::create_schedule({t.uop()});
  EXPECT_FALSE(s.items.empty());
  return s.items.back().ast;
}

inline std::string render(tg::Kernel& k, const tg::Renderer& r) {
  return r.render(k.name(), tg::linearize_kernel(tg::lower_kernel(k), {.sequential_sums = r.has_local()}));
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace tgtest
