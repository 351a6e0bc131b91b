// tests/autograd/test_masked_scaled_softmax.cpp — masked_scaled_softmax (autograd/ops/attention.cpp),
// the fused masked_fill(-inf), / sqrt(d_k), softmax of attention, against the composition of
// those ops it replaces (masked_scaled_softmax_reference): forward and backward bit for bit, in
// float32 and float64, on many shapes (with and without heads, T_q == T_k and T_q < T_k with a
// KV cache's offset, causal or not, key padding with fully padded rows, full and 2-d masks,
// strided inputs). Then the rules one by one, a float64 gradcheck, several threads, and the
// bad inputs by their messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using test::expect_error;
using test::leaf;
using test::normal_tensor;
using test::same_bytes;

// A bool tensor of `shape`, each element true with probability p.
Tensor random_mask(const Shape& shape, double p, std::mt19937& rng) {
  std::bernoulli_distribution coin(p);
  std::vector<int64_t> values(static_cast<size_t>(shape_numel(shape)));
  for (int64_t& v : values) v = coin(rng) ? 1 : 0;
  return from_vector(values, shape).to_bool();
}

bool all_finite(const Tensor& t) {
  for (double v : t.tolist<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

// One case: scores of `shape` (..., T_q, T_k), the mask (maybe undefined), d_k and the options.
struct Case {
  Shape shape;
  Tensor mask{};
  int64_t d_k = 1;
  MaskedSoftmaxOptions options;
  bool strided = false;  // scores (and the gradient) as transposed views, not contiguous
  std::string name() const {
    return "scores " + shape_str(shape) + (mask.defined() ? " mask " + shape_str(mask.sizes()) : "") + " d_k " +
           std::to_string(d_k) + (options.causal ? " causal, query_offset " + std::to_string(options.query_offset) : "") +
           (strided ? " strided" : "");
  }
};

// values of `shape` as a transposed view of (..., T_k, T_q) storage when strided
Tensor maybe_strided(const Tensor& t, bool strided) {
  if (!strided) return t;
  return t.transpose(-1, -2).contiguous().transpose(-1, -2);
}

// Random cases over batch 1..3, no heads or 1..4 heads, T up to 70, with and without a KV
// cache's offset, causal or not, and the masks nn/attention.cpp passes (key padding
// (b, 1, 1, T_k) with a fully padded batch row) and others (a full (b, 1, T_q, T_k) mask with
// fully masked rows, a 2-d (T_q, T_k) one).
std::vector<Case> random_cases(int count, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&rng](std::initializer_list<int64_t> values) {
    std::vector<int64_t> v(values);
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  std::vector<Case> cases;
  for (int n = 0; n < count; ++n) {
    Case c;
    const int64_t b = pick({1, 2, 3}), heads = pick({0, 1, 2, 4});
    const int64_t T_k = pick({1, 2, 5, 16, 33, 64, 70});
    const int64_t kind = pick({0, 1, 2, 3});  // self-attention, a KV cache, cross-attention, an odd offset
    int64_t T_q = T_k, offset = 0;
    if (kind == 1) {  // new queries after a cache of T_k - T_q positions
      T_q = std::uniform_int_distribution<int64_t>(1, T_k)(rng);
      offset = T_k - T_q;
    } else if (kind == 2) {  // more or fewer queries than keys, aligned at the top left
      T_q = pick({1, 3, 8, 40});
    } else if (kind == 3) {  // a negative offset masks a query's every key
      T_q = pick({1, 4, 9});
      offset = pick({-2, -1, 3});
    }
    c.shape = heads ? Shape{b, heads, T_q, T_k} : Shape{b, T_q, T_k};
    c.d_k = pick({1, 2, 7, 8, 32});
    c.options = {.causal = pick({0, 1}) == 1, .query_offset = offset};
    const int64_t mask_kind = pick({0, 1, 1, 2, 3});
    const Shape lead = heads ? Shape{b, 1} : Shape{b};
    if (mask_kind == 1) {  // key padding, batch row 0 fully padded when b > 1
      Shape s = lead;
      s.insert(s.end(), {1, T_k});
      std::vector<int64_t> padded(static_cast<size_t>(b * T_k));
      std::bernoulli_distribution coin(0.3);
      for (int64_t i = 0; i < b * T_k; ++i) padded[static_cast<size_t>(i)] = (b > 1 && i < T_k) || coin(rng);
      c.mask = from_vector(padded, s).to_bool();
    } else if (mask_kind == 2) {  // a full mask, every 5th query row fully masked
      Shape s = lead;
      s.insert(s.end(), {T_q, T_k});
      c.mask = random_mask(s, 0.4, rng);
      for (int64_t i = 0; i < T_q; i += 5) c.mask.narrow(-2, i, 1).fill_(true);
    } else if (mask_kind == 3) {  // a 2-d mask, read transposed
      c.mask = random_mask({T_k, T_q}, 0.3, rng).t();
    }
    c.strided = pick({0, 0, 1}) == 1;
    cases.push_back(c);
  }
  return cases;
}

// Fused and composed from the same scores and gradient: same output bytes, same gradient bytes.
void expect_same_bits_as_composition(const Case& c, ScalarType dtype, uint32_t seed) {
  SCOPED_TRACE(c.name() + " " + dtype_name(dtype));
  const Tensor scores = maybe_strided(normal_tensor(c.shape, seed, dtype) * 4.0, c.strided);
  const Tensor g = maybe_strided(normal_tensor(c.shape, seed + 1, dtype), c.strided);
  Tensor a = leaf(scores), b = leaf(scores);
  Tensor fused = masked_scaled_softmax(a, c.mask, c.d_k, c.options);
  Tensor composed = masked_scaled_softmax_reference(b, c.mask, c.d_k, c.options);
  ASSERT_TRUE(same_bytes(fused, composed)) << "forward";
  fused.backward(g);
  composed.backward(g);
  ASSERT_TRUE(same_bytes(a.grad(), b.grad())) << "backward";
  EXPECT_TRUE(all_finite(fused)) << "a NaN or inf in the weights";
  EXPECT_TRUE(all_finite(a.grad())) << "a NaN or inf in the gradient";
}

TEST(MaskedScaledSoftmax, MatchesTheCompositionBitForBitF32) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  uint32_t seed = 100;
  for (const Case& c : random_cases(120, 1)) expect_same_bits_as_composition(c, kFloat32, seed += 2);
}

TEST(MaskedScaledSoftmax, MatchesTheCompositionBitForBitF64) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  uint32_t seed = 500;
  for (const Case& c : random_cases(60, 2)) expect_same_bits_as_composition(c, kFloat64, seed += 2);
}

