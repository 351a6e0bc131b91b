// tests/autograd/test_feed_forward.cpp — feed_forward (autograd/ops/feed_forward.cpp), the fused
// Linear -> GELU -> Linear, against the composition it replaces (feed_forward_reference): the
// output and every gradient bit for bit, in float32 and float64, on several shapes (1-d, 2-d and
// 3-d x, odd sizes, no biases, a strided x, frozen weights), both approximations. Then a float64
// gradcheck, the memory it saves (one (B,T,H) buffer fewer kept for backward), nn's FeedForward
// running it, and the bad inputs by their messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/runtime/memory.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/gpt.h"
#include "test_util.h"

namespace tg {
namespace {

using test::expect_error;
using test::leaf;
using test::normal_tensor;
using test::same_bytes;

struct Case {
  Shape x_shape;  // (..., C)
  int64_t H = 0, C_out = 0;
  bool bias = true;
  ScalarType dtype = kFloat32;
  std::string approximate = "tanh";
  bool strided_x = false;    // x a transposed view, not contiguous
  bool frozen_w = false;     // w1 and w2 do not require grad (only x and the biases)
  std::string name() const {
    return "x " + shape_str(x_shape) + " H " + std::to_string(H) + " C_out " + std::to_string(C_out) +
           (bias ? "" : " no bias") + " " + dtype_name(dtype) + " " + approximate + (strided_x ? " strided x" : "") +
           (frozen_w ? " frozen weights" : "");
  }
};

// The operands of one run: fresh leaves each time, so the two runs' gradients do not mix.
struct Operands {
  Tensor x, w1, b1, w2, b2;
};

Operands operands(const Case& c) {
  const int64_t C = c.x_shape.back();
  Operands o;
  Tensor x = normal_tensor(c.x_shape, 1, c.dtype);
  if (c.strided_x && c.x_shape.size() >= 2) {  // same values, rows and columns swapped in memory
    x = x.transpose(-1, -2).contiguous().transpose(-1, -2);
  }
  o.x = leaf(x);
  o.w1 = normal_tensor({c.H, C}, 2, c.dtype) * 0.3;
  o.w2 = normal_tensor({c.C_out, c.H}, 3, c.dtype) * 0.3;
  o.w1 = c.frozen_w ? o.w1.detach() : leaf(o.w1);
  o.w2 = c.frozen_w ? o.w2.detach() : leaf(o.w2);
  if (c.bias) {
    o.b1 = leaf(normal_tensor({c.H}, 4, c.dtype));
    o.b2 = leaf(normal_tensor({c.C_out}, 5, c.dtype));
  }
  return o;
}

using FeedForwardFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const std::string&);

// y and, after backward of sum(y * r) for a fixed random r, the gradients of x, w1, b1, w2, b2.
std::vector<Tensor> run(FeedForwardFn fn, const Case& c) {
  const Operands o = operands(c);
  Tensor y = fn(o.x, o.w1, o.b1, o.w2, o.b2, c.approximate);
  Shape y_shape = c.x_shape;
  y_shape.back() = c.C_out;
  (y * normal_tensor(y_shape, 6, c.dtype)).sum().backward();
  auto grad = [](const Tensor& t) { return t.defined() && t.requires_grad() ? t.grad() : Tensor(); };
  return {y.detach(), grad(o.x), grad(o.w1), grad(o.b1), grad(o.w2), grad(o.b2)};
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (const std::string approximate : {"tanh", "none"}) {
      for (bool bias : {true, false}) {
        all.push_back({{2, 5, 8}, 32, 8, bias, dtype, approximate});      // the GPT's shape, H = 4C
        all.push_back({{3, 7, 5}, 13, 6, bias, dtype, approximate});      // odd sizes, C_out != C
        all.push_back({{9, 4}, 17, 3, bias, dtype, approximate});         // 2-d x
        all.push_back({{6}, 11, 6, bias, dtype, approximate});            // 1-d x
        all.push_back({{2, 3, 4, 6}, 24, 6, bias, dtype, approximate});   // 4-d x
      }
      all.push_back({{4, 6, 16}, 64, 16, true, dtype, approximate, /*strided_x=*/true});
      all.push_back({{4, 6, 16}, 64, 16, true, dtype, approximate, false, /*frozen_w=*/true});
    }
  }
  all.push_back({{4, 64, 48}, 192, 48, true, kFloat32, "tanh"});  // large enough for the vectorised gelu and BLIS
  return all;
}

TEST(FeedForward, MatchesTheCompositionBitForBit) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  const char* what[] = {"y", "dx", "dw1", "db1", "dw2", "db2"};
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name());
    const std::vector<Tensor> fused = run(feed_forward, c), composed = run(feed_forward_reference, c);
    for (size_t i = 0; i < fused.size(); ++i) {
      SCOPED_TRACE(what[i]);
      ASSERT_EQ(fused[i].defined(), composed[i].defined());
      if (fused[i].defined()) {
        EXPECT_TRUE(same_bytes(fused[i], composed[i]));
      }
    }
  }
}

TEST(FeedForward, RecordsOneTapeEntryForTheThreeOps) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  const Case c{{2, 3, 4}, 16, 4};
  const Operands o = operands(c);
  const size_t before = tape_size();
  Tensor y = feed_forward(o.x, o.w1, o.b1, o.w2, o.b2, "tanh");
  EXPECT_EQ(tape_size(), before + 1);
  EXPECT_EQ(y.grad_fn()->name, "FeedForwardBackward0");
}

