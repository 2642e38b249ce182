// Weights kept in llama.cpp's quantized blocks (include/tg/block_weight.h): linear() and dense() against loops over
// the raw parts (ggml's dequantize_row_q4_0 / q4_1 / q8_0), in decode (one row) and prefill (several rows) shapes;
// part checks; a Linear that stops using its blocks when its weight is replaced. In the op suite, so it also runs
// on INTERP (EMULATE=CUDA), CUDA and with CC=gcc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../common/expect_error.h"
#include "../common/float16_bits.h"
#include "tg/block_weight.h"
#include "tg/context.h"
#include "tg/nn.h"
#include "tg/tg.h"

using tg::Shape;
using tg::Tensor;
namespace dtypes = tg::dtypes;

namespace {


// Random parts of an out x in matrix and the weights they decode to, row-major.
struct Parts {
  std::string format;
  int64_t out, in;
  std::vector<uint16_t> scale, offset;
  std::vector<uint8_t> quants;
  std::vector<float> dense;

  Parts(std::string f, int64_t o, int64_t i, uint32_t seed) : format(std::move(f)), out(o), in(i) {
    std::mt19937 rng(seed);
    const int64_t nb = in / 32, bytes = format == "Q8_0" ? 32 : 16;
    // scales of either sign around 0.01-0.1 (float16 bits of a float drawn here, decoded back exactly)
    std::uniform_int_distribution<int> exp(8, 11), mant(0, 1023), bit(0, 1), byte(0, 255);
    auto half = [&] { return uint16_t((bit(rng) << 15) | (exp(rng) << 10) | mant(rng)); };
    for (int64_t k = 0; k < out * nb; k++) scale.push_back(half());
    if (format == "Q4_1")
      for (int64_t k = 0; k < out * nb; k++) offset.push_back(half());
    for (int64_t k = 0; k < out * nb * bytes; k++) quants.push_back(uint8_t(byte(rng)));
    if (format == "Q8_0") quants[0] = 0x80, quants[1] = 0x7f, quants[2] = 0;  // -128, 127 and 0 in the first word
    for (int64_t r = 0; r < out; r++)
      for (int64_t b = 0; b < nb; b++) {
        const int64_t blk = r * nb + b;
        const float d = tgtest::float16_bits_to_float(scale[size_t(blk)]);
        for (int64_t j = 0; j < 32; j++) {
          const uint8_t* q = &quants[size_t(blk * bytes)];
          float v;
          if (format == "Q8_0")
            v = d * float(int8_t(q[j]));
          else {
            const int nib = j < 16 ? q[j] & 15 : q[j - 16] >> 4;
            v = format == "Q4_0" ? d * float(nib - 8) : d * float(nib) + tgtest::float16_bits_to_float(offset[size_t(blk)]);
          }
          dense.push_back(v);
        }
      }
  }
  tg::nn::BlockWeight weight() const {
    const int64_t nb = in / 32;
    auto halves = [&](const std::vector<uint16_t>& v) {
      return Tensor(std::vector<uint16_t>(v), {out, nb}).bitcast(dtypes::float16).contiguous().realize();
    };
    std::optional<Tensor> off;
    if (format == "Q4_1") off = halves(offset);
    Tensor q = format == "Q8_0" ? Tensor(quants, {out, nb, 32}).bitcast(dtypes::int8) : Tensor(quants, {out, nb, 16});
    q = q.contiguous().realize();
    return tg::nn::BlockWeight(format, halves(scale), off, q);
  }
};

// x (rows, in) @ dense.T in double.
std::vector<double> reference(const std::vector<float>& x, int64_t rows, const Parts& p) {
  std::vector<double> y(size_t(rows * p.out));
  for (int64_t t = 0; t < rows; t++)
    for (int64_t n = 0; n < p.out; n++) {
      double s = 0;
      for (int64_t k = 0; k < p.in; k++) s += double(x[size_t(t * p.in + k)]) * p.dense[size_t(n * p.in + k)];
      y[size_t(t * p.out + n)] = s;
    }
  return y;
}

// What the integer dot products compute (rows in 16s): x's blocks of 32 in int8 (half to even of x * (127 / max |x|),
// in float), then per block d * dx * (q . xq) + m * dx * (sum of xq), m = -8 d for Q4_0 and 0 for Q8_0: the
// dequantized weights times the rounded x. `mag` gets the sum of the terms' magnitudes (the scale of float32's
// rounding) and `bound` how far the int8 x may take the result from x @ dense.T: sum over blocks of
// max |x| / 254 * sum |w| (half a step of xq per weight, each step meeting its whole weight).
std::vector<double> integer_reference(const std::vector<float>& x, int64_t rows, const Parts& p,
                                      std::vector<double>& mag, std::vector<double>& bound) {
  const int64_t nb = p.in / 32;
  std::vector<double> y(size_t(rows * p.out));
  mag.assign(y.size(), 0), bound.assign(y.size(), 0);
  for (int64_t t = 0; t < rows; t++)
    for (int64_t b = 0; b < nb; b++) {
      const float* xb = &x[size_t(t * p.in + b * 32)];
      float amax = 0;
      for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(xb[j]));
      const float inv = amax > 0 ? 127.0f / amax : 0.0f, dx = amax / 127.0f;
      int xq[32], xq_sum = 0;
      for (int j = 0; j < 32; j++) xq[j] = int(std::nearbyint(xb[j] * inv)), xq_sum += xq[j];
      for (int64_t n = 0; n < p.out; n++) {
        const int64_t blk = n * nb + b;
        const bool q8 = p.format == "Q8_0";
        const uint8_t* q = &p.quants[size_t(blk * (q8 ? 32 : 16))];
        int isum = 0;
        double wsum = 0;
        for (int j = 0; j < 32; j++) {
          isum += (q8 ? int(int8_t(q[j])) : j < 16 ? q[j] & 15 : q[j - 16] >> 4) * xq[j];
          wsum += std::fabs(p.dense[size_t(n * p.in + b * 32 + j)]);
        }
        const double d = tgtest::float16_bits_to_float(p.scale[size_t(blk)]);
        const double m = p.format == "Q4_1" ? double(tgtest::float16_bits_to_float(p.offset[size_t(blk)]))
                         : q8                 ? 0.0
                                              : -8 * d;
        const double term = double(isum) * d * double(dx), offset_term = m * double(dx) * xq_sum;
        const size_t o = size_t(t * p.out + n);
        y[o] += term + offset_term;
        mag[o] += std::fabs(term) + std::fabs(offset_term);
        bound[o] += double(amax) / 254 * wsum;
      }
    }
  return y;
}

