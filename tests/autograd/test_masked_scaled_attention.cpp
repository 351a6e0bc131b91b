// tests/autograd/test_masked_scaled_attention.cpp — masked_scaled_attention
// (autograd/ops/attention_context.cpp) against the composition it replaces,
// masked_scaled_softmax(q @ k^T, mask, d_k) @ v: the output and the gradients of q, k and v within
// the rounding of a sum's order, in float32 and float64, with and without heads, causal with a KV cache's offset, key
// padding masks, q, k, v as the head views attention makes; then that the weights are not kept
// (tensor memory after forward), a float64 gradcheck, several threads, and bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/runtime/memory.h"
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

struct Case {
  int64_t B, NH, T_q, T_k, hs, hs_v;  // NH = 0: 3-D inputs (B, T, hs), no heads
  bool causal = false;
  int64_t query_offset = 0;
  bool padding = false;  // a (B, 1, 1, T_k) key padding mask, one batch row fully padded
  ScalarType dtype = kFloat32;
  std::string name() const {
    return "B " + std::to_string(B) + " NH " + std::to_string(NH) + " T_q " + std::to_string(T_q) + " T_k " +
           std::to_string(T_k) + " hs " + std::to_string(hs) + " hs_v " + std::to_string(hs_v) +
           (causal ? " causal offset " + std::to_string(query_offset) : "") + (padding ? " padding" : "") + " " +
           dtype_name(dtype);
  }
};

// x (B, T, NH * d) as attention's head view (B, NH, T, d), or (B, T, d) without heads.
Tensor heads_view(const Tensor& x, const Case& c, int64_t T, int64_t d) {
  if (c.NH == 0) return x;
  return x.view({c.B, T, c.NH, d}).transpose(1, 2);
}

struct Inputs {
  Tensor q_base, k_base, v_base, mask;
};

Inputs make_inputs(const Case& c, uint32_t seed) {
  const int64_t heads = c.NH == 0 ? 1 : c.NH;
  Inputs in;
  in.q_base = leaf(normal_tensor({c.B, c.T_q, heads * c.hs}, seed, c.dtype));
  in.k_base = leaf(normal_tensor({c.B, c.T_k, heads * c.hs}, seed + 1, c.dtype));
  in.v_base = leaf(normal_tensor({c.B, c.T_k, heads * c.hs_v}, seed + 2, c.dtype));
  if (c.padding) {
    std::mt19937 rng(seed);
    std::bernoulli_distribution coin(0.3);
    std::vector<int64_t> padded(static_cast<size_t>(c.B * c.T_k));
    for (int64_t i = 0; i < c.B * c.T_k; ++i) padded[static_cast<size_t>(i)] = i < c.T_k || coin(rng) ? 1 : 0;
    const Shape shape = c.NH == 0 ? Shape{c.B, 1, c.T_k} : Shape{c.B, 1, 1, c.T_k};
    in.mask = from_vector(padded, shape).to_bool();
  }
  return in;
}

// The output and the three gradients, from the fused op or the composition.
std::vector<Tensor> run(const Case& c, const Inputs& in, bool fused, const Tensor& grad) {
  for (const Tensor* t : {&in.q_base, &in.k_base, &in.v_base}) t->zero_grad();
  const Tensor q = heads_view(in.q_base, c, c.T_q, c.hs), k = heads_view(in.k_base, c, c.T_k, c.hs);
  const Tensor v = heads_view(in.v_base, c, c.T_k, c.hs_v);
  const MaskedSoftmaxOptions options{.causal = c.causal, .query_offset = c.query_offset};
  const Tensor out = fused ? masked_scaled_attention(q, k, v, in.mask, c.hs, options)
                           : masked_scaled_softmax(q.matmul(k.transpose(-2, -1)), in.mask, c.hs, options).matmul(v);
  out.backward(grad);
  return {out.detach(), in.q_base.grad(), in.k_base.grad(), in.v_base.grad()};
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (ScalarType dt : {kFloat32, kFloat64}) {
    out.push_back({2, 4, 16, 16, 8, 8, true, 0, false, dt});     // GPT self-attention
    out.push_back({3, 2, 33, 33, 16, 16, true, 0, false, dt});   // odd T
    out.push_back({2, 3, 5, 12, 4, 4, true, 7, false, dt});      // a KV cache's offset
    out.push_back({2, 2, 9, 13, 8, 6, false, 0, true, dt});      // cross-attention, padding, hs_v != hs
    out.push_back({2, 0, 17, 17, 12, 12, true, 0, false, dt});   // no heads: CausalAttention
    out.push_back({3, 0, 6, 10, 5, 7, false, 0, true, dt});      // no heads, padding
    out.push_back({1, 2, 64, 64, 32, 32, true, 0, true, dt});    // causal and padding
    // the fused op's causal rule: one block that sees a prefix of the keys (a KV cache's offset,
    // padding), then blocks of 64 queries from T_q = 256 on (a partial last block; an offset; past
    // 256 queries dv and dk sum over every query)
    out.push_back({2, 2, 70, 200, 8, 12, true, 130, true, dt});
    out.push_back({1, 2, 256, 256, 16, 16, true, 0, false, dt});
    out.push_back({1, 2, 260, 300, 8, 12, true, 40, true, dt});
    out.push_back({1, 1, 300, 300, 8, 8, true, 0, false, dt});
  }
  return out;
}