TEST(MaskedScaledSoftmax, MatchesTheCompositionAtTheGptsShapes) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // the small GPT's training step (b 4, 4 heads, T 128, hs 32, causal) and a generation step
  // with the KV cache (one new query after 99 cached positions)
  expect_same_bits_as_composition({.shape = {4, 4, 128, 128}, .d_k = 32, .options = {.causal = true}}, kFloat32, 7);
  expect_same_bits_as_composition(
      {.shape = {2, 4, 1, 100}, .d_k = 32, .options = {.causal = true, .query_offset = 99}}, kFloat32, 9);
}

TEST(MaskedScaledSoftmax, ZeroMaximaInfinitiesAndNaNGiveTheCompositionsBits) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // rows whose largest score is +0 or -0 (the row maximum's sign may come out either way),
  // scores of -inf and +inf not masked, and a NaN
  const double z = 0.0, inf = kInf, nan = std::nan("");
  const Tensor scores = tensor({{-z, -1.0, z, -2.0, -z, -3.0, z, -z, -0.5},
                                {z, -z, -z, -z, -z, z, -4.0, -z, z},
                                {-z, -z, -z, -z, -z, -z, -z, -z, -z},
                                {-1.0, -z, -1.0, -1.0, z, -1.0, -1.0, -1.0, -1.0},  // -0 from the left, +0 in lanes
                                {-inf, 1.0, -inf, 2.0, -inf, -inf, 0.5, -inf, 3.0},
                                {-inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf},
                                {1.0, inf, 2.0, -1.0, 0.0, 3.0, 4.0, 5.0, 6.0},
                                {1.0, nan, 2.0, -1.0, 0.0, 3.0, 4.0, 5.0, 6.0}});
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (causal ? " causal" : ""));
      Tensor a = leaf(scores.to(dtype)), b = leaf(scores.to(dtype));
      Tensor fused = masked_scaled_softmax(a, Tensor(), 1, {.causal = causal, .query_offset = 2});
      Tensor composed = masked_scaled_softmax_reference(b, Tensor(), 1, {.causal = causal, .query_offset = 2});
      EXPECT_TRUE(same_bytes(fused, composed)) << "forward";
      const Tensor g = normal_tensor(scores.sizes(), 3, dtype);
      fused.backward(g);
      composed.backward(g);
      EXPECT_TRUE(same_bytes(a.grad(), b.grad())) << "backward";
    }
  }
}