std::vector<float> random_x(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x;
  for (int64_t i = 0; i < n; i++) x.push_back(u(rng));
  return x;
}

}  // namespace

// QDOT=0: the blocks dequantized inside the matmul, products in float32: x @ dense.T within float32 rounding.
TEST(BlockWeight, LinearAndDenseMatchTheDequantizedLoops) {
  tg::Context ctx({{"QDOT", 0}});
  for (const char* format : {"Q4_0", "Q4_1", "Q8_0"}) {
    for (auto [out, in] : {std::pair<int64_t, int64_t>{48, 64}, {33, 96}, {1, 32}}) {
      SCOPED_TRACE(std::string(format) + " " + std::to_string(out) + "x" + std::to_string(in));
      const Parts p(format, out, in, uint32_t(out * 7 + in));
      const tg::nn::BlockWeight w = p.weight();
      EXPECT_EQ(w.out_features(), out);
      EXPECT_EQ(w.in_features(), in);
      EXPECT_EQ(w.dense().tolist<float>(), p.dense);  // exact: one product and one sum of float16 values per weight
      for (int64_t rows : {1, 5}) {                   // a decode step's one row, a short prompt's several
        const std::vector<float> x = random_x(rows * in, uint32_t(rows));
        const std::vector<double> want = reference(x, rows, p);
        const Shape shape = rows == 1 ? Shape{1, 1, in} : Shape{rows, in};
        std::vector<float> got = w.linear(Tensor(x, shape)).tolist<float>();
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
        // float16 activations: the result comes back in float16
        Tensor y16 = w.linear(Tensor(x, shape).cast(dtypes::float16));
        EXPECT_EQ(y16.dtype(), dtypes::float16);
        got = y16.cast(dtypes::float32).tolist<float>();
        for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 2e-2 * (1 + std::fabs(want[i]))) << i;
      }
    }
  }
}

// QDOT=1 (the default; on CPUs) or 2: matrices whose rows come in 16s take integer dot products against x in int8
// blocks (Q8_0's bytes stored + 128; its first word holds -128, 127 and 0). Their result equals the integer loops'
// within float32 rounding, and x @ dense.T within what int8 x costs; dense() stays exact (read back from the
// interleaved copies). Shapes: 3 groups of 16 rows, SmolLM2's 576 inputs (18 blocks), and 512 x 576, large enough to
// split across threads. Rows not in 16s stay in float.
TEST(BlockWeight, IntegerDotProductsMatchTheIntegerLoops) {
  tg::Context ctx({{"QDOT", 2}});  // (on every device, not only CPUs)
  for (const char* format : {"Q4_0", "Q4_1", "Q8_0"}) {
    for (auto [out, in] : {std::pair<int64_t, int64_t>{48, 64}, {96, 576}, {512, 576}}) {
      SCOPED_TRACE(std::string(format) + " " + std::to_string(out) + "x" + std::to_string(in));
      const Parts p(format, out, in, uint32_t(out * 5 + in));
      const tg::nn::BlockWeight w = p.weight();
      EXPECT_EQ(w.dense().tolist<float>(), p.dense);
      for (int64_t rows : {1, 3}) {
        std::vector<float> x = random_x(rows * in, uint32_t(rows + 7));
        for (int j = 0; j < 32; j++) x[size_t(j)] = 0;  // a block of zeros (max |x| = 0)
        x[40] = 2.5f;                                   // and ties: 2.5 * 127 / 2.5 = 127 exactly
        std::vector<double> mag, bound;
        const std::vector<double> want = integer_reference(x, rows, p, mag, bound), exact = reference(x, rows, p);
        std::vector<float> got = w.linear(Tensor(x, {rows, in})).tolist<float>();
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); i++) {
          EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + mag[i])) << i;
          EXPECT_NEAR(got[i], exact[i], bound[i] + 1e-5 * (1 + mag[i])) << i;
        }
      }
    }
  }
}