// The fused op makes the composition's products, but of other shapes: the keys a causal block of
// queries sees, blocks of one buffer. Each element is a sum of at most K terms either way (K: the
// longest of T_q, T_k, hs, hs_v), but BLIS may add a product's terms in an order that depends on
// its shape: its skx kernels run one fma chain per element, its haswell and generic kernels and its
// small-matrix path do not always. So the bits are the same where tapegrad's own kernels or BLIS's
// skx kernels run every product, and within rounding elsewhere: two orders of a sum of K terms
// differ by at most 2 K eps sum|term| (each partial sum rounds once per term), and through the two
// products in a row (the scores, then the weights times v; dP, then dq, dk, dv) by at most twice
// that. Every |term| is at most the largest |value| of the result here (the inputs are standard
// normal, the weights at most 1), so the check is |fused - composed| <= 4 K eps max|composed|.
// A wrong mask, scale or block edge changes values by far more than that.
TEST(MaskedScaledAttention, OutputAndGradientsAreTheCompositionsWithinRounding) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  uint32_t seed = 100;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name());
    const Inputs in = make_inputs(c, seed);
    const Shape out_shape = c.NH == 0 ? Shape{c.B, c.T_q, c.hs_v} : Shape{c.B, c.NH, c.T_q, c.hs_v};
    const Tensor grad = normal_tensor(out_shape, seed + 3, c.dtype);
    seed += 10;
    const std::vector<Tensor> fused = run(c, in, true, grad), composed = run(c, in, false, grad);
    const double eps = c.dtype == kFloat32 ? 0x1p-24 : 0x1p-53;
    const double K = static_cast<double>(std::max({c.T_q, c.T_k, c.hs, c.hs_v}));
    const char* what[] = {"output", "dq", "dk", "dv"};
    for (size_t i = 0; i < 4; ++i) {
      const double largest = composed[i].abs().max().to(kFloat64).item<double>();
      EXPECT_TRUE(test::all_close(fused[i], composed[i], 4 * K * eps * largest, 0.0)) << what[i];
    }
  }
}

TEST(MaskedScaledAttention, HeadsComeOutJoinedWithoutACopy) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // (B, NH, T, hs) out, stored as (B, T, NH, hs): transpose(1, 2) is contiguous, as the layer joins heads.
  const Tensor q = normal_tensor({2, 3, 5, 4}, 1, kFloat32), k = normal_tensor({2, 3, 5, 4}, 2, kFloat32);
  const Tensor out = masked_scaled_attention(q, k, k, Tensor(), 4, {.causal = true});
  EXPECT_EQ(out.sizes(), (Shape{2, 3, 5, 4}));
  EXPECT_TRUE(out.transpose(1, 2).is_contiguous());
}

