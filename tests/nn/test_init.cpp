// nn::init against PyTorch's nn.init and module constructors (§8 in autograd/random/random_kernels.h).
// The full reference vectors (nn.Linear, nn.Embedding) are replayed through linear_init_ and
// embedding_init_ in test_random_ops.cpp; here are the rules around them.
#include "nn/init.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "autograd/random/random_kernels.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace {

using tg::test::error_of;

using tg::Generator;
using tg::Tensor;
namespace init = tg::nn::init;

std::vector<uint32_t> f32_bits(const Tensor& t) {
  std::vector<uint32_t> out;
  for (float v : t.detach().tolist<float>()) out.push_back(std::bit_cast<uint32_t>(v));
  return out;
}

// torch.manual_seed(0); nn.Linear(4, 3): weight[0, :4] and bias, from rng_golden.json
// (linear_4x3_seed0: first 8 values are weight[0] and weight[1]; last 8 end with the bias).
TEST(Init, LinearWeightThenBiasMatchesTorchSeed0) {
  tg::manual_seed(0);
  Tensor w = tg::empty({3, 4}).requires_grad_();
  Tensor b = tg::empty({3}).requires_grad_();
  init::linear_init_(w, b);
  const std::vector<uint32_t> weight = f32_bits(w.flatten());
  const std::vector<uint32_t> bias = f32_bits(b);
  // Same draws by hand: 12 weight uniforms with the kaiming bound, then 3 bias uniforms.
  Generator g(0);
  double bound = tg::rng::kaiming_uniform_bound(4);
  tg::rng::UniformF32 wu = tg::rng::uniform_params_f32(-bound, bound);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(weight[i], std::bit_cast<uint32_t>(tg::rng::uniform_f32(g, wu.lo, wu.range))) << "weight " << i;
  }
  tg::rng::UniformF32 bu = tg::rng::uniform_params_f32(-0.5, 0.5);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(bias[i], std::bit_cast<uint32_t>(tg::rng::uniform_f32(g, bu.lo, bu.range))) << "bias " << i;
  }
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(w._version(), 1u);
  EXPECT_TRUE(tg::grad_mode_enabled()) << "the no-grad guard must not leak";
}

TEST(Init, LinearWithoutBiasDrawsOnlyTheWeight) {
  Generator a(5), b(5);
  Tensor w = tg::empty({7, 10});
  init::linear_init_(w, Tensor(), &a);
  Tensor same = tg::empty({7, 10});
  init::kaiming_uniform_(same, std::sqrt(5.0), &b);
  EXPECT_EQ(f32_bits(w), f32_bits(same));
  EXPECT_EQ(a.random(), b.random());
}

TEST(Init, KaimingBoundFollowsTorchFormulaForAnySlope) {
  for (int64_t fan_in : {1, 3, 7, 64, 768, 50257}) {
    // a = 0: gain sqrt(2); the general branch
    double expected = std::sqrt(3.0) * (std::sqrt(2.0 / (1.0 + 0.0)) / std::sqrt(double(fan_in)));
    EXPECT_EQ(init::kaiming_uniform_bound(fan_in, 0.0), expected) << fan_in;
    // a = sqrt(5): nn.Linear's bound, from the kernel
    EXPECT_EQ(init::kaiming_uniform_bound(fan_in, std::sqrt(5.0)), tg::rng::kaiming_uniform_bound(fan_in));
    // The general formula gives the same for a = sqrt(5) (a nudge away and back is not needed:
    // the product a*a is the correctly rounded Python a**2).
    double a = std::sqrt(5.0);
    double general = std::sqrt(3.0) * (std::sqrt(2.0 / (1.0 + a * a)) / std::sqrt(double(fan_in)));
    EXPECT_EQ(general, tg::rng::kaiming_uniform_bound(fan_in));
  }
}

TEST(Init, KaimingFanInCountsTheReceptiveField) {
  Tensor w = tg::empty({4, 3, 2, 2});  // fan_in = 3 * 2 * 2 = 12
  EXPECT_EQ(init::fan_in(w, "kaiming_uniform_"), 12);
  Generator a(9), b(9);
  init::kaiming_uniform_(w, 0.0, &a);
  const double bound = init::kaiming_uniform_bound(12, 0.0);
  EXPECT_EQ(f32_bits(w), f32_bits(tg::empty({4, 3, 2, 2}).uniform_(-bound, bound, &b)));
}

TEST(Init, ZeroElementWeightIsLeftAloneWithoutDraws) {
  Generator a(2), b(2);
  Tensor w = tg::empty({0, 4});
  init::kaiming_uniform_(w, std::sqrt(5.0), &a);
  EXPECT_EQ(a.random(), b.random());
}

TEST(Init, EmbeddingIsRandnThenThePaddingRowZeroed) {
  Generator a(0), b(0);
  Tensor w = tg::empty({10, 4}).requires_grad_();
  init::embedding_init_(w, 3, &a);
  const std::vector<uint32_t> expected = f32_bits(tg::randn({10, 4}, &b));  // padding still draws
  const std::vector<uint32_t> got = f32_bits(w);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(got[i], i / 4 == 3 ? 0u : expected[i]) << "element " << i;
  }
  EXPECT_EQ(a.random(), b.random());
  Tensor last = tg::empty({5, 3});
  init::embedding_init_(last, -1, &a);  // counts from the end: row 4
  for (float v : last.select(0, 4).tolist<float>()) EXPECT_EQ(std::bit_cast<uint32_t>(v), 0u);
}

TEST(Init, UniformAndNormalWorkOnParametersThatRequireGrad) {
  Tensor w = tg::empty({3, 3}).requires_grad_();
  Generator a(1), b(1);
  init::uniform_(w, -0.1, 0.35, &a);
  EXPECT_EQ(f32_bits(w), f32_bits(tg::empty({3, 3}).uniform_(-0.1, 0.35, &b)));
  init::normal_(w, 0.0, 0.02, &a);
  EXPECT_EQ(f32_bits(w), f32_bits(tg::empty({3, 3}).normal_(0.0, 0.02, &b)));
  EXPECT_EQ(w._version(), 2u);
  EXPECT_TRUE(w.grad_fn() == nullptr);
}

TEST(Init, BadShapesAreRejectedNamingTheShape) {
  EXPECT_EQ(error_of([] { init::kaiming_uniform_(tg::empty({5})); }),
            "kaiming_uniform_: fan_in can not be computed for a tensor with fewer than 2 dims, got shape (5)");
  EXPECT_EQ(error_of([] { init::linear_init_(tg::empty({3, 4}), tg::empty({4})); }),
            "linear_init_: bias has shape (4), expected (3) for weight (3,4)");
  EXPECT_EQ(error_of([] { init::embedding_init_(tg::empty({5, 2}), 5); }),
            "embedding_init_: padding_idx (5) must be within [-5, 5)");
  EXPECT_EQ(error_of([] { init::embedding_init_(tg::empty({5})); }),
            "embedding_init_: weight must be 2-d (num_embeddings, embedding_dim), got shape (5)");
}

}  // namespace
