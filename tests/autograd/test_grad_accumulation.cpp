// tests/autograd/test_grad_accumulation.cpp — how backward hands gradients to leaves and sums
// them for entries used more than once (autograd/tape_backward.cpp: accumulate, accumulate_into_grad):
// a gradient nobody else holds becomes the .grad without a copy, and a sum into a buffer only
// one entry holds is done in place; a buffer anyone else can see is never written or shared.
#include <gtest/gtest.h>

#include "autograd/runtime/memory.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

constexpr int64_t kN = 1 << 20;  // 4 MiB of float32
constexpr int64_t kBytes = kN * 4;

TEST(GradAccumulation, AFreshLeafGradientBecomesTheGradWithoutACopy) {
  Tensor x = full({kN}, 1.5).requires_grad_();
  Tensor loss = mul(x, 2.0).sum();
  reset_peak_memory_stats();
  const int64_t before = memory_stats().live_bytes;
  loss.backward();
  // mul's backward makes one (N) gradient; a copy of it would be a second one alive at once
  EXPECT_LT(memory_stats().peak_bytes - before, 2 * kBytes) << "the leaf's gradient was copied";
  EXPECT_EQ(x.grad().sizes(), Shape{kN});
  EXPECT_EQ(x.grad().tolist<float>()[kN - 1], 2.0f);
}

TEST(GradAccumulation, OneGradientHandedToTwoLeavesGivesEachItsOwnBuffer) {
  Tensor x = full({4}, 1.0).requires_grad_();
  Tensor w = full({4}, 2.0).requires_grad_();
  mul(add(x, w), 3.0).sum().backward();  // add hands the same gradient to both
  EXPECT_FALSE(x.grad().is_alias_of(w.grad()));
  x.grad().mul_(10.0);
  EXPECT_EQ(w.grad().tolist<float>(), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{30, 30, 30, 30}));
}

TEST(GradAccumulation, ALeafsGradientIsNotTheTensorPassedToBackward) {
  Tensor x = full({3}, 1.0).requires_grad_();
  Tensor g = full({3}, 5.0);
  x.backward(g);
  EXPECT_FALSE(x.grad().is_alias_of(g));
  g.fill_(0.0);
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{5, 5, 5}));
}

TEST(GradAccumulation, ARetainedGradientAndTheLeafsAreSeparateBuffers) {
  Tensor x = full({3}, 1.0).requires_grad_();
  Tensor h = mul(x, 2.0);
  h.retain_grad();
  Tensor y = add(h, 0.0);  // hands h's gradient on unchanged
  y.sum().backward();
  EXPECT_FALSE(h.grad().is_alias_of(x.grad()));
  h.grad().fill_(7.0);
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(GradAccumulation, SumsForATensorUsedTwiceAreRightWhetherOrNotTheyGoInPlace) {
  Tensor x = full({5}, 1.0).requires_grad_();
  Tensor h = mul(x, 2.0);
  (mul(h, 3.0) + mul(h, 4.0)).sum().backward();  // h's two gradients are fresh buffers: summed in place
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>(5, 14.0f)));
  Tensor z = full({5}, 1.0).requires_grad_();
  Tensor k = mul(z, 2.0);
  mul(add(k, k), 1.0).sum().backward();  // add gives k one buffer twice: never summed into itself
  EXPECT_EQ(z.grad().tolist<float>(), (std::vector<float>(5, 4.0f)));
}

TEST(GradAccumulation, ALaterBackwardAddsIntoTheGradAHandleWasTakenOf) {
  Tensor x = full({2}, 1.0).requires_grad_();
  mul(x, 2.0).sum().backward();
  Tensor handle = x.grad();
  mul(x, 3.0).sum().backward();
  EXPECT_TRUE(handle.is_alias_of(x.grad()));
  EXPECT_EQ(handle.tolist<float>(), (std::vector<float>{5, 5}));
}

}  // namespace
}  // namespace tg