TEST(MaskedScaledAttention, TheWeightsAreNotKeptForBackward) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  // Tensor memory alive after forward: the composition keeps (B, NH, T, T) weights, the fused op none.
  const Case c{4, 4, 64, 64, 16, 16, true, 0, false, kFloat32};
  const Inputs in = make_inputs(c, 7);
  const Tensor q = heads_view(in.q_base, c, c.T_q, c.hs), k = heads_view(in.k_base, c, c.T_k, c.hs);
  const Tensor v = heads_view(in.v_base, c, c.T_k, c.hs_v);
  const int64_t weights_bytes = c.B * c.NH * c.T_q * c.T_k * 4;
  const int64_t before = memory_stats().live_bytes;
  int64_t fused_bytes = 0, composed_bytes = 0;
  {
    const Tensor out = masked_scaled_attention(q, k, v, Tensor(), c.hs, {.causal = true});
    fused_bytes = memory_stats().live_bytes - before;
  }
  {
    const Tensor out = masked_scaled_softmax(q.matmul(k.transpose(-2, -1)), Tensor(), c.hs, {.causal = true}).matmul(v);
    composed_bytes = memory_stats().live_bytes - before;
  }
  const int64_t out_bytes = c.B * c.NH * c.T_q * c.hs_v * 4;
  EXPECT_EQ(fused_bytes, out_bytes);
  EXPECT_EQ(composed_bytes, out_bytes + weights_bytes);
}

TEST(MaskedScaledAttention, GradientsMatchFiniteDifferencesF64) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  const Tensor q = normal_tensor({2, 2, 4, 3}, 11), k = normal_tensor({2, 2, 6, 3}, 12), v = normal_tensor({2, 2, 6, 5}, 13);
  const Tensor padded = from_vector(std::vector<int64_t>{0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0}, {2, 1, 1, 6}).to_bool();
  assert_gradcheck(
      [&](const std::vector<Tensor>& x) {
        return masked_scaled_attention(x[0], x[1], x[2], padded, 3, {.causal = true, .query_offset = 2});
      },
      {leaf(q), leaf(k), leaf(v)});
}

TEST(MaskedScaledAttention, SameBitsOnOneThreadAndMany) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  const test::ThreadCountGuard guard;
  const Case c{3, 4, 40, 40, 16, 16, true, 0, true, kFloat32};
  const Inputs in = make_inputs(c, 21);
  const Tensor grad = normal_tensor({c.B, c.NH, c.T_q, c.hs_v}, 24, kFloat32);
  set_num_threads(1);
  const std::vector<Tensor> one = run(c, in, true, grad);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    const std::vector<Tensor> many = run(c, in, true, grad);
    for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_bytes(many[i], one[i])) << threads << " threads, result " << i;
  }
}

TEST(MaskedScaledAttention, BadInputsNameWhatIsWrong) {
  const Tensor q = normal_tensor({2, 3, 5, 4}, 1, kFloat32), k = normal_tensor({2, 3, 6, 4}, 2, kFloat32);
  const Tensor v = normal_tensor({2, 3, 6, 7}, 3, kFloat32);
  expect_error([&] { masked_scaled_attention(q, normal_tensor({2, 3, 6, 5}, 4, kFloat32), v, Tensor(), 4); },
               {"masked_scaled_attention: q and k must have the same last dim (hs)", "q (2,3,5,4)",
                "k (2,3,6,5)"});
  expect_error([&] { masked_scaled_attention(q, k, normal_tensor({2, 3, 5, 7}, 4, kFloat32), Tensor(), 4); },
               {"k and v must have the same number of keys", "v (2,3,5,7)"});
  expect_error([&] { masked_scaled_attention(q, normal_tensor({2, 4, 6, 4}, 4, kFloat32), v, Tensor(), 4); },
               {"the same batch dims", "(dim 1)"});
  expect_error([&] { masked_scaled_attention(q, k, v.to_double(), Tensor(), 4); },
               {"q, k and v must have the same dtype, got float32, float32 and float64"});
  expect_error([&] { masked_scaled_attention(q, k, v, Tensor(), 0); }, {"d_k must be positive, got 0"});
  expect_error([&] { masked_scaled_attention(q, k, v, ones({2, 1, 1, 5}).to_bool(), 4); },
               {"masked_scaled_attention: mask of shape (2,1,1,5) cannot be broadcast to (2,3,5,6)"});
  expect_error([&] { masked_scaled_attention(q, k, v, ones({2, 1, 1, 6}), 4); }, {"masked_scaled_attention: mask must be bool (true = masked), got float32 of shape (2,1,1,6)"});
}

}  // namespace
}  // namespace tg