TEST(MaskedScaledSoftmax, CausalRowsAreTheSoftmaxOfTheirVisibleKeys) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // query i after `offset` cached positions sees keys 0..offset+i: its weights there are
  // softmax(scores / sqrt(d_k)) of that prefix, and 0 after it
  const int64_t T_q = 5, T_k = 9, offset = T_k - T_q, d_k = 8;
  const Tensor scores = normal_tensor({2, T_q, T_k}, 3, kFloat32);
  const Tensor y = masked_scaled_softmax(scores, Tensor(), d_k, {.causal = true, .query_offset = offset});
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t i = 0; i < T_q; ++i) {
      const int64_t visible = offset + i + 1;
      const Tensor prefix = scores.select(0, n).select(0, i).narrow(0, 0, visible);
      EXPECT_TRUE(same_bytes(y.select(0, n).select(0, i).narrow(0, 0, visible),
                             softmax(prefix / std::sqrt(static_cast<double>(d_k)), -1)))
          << "batch " << n << " query " << i;
      if (visible < T_k) {
        EXPECT_TRUE(same_bytes(y.select(0, n).select(0, i).narrow(0, visible, T_k - visible),
                               zeros({T_k - visible})))
            << "batch " << n << " query " << i;
      }
    }
  }
}

TEST(MaskedScaledSoftmax, FullyMaskedRowsGetZeroWeightsAndZeroGradients) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // batch row 1 has every key padded; the rest have some
  const Tensor padded = tensor({{false, true, false, false}, {true, true, true, true}}).view({2, 1, 1, 4});
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    Tensor scores = leaf(normal_tensor({2, 3, 4, 4}, 11, kFloat32));
    Tensor y = masked_scaled_softmax(scores, padded, 16, {.causal = causal});
    y.backward(normal_tensor({2, 3, 4, 4}, 12, kFloat32));
    EXPECT_TRUE(same_bytes(y.select(0, 1), zeros({3, 4, 4}))) << "weights of the fully padded batch row";
    EXPECT_TRUE(same_bytes(scores.grad().select(0, 1), zeros({3, 4, 4}))) << "its gradient";
    EXPECT_TRUE(same_bytes(y.select(0, 0).select(-1, 1), zeros({3, 4}))) << "the padded key of batch row 0";
    EXPECT_TRUE(test::all_close(y.select(0, 0).sum(-1), ones({3, 4}), 1e-6, 0)) << "batch row 0 sums to 1";
  }
}

TEST(MaskedScaledSoftmax, BackwardMatchesFiniteDifferencesF64) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // causal after a cache of 2, a padded key, a fully padded batch row; scores strided in the
  // fuzz runs
  const Tensor padded = tensor({{false, false, true, false, false}, {true, true, true, true, true}}).view({2, 1, 1, 5});
  for (const Tensor& mask : {Tensor(), padded}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(mask.defined() ? "padded" : "no mask") + (causal ? ", causal" : ""));
      const GradcheckFn fn = [&](const std::vector<Tensor>& x) {
        return masked_scaled_softmax(x[0], mask, 3, {.causal = causal, .query_offset = 2});
      };
      GradcheckOptions options;
      options.fuzz = 2;
      options.fuzz_shapes = false;
      const GradcheckResult r = gradcheck(fn, {leaf(normal_tensor({2, 2, 3, 5}, 21))}, options);
      EXPECT_TRUE(r.passed) << r;
    }
  }
}

