#pragma once
// A dense, eager reference for tests: row-major doubles with a shape, and the movement/reduce ops
// written the obvious way, to check lazy tensors against.
#include <cstdint>
#include <functional>
#include <vector>

namespace tgtest {

struct Ref {
  std::vector<int64_t> shape;
  std::vector<double> data;

  static Ref from(std::vector<double> data, std::vector<int64_t> shape) { return Ref{std::move(shape), std::move(data)}; }
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  std::vector<int64_t> strides() const {
    std::vector<int64_t> st(shape.size(), 1);
    for (int64_t i = int64_t(shape.size()) - 2; i >= 0; i--) st[size_t(i)] = st[size_t(i) + 1] * shape[size_t(i) + 1];
    return st;
  }
  // Build a new Ref of `out_shape` where each element is f(out multi-index).
  static Ref generate(const std::vector<int64_t>& out_shape, const std::function<double(const std::vector<int64_t>&)>& f) {
    Ref r{out_shape, {}};
    int64_t n = r.numel();
    r.data.resize(size_t(n));
    std::vector<int64_t> idx(out_shape.size(), 0);
    for (int64_t i = 0; i < n; i++) {
      r.data[size_t(i)] = f(idx);
      for (int64_t d = int64_t(idx.size()) - 1; d >= 0; d--) {
        if (++idx[size_t(d)] < out_shape[size_t(d)]) break;
        idx[size_t(d)] = 0;
      }
    }
    return r;
  }
  double at(const std::vector<int64_t>& idx) const {
    auto st = strides();
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); d++) off += idx[d] * st[d];
    return data[size_t(off)];
  }
  Ref permute(const std::vector<int64_t>& order) const {
    std::vector<int64_t> s;
    for (auto o : order) s.push_back(shape[size_t(o)]);
    return generate(s, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src(shape.size());
      for (size_t d = 0; d < order.size(); d++) src[size_t(order[d])] = i[d];
      return at(src);
    });
  }
  Ref pad(const std::vector<std::pair<int64_t, int64_t>>& p) const {
    std::vector<int64_t> s = shape;
    for (size_t d = 0; d < s.size(); d++) s[d] += p[d].first + p[d].second;
    return generate(s, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src(shape.size());
      for (size_t d = 0; d < shape.size(); d++) {
        src[d] = i[d] - p[d].first;
        if (src[d] < 0 || src[d] >= shape[d]) return 0.0;
      }
      return at(src);
    });
  }
  Ref shrink(const std::vector<std::pair<int64_t, int64_t>>& b) const {
    std::vector<int64_t> s;
    for (auto& [lo, hi] : b) s.push_back(hi - lo);
    return generate(s, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src(shape.size());
      for (size_t d = 0; d < shape.size(); d++) src[d] = i[d] + b[d].first;
      return at(src);
    });
  }
  Ref flip(const std::vector<int64_t>& axes) const {
    return generate(shape, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src = i;
      for (auto a : axes) src[size_t(a)] = shape[size_t(a)] - 1 - i[size_t(a)];
      return at(src);
    });
  }
  Ref expand(const std::vector<int64_t>& s) const {
    return generate(s, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src(shape.size());
      for (size_t d = 0; d < shape.size(); d++) src[d] = shape[d] == 1 ? 0 : i[d];
      return at(src);
    });
  }
  Ref reshape(const std::vector<int64_t>& s) const { return Ref{s, data}; }
  Ref sum(int64_t axis) const {
    std::vector<int64_t> s = shape;
    s[size_t(axis)] = 1;
    return generate(s, [&](const std::vector<int64_t>& i) {
      double acc = 0;
      std::vector<int64_t> src = i;
      for (int64_t k = 0; k < shape[size_t(axis)]; k++) {
        src[size_t(axis)] = k;
        acc += at(src);
      }
      return acc;
    });
  }
  Ref map(const std::function<double(double)>& f) const {
    Ref r = *this;
    for (auto& v : r.data) v = f(v);
    return r;
  }
};

// C = A @ B for row-major (batch, m, k) x (batch, k, n) floats, in double.
inline std::vector<double> matmul_ref(const std::vector<float>& a, const std::vector<float>& b, int64_t batch,
                                      int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(size_t(batch * m * n), 0.0);
  for (int64_t z = 0; z < batch; z++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t l = 0; l < k; l++)
          c[size_t((z * m + i) * n + j)] += double(a[size_t((z * m + i) * k + l)]) * b[size_t((z * k + l) * n + j)];
  return c;
}

// DOT4 (exec_alu's): c + the 4 unsigned bytes of a times the 4 signed bytes of b, the sum wrapping in 32 bits.
inline int32_t dot4_ref(int32_t a, int32_t b, int32_t c) {
  uint32_t s = uint32_t(c);
  for (int k = 0; k < 32; k += 8) s += uint32_t(int32_t((uint32_t(a) >> k) & 255u) * int32_t(int8_t(uint32_t(b) >> k)));
  return int32_t(s);
}

}  // namespace tgtest
