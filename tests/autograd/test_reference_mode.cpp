// With the fast kernels off (set_fast_kernels(false), TG_FAST_KERNELS=0), every op runs its plain
// `_reference` code: float32 softmax, log_softmax, cross_entropy, layer_norm, gelu, tanh and
// sigmoid give the bits of their `_reference` loops (autograd/ops/nn_loops.h) in forward and
// backward, and the fused ops record the composition they stand for. With the switch on, the
// same calls run the fast loops, which differ from the reference in the last bits somewhere:
// proof that the switch changes the path.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using test::leaf;
using test::normal_tensor;
using test::same_bytes;

constexpr int64_t R = 37, C = 75;  // rows and columns: odd, so no loop is only whole vectors

std::vector<float> values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

Tensor from(const std::vector<float>& v, const Shape& shape) {
  Tensor t = zeros(shape, kFloat32);
  std::copy(v.begin(), v.end(), t.data_ptr<float>());
  return t;
}

// y = op(x) and dx for the gradient g of y, with the fast kernels on or off.
struct Result {
  Tensor y, dx;
};
template <class Op>
Result run(bool fast, const Tensor& x0, const Tensor& g, Op op) {
  const FastKernelsGuard mode(fast);
  Tensor x = leaf(x0);
  Tensor y = op(x);
  y.backward(g);
  return {y.detach(), x.grad()};
}

TEST(ReferenceMode, SoftmaxRunsItsReferenceLoops) {
  const Tensor x = normal_tensor({R, C}, 1, kFloat32) * 4.0;
  const Tensor g = normal_tensor({R, C}, 2, kFloat32);
  const Result off = run(false, x, g, [](const Tensor& t) { return softmax(t, -1); });
  std::vector<float> y(R * C), dx(R * C);
  const std::vector<float> xv = values(x), gv = values(g);
  nn_loops::softmax_forward_reference<float>(y.data(), xv.data(), R, C, 1, false);
  nn_loops::softmax_backward_reference<float>(dx.data(), gv.data(), y.data(), R, C, 1, false);
  EXPECT_TRUE(same_bytes(off.y, from(y, {R, C})));
  EXPECT_TRUE(same_bytes(off.dx, from(dx, {R, C})));
  const Result on = run(true, x, g, [](const Tensor& t) { return softmax(t, -1); });
  EXPECT_FALSE(same_bytes(on.y, off.y)) << "the fast rows (vec_math's exp) were expected to differ somewhere";
}

TEST(ReferenceMode, LogSoftmaxRunsItsReferenceLoops) {
  const Tensor x = normal_tensor({R, C}, 3, kFloat32) * 4.0;
  const Tensor g = normal_tensor({R, C}, 4, kFloat32);
  const Result off = run(false, x, g, [](const Tensor& t) { return log_softmax(t, -1); });
  std::vector<float> y(R * C), dx(R * C);
  const std::vector<float> xv = values(x), gv = values(g);
  nn_loops::softmax_forward_reference<float>(y.data(), xv.data(), R, C, 1, true);
  nn_loops::softmax_backward_reference<float>(dx.data(), gv.data(), y.data(), R, C, 1, true);
  EXPECT_TRUE(same_bytes(off.y, from(y, {R, C})));
  EXPECT_TRUE(same_bytes(off.dx, from(dx, {R, C})));
}

TEST(ReferenceMode, CrossEntropyRunsItsReferenceLoops) {
  const Tensor x = normal_tensor({R, C}, 5, kFloat32) * 3.0;
  std::vector<int64_t> targets(R);
  for (int64_t n = 0; n < R; ++n) targets[n] = (n * 7) % C;
  Tensor t = zeros({R}, kInt64);
  std::copy(targets.begin(), targets.end(), t.data_ptr<int64_t>());
  const Tensor g = full({}, 0.75, kFloat32);
  const Result off = run(false, x, g, [&](const Tensor& logits) { return cross_entropy(logits, t); });
  float loss = 0.0f, dloss = 0.75f;
  std::vector<double> lse(R);
  std::vector<float> dx(R * C);
  const std::vector<float> xv = values(x);
  nn_loops::cross_entropy_forward_reference<float>(&loss, lse.data(), xv.data(), targets.data(), R, C);
  nn_loops::cross_entropy_backward_reference<float>(dx.data(), &dloss, xv.data(), lse.data(), targets.data(), R, C);
  EXPECT_TRUE(same_bytes(off.y, from({loss}, {})));
  EXPECT_TRUE(same_bytes(off.dx, from(dx, {R, C})));
}