TEST(FeedForward, BackwardMatchesFiniteDifferencesF64) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  for (const std::string approximate : {"tanh", "none"}) {
    SCOPED_TRACE(approximate);
    const Tensor x = leaf(normal_tensor({2, 3, 4}, 11)), w1 = leaf(normal_tensor({7, 4}, 12) * 0.5);
    const Tensor b1 = leaf(normal_tensor({7}, 13)), w2 = leaf(normal_tensor({5, 7}, 14) * 0.5);
    const Tensor b2 = leaf(normal_tensor({5}, 15));
    assert_gradcheck([&](const std::vector<Tensor>& t) { return feed_forward(t[0], t[1], t[2], t[3], t[4], approximate); },
                     {x, w1, b1, w2, b2});
    assert_gradcheck([&](const std::vector<Tensor>& t) { return feed_forward(t[0], t[1], Tensor(), t[2], Tensor(), approximate); },
                     {x, w1, w2});
  }
}

// Bytes that stay alive after the forward (the output and what the tape keeps for backward).
int64_t live_after_forward(FeedForwardFn fn, const Operands& o, Tensor& y) {
  const int64_t before = memory_stats().live_bytes;
  y = fn(o.x, o.w1, o.b1, o.w2, o.b2, "tanh");
  return memory_stats().live_bytes - before;
}

TEST(FeedForward, KeepsOneHiddenBufferFewerThanTheComposition) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  const int64_t B = 2, T = 16, C = 32, H = 4 * C;
  const Operands o = operands({{B, T, C}, H, C});
  Tensor y_fused, y_composed;
  const int64_t fused = live_after_forward(feed_forward, o, y_fused);
  const int64_t composed = live_after_forward(feed_forward_reference, o, y_composed);
  const int64_t hidden = B * T * H * static_cast<int64_t>(sizeof(float));  // one (B,T,H) float32 buffer
  EXPECT_EQ(composed - fused, hidden) << "composition keeps " << composed << " bytes, fused " << fused;
  EXPECT_EQ(fused, hidden / 4 + hidden) << "y (B,T,C) and h (B,T,H)";  // x and the weights are the caller's
}

TEST(FeedForward, GPTFeedForwardRunsItWithTheSameResultsAsItsLayers) {
  FastKernelsGuard fast(true);  // nn's FeedForward runs the fused op only with the switch on
  models::FeedForward ff(8);
  const Tensor x = normal_tensor({2, 5, 8}, 21, kFloat32);
  const Tensor r = normal_tensor({2, 5, 8}, 22, kFloat32);
  std::vector<Tensor> got, want;
  for (bool fused : {true, false}) {
    ff.zero_grad();
    Tensor xl = leaf(x);
    Tensor y = fused ? ff.forward(xl) : ff.layers->forward(xl);
    if (fused) {
      EXPECT_EQ(y.grad_fn()->name, "FeedForwardBackward0");
    }
    (y * r).sum().backward();
    std::vector<Tensor>& out = fused ? got : want;
    out.push_back(y.detach());
    out.push_back(xl.grad());
    for (const auto& [name, p] : ff.named_parameters()) out.push_back(p.grad());
  }
  ASSERT_EQ(got.size(), 6u);  // y, dx, layers.0.weight, .bias, layers.2.weight, .bias
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bytes(got[i], want[i])) << "output " << i;
}

TEST(FeedForward, BadInputsNameBothShapes) {
  const Tensor x = normal_tensor({2, 3, 4}, 1, kFloat32), w1 = normal_tensor({8, 4}, 2, kFloat32);
  const Tensor b1 = normal_tensor({8}, 3, kFloat32), w2 = normal_tensor({4, 8}, 4, kFloat32);
  const Tensor b2 = normal_tensor({4}, 5, kFloat32);
  expect_error([&] { feed_forward(normal_tensor({2, 3, 5}, 1, kFloat32), w1, b1, w2, b2, "tanh"); },
               {"feed_forward: x of shape (2,3,5) does not fit w1 of shape (8,4)", "w1's 4 inputs"});
  expect_error([&] { feed_forward(x, w1, b1, normal_tensor({4, 7}, 4, kFloat32), b2, "tanh"); },
               {"feed_forward: w2 of shape (4,7) does not fit w1 of shape (8,4)", "w2's 7 inputs vs w1's 8 outputs"});
  expect_error([&] { feed_forward(x, w1, normal_tensor({7}, 3, kFloat32), w2, b2, "tanh"); },
               {"feed_forward: b1 of shape (7) does not fit w1 of shape (8,4)", "b1 must be (8)"});
  expect_error([&] { feed_forward(x, w1, b1, w2, normal_tensor({2, 4}, 5, kFloat32), "tanh"); },
               {"feed_forward: b2 of shape (2,4) does not fit w2 of shape (4,8)", "b2 must be (4)"});
  expect_error([&] { feed_forward(x, w1.view({32}), b1, w2, b2, "tanh"); },
               {"feed_forward: w1 must be 2-d (H, C), got shape (32)"});
  expect_error([&] { feed_forward(x, w1, b1, w2, b2.to(kFloat64), "tanh"); },
               {"feed_forward: b2 of shape (4) is float64, but x of shape (2,3,4) is float32"});
  expect_error([&] { feed_forward(x, w1, b1, w2, b2, "erf"); },
               {"feed_forward: approximate must be 'none' or 'tanh', got 'erf'"});
  expect_error([&] { feed_forward(from_vector(std::vector<int64_t>{1, 2, 3, 4}, {1, 4}), w1, b1, w2, b2, "tanh"); },
               {"feed_forward"});
}

}  // namespace
}  // namespace tg
