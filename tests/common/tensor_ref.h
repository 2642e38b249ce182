#pragma once
// Tensors against the dense reference (reference.h / reference_extra.h): random inputs and an exact comparison.
#include <gtest/gtest.h>

#include <vector>

#include "reference_extra.h"
#include "tg/tg.h"

namespace tgtest {

inline tg::Tensor rand_tensor(const tg::Shape& s, unsigned seed) {
  return tg::Tensor(random_floats(size_t(numel_of(s)), seed), s);
}

inline Ref to_ref(const tg::Tensor& t) { return Ref::from(t.tolist<double>(), t.shape()); }

// Same shape and exactly the same values (as doubles) as the reference.
inline void expect_ref(const tg::Tensor& t, const Ref& r) {
  ASSERT_EQ(t.shape(), r.shape);
  std::vector<double> v = t.tolist<double>();
  ASSERT_EQ(v.size(), r.data.size());
  for (size_t i = 0; i < v.size(); i++) EXPECT_DOUBLE_EQ(v[i], r.data[i]) << "at flat index " << i;
}

}  // namespace tgtest
