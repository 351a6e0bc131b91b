// autograd/autocast.h: matmul and the ops made of it under AutocastGuard(kBFloat16), on the fast
// and the reference path. The oracle is the definition: the inputs rounded to bfloat16, then
// float32's matmul (matmul_reference sums in double), and the gradients the same products of the
// gradient rounded to bfloat16. Values from PyTorch 1.13 are in test_autocast_vs_torch.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <optional>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/kernels/gemm.h"
#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/runtime/memory.h"
#include "autograd/runtime/parallel.h"
#include "test_util.h"

namespace tg {
namespace {

using test::all_close;
using test::expect_error;
using test::leaf;
using test::normal_tensor;
using test::same_bytes;

Tensor rounded(const Tensor& t) { return t.detach().to(kBFloat16).to(kFloat32); }

// float32 accumulation of up to K products of values about 1 (and the double-summed oracle):
// K * 2^-24 * sum |a b| is below 1e-5 * K at these sizes.
double atol_for(int64_t K) { return 4e-6 * static_cast<double>(K); }

struct Shapes {
  Shape a, b;
};

// 1-D operands, broadcast batches, K = 1, odd sizes.
const std::vector<Shapes> kShapes = {{{5}, {5}},         {{3, 5}, {5}},          {{5}, {5, 7}},
                                     {{7, 1}, {1, 9}},   {{2, 3, 33, 17}, {17, 40}}, {{4, 9, 6}, {1, 6, 35}},
                                     {{65, 130}, {130, 31}}};

class AutocastModes : public ::testing::TestWithParam<bool> {};  // fast kernels on / off

TEST_P(AutocastModes, MatmulIsTheFloat32ProductOfTheRoundedInputs) {
  FastKernelsGuard mode(GetParam());
  for (const Shapes& s : kShapes) {
    const Tensor a = normal_tensor(s.a, 1, kFloat32), b = normal_tensor(s.b, 2, kFloat32);
    Tensor out;
    {
      AutocastGuard autocast(kBFloat16);
      out = matmul(a, b);
    }
    EXPECT_EQ(out.dtype(), kFloat32);
    const int64_t K = s.a.back();
    EXPECT_TRUE(all_close(out, matmul_reference(rounded(a), rounded(b)), atol_for(K), 1e-6))
        << shape_str(s.a) << " @ " << shape_str(s.b);
    // and it is not float32's product: the rounding shows
    if (K > 4) {
      EXPECT_FALSE(all_close(out, matmul_reference(a, b), 1e-6, 1e-6)) << shape_str(s.a);
    }
  }
}

TEST_P(AutocastModes, TransposedAndExpandedViewsAreReadInPlace) {
  FastKernelsGuard mode(GetParam());
  const Tensor w = normal_tensor({12, 20}, 3, kFloat32);  // (out, in), read as w^T
  const Tensor x = normal_tensor({20}, 4, kFloat32).expand({3, 5, 20});  // stride 0 rows
  AutocastGuard autocast(kBFloat16);
  const Tensor out = matmul(x, w.t());
  EXPECT_TRUE(all_close(out, matmul_reference(rounded(x.contiguous()), rounded(w.t().contiguous())), atol_for(20), 1e-6));
}

// The gradients: da = bf16(g) @ bf16(b)^T, db = bf16(a)^T @ bf16(g), summed over broadcast batches.
TEST_P(AutocastModes, GradientsAreProductsOfTheRoundedGradient) {
  FastKernelsGuard mode(GetParam());
  const Tensor a = leaf(normal_tensor({2, 7, 9}, 5, kFloat32)), b = leaf(normal_tensor({9, 11}, 6, kFloat32));
  const Tensor g = normal_tensor({2, 7, 11}, 7, kFloat32);
  {
    AutocastGuard autocast(kBFloat16);
    matmul(a * 1.0, b).backward(g);  // a * 1: a non-leaf activation, saved as its bfloat16 copy
  }
  const Tensor da = matmul_reference(rounded(g), rounded(b).t());
  const Tensor db = matmul_reference(rounded(a).reshape({14, 9}).t(), rounded(g).reshape({14, 11}));
  EXPECT_TRUE(all_close(a.grad(), da, atol_for(11), 1e-6));
  EXPECT_TRUE(all_close(b.grad(), db, atol_for(14), 1e-6));
}

TEST_P(AutocastModes, BackwardRunsInTheForwardsModeWhereverItIsCalled) {
  FastKernelsGuard mode(GetParam());
  const Tensor a = leaf(normal_tensor({6, 8}, 8, kFloat32)), b = leaf(normal_tensor({8, 5}, 9, kFloat32));
  Tensor plain_loss, bf16_loss;
  {
    AutocastGuard autocast(kBFloat16);
    bf16_loss = matmul(a, b).sum();
    AutocastGuard off(kFloat32);  // off again inside
    plain_loss = matmul(a, b).sum();
  }
  plain_loss.backward();  // no guard alive now: each entry knows its own mode
  const Tensor plain_da = a.grad().clone();
  a.zero_grad();
  {
    AutocastGuard autocast(kBFloat16);  // and a guard alive at backward does not change a float32 forward
    matmul(a, b).sum().backward();
  }
  const Tensor bf16_da = a.grad().clone();
  EXPECT_TRUE(all_close(plain_da, matmul_reference(ones({6, 5}), b.detach().t()), 1e-5, 1e-6));
  EXPECT_TRUE(all_close(bf16_da, matmul_reference(ones({6, 5}), rounded(b).t()), 1e-5, 1e-6));
  EXPECT_FALSE(all_close(plain_da, bf16_da, 1e-6, 1e-6));
}

TEST_P(AutocastModes, Float64IsLeftAlone) {
  FastKernelsGuard mode(GetParam());
  const Tensor a = normal_tensor({4, 6}, 1), b = normal_tensor({6, 3}, 2);
  Tensor with, without = matmul(a, b);
  {
    AutocastGuard autocast(kBFloat16);
    with = matmul(a, b);
  }
  EXPECT_TRUE(same_bytes(with, without));
  // the gradients too, and feed_forward's (their backward rounds float32 gradients only)
  for (bool autocast_on : {true, false}) {
    const Tensor la = leaf(a), lb = leaf(b);
    std::optional<AutocastGuard> autocast;
    if (autocast_on) autocast.emplace(kBFloat16);
    const Tensor y = matmul(la, lb);
    autocast.reset();
    y.backward(ones({4, 3}, kFloat64));
    EXPECT_TRUE(same_bytes(la.grad(), matmul(ones({4, 3}, kFloat64), b.t()))) << "autocast " << autocast_on;
    EXPECT_TRUE(same_bytes(lb.grad(), matmul(a.t(), ones({4, 3}, kFloat64)))) << "autocast " << autocast_on;
  }
  const Tensor x0 = normal_tensor({2, 3, 8}, 3, kFloat64), g = normal_tensor({2, 3, 8}, 4, kFloat64);
  const Tensor w1 = leaf(normal_tensor({32, 8}, 5, kFloat64)), w2 = leaf(normal_tensor({8, 32}, 6, kFloat64));
  std::vector<Tensor> results;
  for (bool autocast_on : {true, false}) {
    const Tensor x = leaf(x0);
    for (const Tensor& w : {w1, w2}) w.zero_grad();
    std::optional<AutocastGuard> autocast;
    if (autocast_on) autocast.emplace(kBFloat16);
    const Tensor y = feed_forward(x, w1, Tensor(), w2, Tensor(), "tanh");
    autocast.reset();
    y.backward(g);
    for (const Tensor& t : {y.detach(), x.grad(), w1.grad(), w2.grad()}) results.push_back(t);
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_bytes(results[i], results[i + 4])) << "feed_forward result " << i;
}

TEST_P(AutocastModes, FusedFeedForwardIsItsCompositionBitForBit) {
  FastKernelsGuard fast(true);
  const Tensor x0 = normal_tensor({2, 5, 16}, 10, kFloat32);
  const Tensor w1 = leaf(normal_tensor({64, 16}, 11, kFloat32) * 0.2), b1 = leaf(normal_tensor({64}, 12, kFloat32));
  const Tensor w2 = leaf(normal_tensor({16, 64}, 13, kFloat32) * 0.1), b2 = leaf(normal_tensor({16}, 14, kFloat32));
  const Tensor g = normal_tensor({2, 5, 16}, 15, kFloat32);
  std::vector<Tensor> fused, composed;
  for (const bool use_fused : {true, false}) {
    const Tensor x = leaf(x0);
    for (const Tensor& p : {w1, b1, w2, b2}) p.zero_grad();
    Tensor y;
    {
      AutocastGuard autocast(kBFloat16);
      const Tensor xin = x * 1.0;  // an activation
      y = use_fused ? feed_forward(xin, w1, b1, w2, b2, "tanh") : feed_forward_reference(xin, w1, b1, w2, b2, "tanh");
    }
    y.backward(g);
    std::vector<Tensor>& out = use_fused ? fused : composed;
    out = {y.detach(), x.grad(), w1.grad(), b1.grad(), w2.grad(), b2.grad()};
  }
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(same_bytes(fused[i], composed[i])) << "output " << i;
}

// The output and the gradients of q, k and v, from the fused op or its composition: T = 7 with a
// mask tensor, or T = 260 under the causal rule (the fused op's blocks of 64 queries).
std::vector<Tensor> attention_results(bool fused, int64_t T, bool causal) {
  const Tensor q = leaf(normal_tensor({2, 3, T, 8}, 20, kFloat32)), k = leaf(normal_tensor({2, 3, T, 8}, 21, kFloat32));
  const Tensor v = leaf(normal_tensor({2, 3, T, 8}, 22, kFloat32));
  const Tensor mask = causal ? Tensor() : triu(ones({T, T}, kBool), 1);
  const MaskedSoftmaxOptions options{.causal = causal};
  Tensor out;
  {
    AutocastGuard autocast(kBFloat16);
    const Tensor qa = q * 1.0, ka = k * 1.0, va = v * 1.0;  // activations, kept as bfloat16
    out = fused ? masked_scaled_attention(qa, ka, va, mask, 8, options)
                : masked_scaled_attention_reference(qa, ka, va, mask, 8, options);
  }
  out.backward(normal_tensor({2, 3, T, 8}, 23, kFloat32));
  return {out.detach().contiguous(), q.grad(), k.grad(), v.grad()};
}

TEST_P(AutocastModes, FusedAttentionIsItsCompositionBitForBit) {
  FastKernelsGuard fast(true);
  for (const auto& [T, causal] : {std::pair<int64_t, bool>{7, false}, {260, true}}) {
    const std::vector<Tensor> fused = attention_results(true, T, causal);
    const std::vector<Tensor> composed = attention_results(false, T, causal);
    for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(same_bytes(fused[i], composed[i])) << "T " << T << " output " << i;
    EXPECT_EQ(fused[1].dtype(), kFloat32);
  }
}

INSTANTIATE_TEST_SUITE_P(FastAndReference, AutocastModes, ::testing::Bool(),
                         [](const auto& info) { return info.param ? std::string("fast") : std::string("reference"); });

TEST(Autocast, FastAndReferencePathsAgree) {
  const Tensor a = normal_tensor({3, 40, 70}, 30, kFloat32), b = normal_tensor({70, 50}, 31, kFloat32);
  AutocastGuard autocast(kBFloat16);
  Tensor fast, reference;
  {
    FastKernelsGuard on(true);
    fast = matmul(a, b);
  }
  {
    FastKernelsGuard off(false);
    reference = matmul(a, b);
  }
  EXPECT_TRUE(all_close(fast, reference, atol_for(70), 1e-6));
}

TEST(Autocast, ThePortableKernelGivesTheSameBits) {
  const kernels::bf16_gemm::Kernel chosen = kernels::bf16_kernel();
  const Tensor a = normal_tensor({2, 33, 19}, 32, kFloat32), b = normal_tensor({19, 45}, 33, kFloat32);
  AutocastGuard autocast(kBFloat16);
  const Tensor best = matmul(a, b);
  kernels::set_bf16_kernel(kernels::bf16_gemm::Kernel::kFma);
  const Tensor portable = matmul(a, b);
  kernels::set_bf16_kernel(chosen);
  EXPECT_TRUE(same_bytes(portable, best));
}

TEST(Autocast, ActivationsAreKeptAsBfloat16AndParametersAsTheyAre) {
  const Tensor w = leaf(normal_tensor({32, 64}, 40, kFloat32));
  const Tensor x = leaf(normal_tensor({128, 64}, 41, kFloat32));
  Tensor plain, bf16;
  plain = linear(x * 1.0, w, Tensor());
  {
    AutocastGuard autocast(kBFloat16);
    bf16 = linear(x * 1.0, w, Tensor());
  }
  // the matmul entry keeps x (128*64 floats) and w^T: x as bfloat16 halves its bytes
  const size_t x_bytes = 128 * 64 * 4, w_bytes = 32 * 64 * 4;
  EXPECT_EQ(plain.grad_fn()->saved_bytes(), x_bytes + w_bytes);
  EXPECT_EQ(bf16.grad_fn()->saved_bytes(), x_bytes / 2 + w_bytes);  // w^T is a view of w: no copy
}

// Attention's three projections read one activation: one bfloat16 copy is kept for the three
// (the float32 tensor would be shared too), and a write into the activation makes a new one.
TEST(Autocast, ProductsOfOneActivationShareItsBfloat16Copy) {
  const int64_t rows = 128, in = 64, out = 32;
  const int64_t x_bytes = rows * in * 4, y_bytes = rows * out * 4;
  std::vector<Tensor> w;
  for (uint64_t seed = 50; seed < 53; ++seed) w.push_back(leaf(normal_tensor({out, in}, seed, kFloat32)));
  Tensor x = leaf(normal_tensor({rows, in}, 53, kFloat32)) * 1.0;  // an activation
  AutocastGuard autocast(kBFloat16);
  const int64_t before = memory_stats().live_bytes;
  std::vector<Tensor> y;
  for (const Tensor& wi : w) y.push_back(linear(x, wi, Tensor()));
  EXPECT_EQ(memory_stats().live_bytes - before, 3 * y_bytes + x_bytes / 2);
  const Tensor x_before = x.detach().clone();
  {
    NoGradGuard no_grad;
    x.add_(1.0);  // the copy no longer holds x's values
  }
  const int64_t after_write = memory_stats().live_bytes;
  const Tensor y_new = linear(x, w[0], Tensor());
  EXPECT_EQ(memory_stats().live_bytes - after_write, y_bytes + x_bytes / 2);
  EXPECT_TRUE(same_bytes(y_new, linear(x.detach().clone(), w[0].detach(), Tensor())));
  (y[0].sum() + y[1].sum() + y[2].sum()).backward();  // each entry reads the shared copy
  const Tensor expected_dw = matmul(ones({out, rows}), rounded(x_before));
  EXPECT_TRUE(all_close(w[2].grad(), expected_dw, 1e-5, 1e-5));
}

TEST(Autocast, TheGuardTakesBfloat16OrFloat32Only) {
  expect_error([] { AutocastGuard g(kFloat64); }, {"AutocastGuard", "bfloat16", "float64"});
  expect_error([] { AutocastGuard g(kInt64); }, {"AutocastGuard", "int64"});
  EXPECT_EQ(autocast_dtype(), kFloat32);
  {
    AutocastGuard on(kBFloat16);
    EXPECT_EQ(autocast_dtype(), kBFloat16);
    {
      AutocastGuard off(kFloat32);
      EXPECT_EQ(autocast_dtype(), kFloat32);
    }
    EXPECT_EQ(autocast_dtype(), kBFloat16);
  }
  EXPECT_EQ(autocast_dtype(), kFloat32);
}

TEST(Autocast, Bfloat16OperandsNeedAutocast) {
  const Tensor a = normal_tensor({3, 4}, 50, kFloat32), b = normal_tensor({4, 2}, 51, kFloat32);
  expect_error([&] { matmul(a.to(kBFloat16), b.to(kBFloat16)); },
               {"matmul", "bfloat16", "AutocastGuard", ".to(tg::kFloat32)"});
  // one bfloat16 operand outside autocast is a frozen 16-bit weight, widened exactly
  // (tests/autograd/test_bf16_weights.cpp)
  EXPECT_TRUE(same_bytes(matmul(a.to(kBFloat16), b), matmul(a.to(kBFloat16).to(kFloat32), b)));
  AutocastGuard autocast(kBFloat16);
  EXPECT_TRUE(same_bytes(matmul(a.to(kBFloat16), b), matmul(a, b)));  // rounded either way
}

TEST(Autocast, AnyThreadCountGivesTheSameBits) {
  const Tensor x = normal_tensor({4, 64, 96}, 60, kFloat32), w = normal_tensor({200, 96}, 61, kFloat32);
  const Tensor q = normal_tensor({4, 2, 64, 16}, 62, kFloat32);
  const int threads = get_num_threads();
  std::vector<Tensor> results;
  for (const int n : {1, 2}) {
    set_num_threads(n);
    AutocastGuard autocast(kBFloat16);
    results.push_back(linear(x, w, Tensor()));
    results.push_back(masked_scaled_attention(q, q, q, Tensor(), 16));
  }
  set_num_threads(threads);
  EXPECT_TRUE(same_bytes(results[0], results[2]));
  EXPECT_TRUE(same_bytes(results[1], results[3]));
}

}  // namespace
}  // namespace tg