TEST(BlockWeight, PartsThatDoNotFitNameWhatWasExpected) {
  const Tensor scale = Tensor::zeros({4, 2}, {.dtype = dtypes::float16});
  const Tensor q4 = Tensor::zeros({4, 2, 16}, {.dtype = dtypes::uint8});
  tgtest::expect_error([&] { tg::nn::BlockWeight("Q5_0", scale, std::nullopt, q4); }, "not one of Q4_0, Q4_1, Q8_0");
  tgtest::expect_error([&] { tg::nn::BlockWeight("Q4_1", scale, std::nullopt, q4); }, "offset (out, n_blocks)");
  tgtest::expect_error([&] { tg::nn::BlockWeight("Q8_0", scale, std::nullopt, q4); },
                       "quants (out, n_blocks, 32) signed char");
  tgtest::expect_error([&] { tg::nn::BlockWeight("Q4_0", scale.cast(dtypes::float32), std::nullopt, q4); },
                       "scale (4, 2) float");
  tgtest::expect_error(
      [&] {
        tg::nn::BlockWeight("Q4_0", scale, std::nullopt, q4.reshape({4, 32}));
      },
      "quants (4, 32)");
  const tg::nn::BlockWeight w("Q4_0", scale, std::nullopt, q4);
  tgtest::expect_error([&] { w.linear(Tensor::zeros({3, 63})); }, "must end in the 64 input features");
  tg::nn::Linear small(32, 4, false);
  tgtest::expect_error([&] { small.use_blocks(w); }, "Linear::use_blocks: a 4x64 Q4_0 weight for a layer of 32 inputs");
}

TEST(BlockWeight, LinearUsesTheBlocksUntilItsWeightIsReplaced) {
  const Parts p("Q4_1", 8, 64, 3);
  tg::nn::Linear layer(64, 8, /*bias=*/false);
  layer.use_blocks(p.weight());
  ASSERT_TRUE(layer.blocks);
  EXPECT_TRUE(layer.blocks->serves(layer.weight));
  const std::vector<float> x = random_x(64, 9);
  const std::vector<double> want = reference(x, 1, p);
  std::vector<float> got = layer(Tensor(x, {1, 64})).tolist<float>();
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i])));
  // A new weight (a state dict loaded over it, say) is what the layer multiplies by from then on.
  layer.weight = Tensor::ones({8, 64});
  EXPECT_FALSE(layer.blocks->serves(layer.weight));
  double sum = 0;
  for (float v : x) sum += v;
  got = layer(Tensor(x, {1, 64})).tolist<float>();
  for (float v : got) EXPECT_NEAR(v, sum, 1e-4);
}

TEST(BlockWeight, SeveralRowsDequantizeInsideTheMatmul) {
  // The blocks are read by every row of x (an expand by 5): still one kernel, no dense float32 copy of the weight
  // (which the realized table would then keep for as long as the weight lives). With integer dot products: x's
  // maxima and int8 words, then the product (which sums each block's int8 x itself).
  for (long qdot : {0L, 2L}) {
    tg::Context ctx({{"QDOT", qdot}});
    const Parts p("Q4_0", 64, 128, 5);
    const tg::nn::BlockWeight w = p.weight();
    Tensor::realize_all(w.parts());
    Tensor x = Tensor(random_x(5 * 128, 1), {5, 128}).realize();
    const int64_t before = tg::GlobalCounters::kernel_count;
    w.linear(x).realize();
    EXPECT_EQ(tg::GlobalCounters::kernel_count - before, qdot ? 3 : 1);
  }
}

TEST(BlockWeight, CatAndRowsKeepTheWeights) {
  const Parts a("Q4_1", 8, 64, 11), b("Q4_1", 4, 64, 12);
  const tg::nn::BlockWeight both = tg::nn::BlockWeight::cat({a.weight(), b.weight()});
  EXPECT_EQ(both.out_features(), 12);
  std::vector<float> want = a.dense;
  want.insert(want.end(), b.dense.begin(), b.dense.end());
  EXPECT_EQ(both.dense().tolist<float>(), want);
  EXPECT_EQ(both.rows(8, 12).dense().tolist<float>(), b.dense);
  tgtest::expect_error([&] { both.rows(4, 13); }, "[4, 13) of 12 rows");
  tgtest::expect_error([&] { tg::nn::BlockWeight::cat({a.weight(), Parts("Q8_0", 2, 64, 1).weight()}); },
                       "a Q8_0 matrix of 64 columns with a Q4_1 one");
}