TEST(MaskedScaledSoftmax, SameBitsOnOneAndTwoThreads) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // enough rows for parallel_for to split them
  const int before = get_num_threads();
  const Tensor scores = normal_tensor({3, 4, 70, 70}, 31, kFloat32), g = normal_tensor({3, 4, 70, 70}, 32, kFloat32);
  std::mt19937 rng(5);
  const Tensor padded = random_mask({3, 1, 1, 70}, 0.2, rng);
  std::vector<Tensor> weights, grads;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Tensor x = leaf(scores);
    Tensor y = masked_scaled_softmax(x, padded, 32, {.causal = true});
    y.backward(g);
    weights.push_back(y);
    grads.push_back(x.grad());
  }
  set_num_threads(before);
  EXPECT_TRUE(same_bytes(weights[1], weights[0]));
  EXPECT_TRUE(same_bytes(grads[1], grads[0]));
}

TEST(MaskedScaledSoftmax, EmptyScoresGiveEmptyWeights) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  Tensor x = leaf(zeros({2, 0, 4}));
  Tensor y = masked_scaled_softmax(x, Tensor(), 4, {.causal = true});
  EXPECT_EQ(y.sizes(), (Shape{2, 0, 4}));
  y.sum().backward();
  EXPECT_EQ(x.grad().sizes(), (Shape{2, 0, 4}));
  EXPECT_EQ(masked_scaled_softmax(zeros({3, 0}), Tensor(), 4).sizes(), (Shape{3, 0}));
}

TEST(MaskedScaledSoftmax, BadInputsNameTheShapes) {
  const Tensor scores = zeros({2, 4, 5});
  expect_error([&] { masked_scaled_softmax(scores, zeros({4, 3}, kBool), 4); },
               {"masked_scaled_softmax: mask of shape (4,3) cannot be broadcast to (2,4,5) (dim 2: 3 vs 5)"});
  expect_error([&] { masked_scaled_softmax(scores, zeros({3, 1, 5}, kBool), 4); },
               {"mask of shape (3,1,5) cannot be broadcast to (2,4,5) (dim 0: 3 vs 2)"});
  expect_error([&] { masked_scaled_softmax(scores, zeros({1, 2, 4, 5}, kBool), 4); },
               {"mask of shape (1,2,4,5) cannot be broadcast to (2,4,5) (4 dims, more than 3)"});
  expect_error([&] { masked_scaled_softmax(scores, zeros({4, 5}), 4); },
               {"masked_scaled_softmax: mask must be bool (true = masked), got float32 of shape (4,5)"});
  expect_error([&] { masked_scaled_softmax(scores, Tensor(), 0); }, {"masked_scaled_softmax: d_k must be positive, got 0"});
  expect_error([&] { masked_scaled_softmax(scores, Tensor(), -3); }, {"d_k must be positive, got -3"});
  expect_error([&] { masked_scaled_softmax(zeros({2, 4, 5}, kInt64), Tensor(), 4); },
               {"masked_scaled_softmax: expected a floating point tensor (float32 or float64), got int64"});
  expect_error([&] { masked_scaled_softmax(zeros({5}), Tensor(), 4); },
               {"masked_scaled_softmax: expected scores of shape (..., T_q, T_k), got (5)"});
  expect_error([&] { masked_scaled_softmax_reference(scores, zeros({2, 3}, kBool), 4); },
               {"masked_scaled_softmax_reference: mask of shape (2,3) cannot be broadcast"});
}

TEST(MaskedScaledSoftmax, ChangingTheMaskInPlaceBeforeBackwardIsCaught) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // backward reads the mask it saved: changed in place, it would give a wrong gradient
  Tensor padded = zeros({2, 1, 1, 4}, kBool);
  Tensor x = leaf(normal_tensor({2, 3, 4, 4}, 41, kFloat32));
  Tensor y = masked_scaled_softmax(x, padded, 4);
  padded.fill_(true);
  EXPECT_TRUE(test::has_part(test::error_of([&] { y.sum().backward(); }), "MaskedScaledSoftmaxBackward0"));
}

}  // namespace
}  // namespace tg
