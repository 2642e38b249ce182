#pragma once
// More of the dense reference (reference.h): numpy's indexing written the obvious way (one output element at a
// time), and small helpers for random data. Independent of the library's own index parsing on purpose.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "random_data.h"
#include "reference.h"

namespace tgtest {

// One index entry for ref_getitem: an int, a slice, None (new axis), or an integer array (shape + values).
struct RefIndex {
  enum Kind { kInt, kSlice, kNone, kArray } kind;
  int64_t i = 0;
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  Ref array;

  static RefIndex integer(int64_t v) { return RefIndex{kInt, v}; }
  static RefIndex slice(std::optional<int64_t> a = std::nullopt, std::optional<int64_t> b = std::nullopt,
                        int64_t step = 1) {
    RefIndex r{kSlice};
    r.start = a, r.stop = b, r.step = step;
    return r;
  }
  static RefIndex none() { return RefIndex{kNone}; }
  static RefIndex arr(std::vector<double> v, std::vector<int64_t> shape) {
    RefIndex r{kArray};
    r.array = Ref::from(std::move(v), std::move(shape));
    return r;
  }
};

// The positions range(n)[a:b:step] visits, by testing every position (no slice.indices arithmetic).
inline std::vector<int64_t> ref_slice_positions(int64_t n, std::optional<int64_t> a, std::optional<int64_t> b,
                                                int64_t step) {
  std::vector<int64_t> out;
  if (step > 0) {
    int64_t lo = a ? (*a < 0 ? *a + n : *a) : 0, hi = b ? (*b < 0 ? *b + n : *b) : n;
    lo = std::max<int64_t>(lo, 0);
    for (int64_t i = 0; i < n; i++)
      if (i >= lo && i < hi && (i - lo) % step == 0) out.push_back(i);
  } else {
    int64_t hi = a ? (*a < 0 ? *a + n : *a) : n - 1, lo = b ? (*b < 0 ? *b + n : *b) : -1;
    hi = std::min(hi, n - 1);
    if (b && *b < 0 && *b + n < 0) lo = -1;
    for (int64_t i = n - 1; i >= 0; i--)
      if (i <= hi && i > lo && (hi - i) % (-step) == 0) out.push_back(i);
  }
  return out;
}

// torch's (and tinygrad's) x[idx], written out (the indices must cover at most x.ndim dims; missing trailing dims
// are full slices). Arrays are advanced indices; ints are basic ones applied first (numpy would count them as
// advanced), so arrays with only ints between them are adjacent; otherwise the broadcast dims go first. An
// array value out of range reads 0 (tinygrad's rule; numpy would raise). Negative values count from the end.
inline Ref ref_getitem(const Ref& x, std::vector<RefIndex> idx) {
  int64_t real = 0;
  for (auto& e : idx) real += e.kind != RefIndex::kNone;
  for (int64_t k = real; k < int64_t(x.shape.size()); k++) idx.push_back(RefIndex::slice());
  // Broadcast shape of the arrays, and which entries are advanced.
  std::vector<int64_t> big;
  std::vector<size_t> adv;
  for (size_t e = 0; e < idx.size(); e++) {
    if (idx[e].kind == RefIndex::kArray) adv.push_back(e);
    if (idx[e].kind != RefIndex::kArray) continue;
    const auto& s = idx[e].array.shape;
    if (s.size() > big.size()) big.insert(big.begin(), s.size() - big.size(), 1);
    for (size_t i = 0; i < s.size(); i++) {
      int64_t& b = big[big.size() - s.size() + i];
      if (b == 1) b = s[i];
    }
  }
  bool adjacent = true;
  for (size_t e = adv.empty() ? 1 : adv.front(); !adv.empty() && e <= adv.back(); e++)
    adjacent &= idx[e].kind == RefIndex::kArray || idx[e].kind == RefIndex::kInt;
  // Output layout: one slot per slice/None entry, plus the big block (at the first advanced entry, or first).
  std::vector<std::vector<int64_t>> positions(idx.size());
  std::vector<int64_t> out_shape;
  std::vector<int64_t> slot_of(idx.size(), -1);
  int64_t big_at = -1, src_dim = 0;
  for (size_t e = 0; e < idx.size(); e++) {
    if (!adv.empty() && e == adv.front()) {
      big_at = adjacent ? int64_t(out_shape.size()) : 0;
      if (adjacent) out_shape.insert(out_shape.end(), big.begin(), big.end());
    }
    if (idx[e].kind == RefIndex::kSlice) {
      positions[e] = ref_slice_positions(x.shape[size_t(src_dim)], idx[e].start, idx[e].stop, idx[e].step);
      slot_of[e] = int64_t(out_shape.size());
      out_shape.push_back(int64_t(positions[e].size()));
    } else if (idx[e].kind == RefIndex::kNone) {
      slot_of[e] = int64_t(out_shape.size());
      out_shape.push_back(1);
    }  // an int collapses its dim (basic or advanced alike: it adds no output dim of its own)
    if (idx[e].kind != RefIndex::kNone) src_dim++;
  }
  if (!adv.empty() && !adjacent) {
    out_shape.insert(out_shape.begin(), big.begin(), big.end());
    for (auto& s : slot_of)
      if (s >= 0) s += int64_t(big.size());
  }
  return Ref::generate(out_shape, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> src;
    int64_t b0 = big_at < 0 ? 0 : big_at, b1 = big_at < 0 ? 0 : big_at + int64_t(big.size());
    std::vector<int64_t> bi(o.begin() + b0, o.begin() + b1);
    int64_t d = 0;
    for (size_t e = 0; e < idx.size(); e++) {
      const RefIndex& r = idx[e];
      if (r.kind == RefIndex::kNone) continue;
      int64_t n = x.shape[size_t(d++)], v = 0;
      if (r.kind == RefIndex::kSlice) {
        v = positions[e][size_t(o[size_t(slot_of[e])])];
      } else if (r.kind == RefIndex::kInt) {
        v = r.i < 0 ? r.i + n : r.i;
      } else {
        std::vector<int64_t> ai(r.array.shape.size());
        for (size_t i = 0; i < ai.size(); i++) {
          int64_t b = bi[bi.size() - ai.size() + i];
          ai[i] = r.array.shape[i] == 1 ? 0 : b;
        }
        v = int64_t(r.array.at(ai));
        if (v < 0) v += n;
        if (v < 0 || v >= n) return 0.0;
      }
      src.push_back(v);
    }
    return x.at(src);
  });
}

// Uniform random ints in [lo, hi], reproducible from seed.
inline std::vector<int32_t> rand_ints(size_t n, unsigned seed, int32_t lo, int32_t hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

inline int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (auto v : s) n *= v;
  return n;
}

}  // namespace tgtest