TEST(ReferenceMode, LayerNormRunsItsReferenceLoops) {
  const Tensor x = normal_tensor({R, C}, 6, kFloat32) + 5.0;
  const Tensor w = normal_tensor({C}, 7, kFloat32);
  const Tensor b = normal_tensor({C}, 8, kFloat32);
  const Tensor g = normal_tensor({R, C}, 9, kFloat32);
  const Result off = run(false, x, g, [&](const Tensor& t) { return layer_norm(t, {C}, w, b); });
  std::vector<float> y(R * C), mean(R), rstd(R), dx(R * C), dw(C), db(C);
  const std::vector<float> xv = values(x), wv = values(w), bv = values(b), gv = values(g);
  nn_loops::layer_norm_forward_reference<float>(y.data(), mean.data(), rstd.data(), xv.data(), wv.data(), bv.data(),
                                                R, C, 1e-5);
  nn_loops::layer_norm_backward_reference<float>(dx.data(), dw.data(), db.data(), gv.data(), xv.data(), wv.data(),
                                                 mean.data(), rstd.data(), R, C);
  EXPECT_TRUE(same_bytes(off.y, from(y, {R, C})));
  EXPECT_TRUE(same_bytes(off.dx, from(dx, {R, C})));
}

// gelu(tanh), tanh and sigmoid: the reference element functions, one element at a time.
template <class Op, class Ref>
void expect_elementwise_reference(const char* what, Op op, Ref ref) {
  const Tensor x = normal_tensor({R, C}, 10, kFloat32) * 3.0;
  const Tensor g = ones({R, C}, kFloat32);
  const Result off = run(false, x, g, op);
  std::vector<float> y = values(x);
  for (float& v : y) v = ref(v);
  EXPECT_TRUE(same_bytes(off.y, from(y, {R, C}))) << what;
}

TEST(ReferenceMode, ActivationsRunTheirReferenceFormulas) {
  expect_elementwise_reference("gelu(tanh)", [](const Tensor& t) { return gelu(t, "tanh"); },
                               [](float v) { return nn_loops::gelu_tanh_reference(v); });
  expect_elementwise_reference("tanh", [](const Tensor& t) { return tanh(t); },
                               [](float v) { return nn_loops::tanh_reference(v); });
  expect_elementwise_reference("sigmoid", [](const Tensor& t) { return sigmoid(t); },
                               [](float v) { return nn_loops::sigmoid_reference(v); });
  // gelu(tanh)'s backward: g * the reference derivative
  const Tensor x = normal_tensor({R, C}, 11, kFloat32) * 3.0;
  const Tensor g = normal_tensor({R, C}, 12, kFloat32);
  const Result off = run(false, x, g, [](const Tensor& t) { return gelu(t, "tanh"); });
  std::vector<float> dx = values(x);
  const std::vector<float> gv = values(g);
  for (size_t i = 0; i < dx.size(); ++i) dx[i] = gv[i] * nn_loops::gelu_tanh_derivative_reference(dx[i]);
  EXPECT_TRUE(same_bytes(off.dx, from(dx, {R, C})));
}

TEST(ReferenceMode, FusedOpsRecordTheCompositionTheyStandFor) {
  const Tensor q = leaf(normal_tensor({2, 3, 5, 4}, 13, kFloat32));
  const Tensor k = leaf(normal_tensor({2, 3, 5, 4}, 14, kFloat32));
  const Tensor v = leaf(normal_tensor({2, 3, 5, 4}, 15, kFloat32));
  const Tensor scores = leaf(normal_tensor({2, 5, 5}, 16, kFloat32));
  const Tensor x = leaf(normal_tensor({3, 4}, 17, kFloat32));
  const Tensor w1 = leaf(normal_tensor({8, 4}, 18, kFloat32)), w2 = leaf(normal_tensor({4, 8}, 19, kFloat32));
  const MaskedSoftmaxOptions causal{.causal = true};
  for (const bool fast : {true, false}) {
    const FastKernelsGuard mode(fast);
    EXPECT_EQ(masked_scaled_softmax(scores, Tensor(), 4, causal).grad_fn()->name,
              fast ? "MaskedScaledSoftmaxBackward0" : "MaskedFillBackward0");
    EXPECT_EQ(masked_scaled_attention(q, k, v, Tensor(), 4, causal).grad_fn()->name,
              fast ? "MaskedScaledAttentionBackward0" : "UnsafeViewBackward0");
    EXPECT_EQ(feed_forward(x, w1, Tensor(), w2, Tensor(), "tanh").grad_fn()->name,
              fast ? "FeedForwardBackward0" : "MmBackward0");
  }
}

}  // namespace
}  // namespace tg
