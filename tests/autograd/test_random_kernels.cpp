#include "autograd/random/random_kernels.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "rng_replay.h"
#include "test_util.h"

namespace {

using tg::test::expect_error;

namespace rng = tg::rng;
using tg::Generator;

// True if a has made exactly `draws` more 32-bit draws than the fresh generator seeded `seed`.
::testing::AssertionResult made_draws(Generator& a, uint64_t seed, int draws) {
  Generator b(seed);
  for (int i = 0; i < draws; ++i) b.random();
  for (int i = 0; i < 20; ++i) {
    if (a.random() != b.random()) {
      return ::testing::AssertionFailure() << "the stream is not " << draws << " draws ahead";
    }
  }
  return ::testing::AssertionSuccess();
}

// Replays one family of reference vectors and checks that it was not empty.
void replay(const std::string& family, int at_least) {
  tg_test::Tally tally = tg_test::replay_family(family);
  EXPECT_GE(tally.vectors, at_least) << "family " << family << " has fewer vectors than expected";
}

// ---- Bit-exact against torch, family by family ------------------------------------------------

TEST(RandomKernels, UniformFloat32AndFloat64MatchTorchBitForBit) { replay("uniform", 10); }

TEST(RandomKernels, RandnFloat32ScalarPathMatchesTorchBitForBit) { replay("normal_f32_scalar", 15); }

TEST(RandomKernels, RandnFloat32BlockPathMatchesTorchBitForBit) { replay("normal_f32_block", 25); }

TEST(RandomKernels, RandnFloat64BothPathsMatchTorchBitForBit) { replay("normal_f64", 30); }

TEST(RandomKernels, CachedNormalCarriesAcrossCallsLikeTorch) { replay("sequence", 8); }

TEST(RandomKernels, RandintAndRandpermMatchTorch) { replay("integers", 15); }

TEST(RandomKernels, BernoulliAndDropoutMatchTorchBitForBit) { replay("bernoulli_dropout", 8); }

TEST(RandomKernels, MultinomialAndExponentialMatchTorch) { replay("multinomial_exponential", 8); }

TEST(RandomKernels, LinearAndEmbeddingInitMatchTorchBitForBit) { replay("module_init", 8); }

TEST(RandomKernels, EveryReferenceVectorIsComparedBitForBit) {
  size_t golden = tg_test::golden_file()["vectors"].size();
  size_t from_torch = tg_test::torch_file()["vectors"].size();
  for (const tg::json::Value& v : tg_test::golden_file()["vectors"].as_array()) {
    EXPECT_NE(tg_test::golden_family(v), "unknown") << "golden vector " << v["id"].as_string();
  }
  for (const tg::json::Value& v : tg_test::torch_file()["vectors"].as_array()) {
    EXPECT_NE(tg_test::torch_family(v), "unknown") << "rng_torch vector " << v["id"].as_string();
  }
  tg_test::Tally tally = tg_test::replay_family("");
  EXPECT_EQ(golden, 39u);
  EXPECT_EQ(static_cast<size_t>(tally.vectors), golden + from_torch);
  std::printf("[ rng      ] compared %d vectors (%zu golden + %zu from torch): %lld values "
              "bit-exact, %lld get_rng_state() bytes equal\n",
              tally.vectors, golden, from_torch, static_cast<long long>(tally.values),
              static_cast<long long>(tally.state_bytes));
}

// ---- Properties the vectors rely on, checked directly ----------------------------------------

TEST(RandomKernels, UnitUniformsUseTheLowBitsOfTheDraws) {
  Generator a(0), b(0);
  uint32_t r = a.random();
  EXPECT_EQ(rng::unit_uniform_f32(b), static_cast<float>(r & 0xFFFFFF) / 16777216.0f);
  uint64_t v = a.random64();
  EXPECT_EQ(rng::unit_uniform_f64(b), static_cast<double>(v & ((1ULL << 53) - 1)) / 9007199254740992.0);
}

TEST(RandomKernels, UniformParamsRoundTheEndsToFloat32First) {
  rng::UniformF32 p = rng::uniform_params_f32(-0.1, 0.35);
  EXPECT_EQ(p.lo, -0.1f);
  EXPECT_EQ(p.range, 0.35f - (-0.1f));
  expect_error([] { rng::uniform_params_f32(2.0, 1.0); },
               {"uniform_params_f32", "a = 2", "b = 1"});
  expect_error([] { rng::uniform_params_f32(-3e38, 3e38); }, {"overflows float32"});
  expect_error([] { rng::uniform_params_f64(1.0, 0.5); }, {"uniform_params_f64"});
}

TEST(RandomKernels, DropoutScaleIsAFloatDivisionNotARoundedReciprocal) {
  EXPECT_EQ(std::bit_cast<uint32_t>(rng::dropout_scale(0.15)), 0x3F969696u);
  EXPECT_NE(rng::dropout_scale(0.15), static_cast<float>(1.0 / 0.85));
  EXPECT_EQ(rng::dropout_scale(0.0), 1.0f);
  expect_error([] { rng::dropout_scale(1.0); }, {"dropout_scale", "got 1"});
  Generator gen(0);
  expect_error([&] { rng::dropout_noise_one(gen, -0.5); }, {"dropout_noise_one", "-0.5"});
  EXPECT_TRUE(made_draws(gen, 0, 0)) << "a rejected p must not draw";
}

TEST(RandomKernels, KaimingBoundRoundsToFloatOfInverseSqrtFanIn) {
  // The spec checked this for fan_in 1..20000; bound itself is a hair off 1/sqrt(fan_in).
  for (int64_t fan_in = 1; fan_in <= 20000; ++fan_in) {
    float bound = static_cast<float>(rng::kaiming_uniform_bound(fan_in));
    float expected = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
    ASSERT_EQ(std::bit_cast<uint32_t>(bound), std::bit_cast<uint32_t>(expected)) << "fan_in " << fan_in;
  }
  EXPECT_EQ(rng::linear_bias_bound(0), 0.0);
  EXPECT_EQ(rng::linear_bias_bound(4), 0.5);
  expect_error([] { rng::kaiming_uniform_bound(0); }, {"kaiming_uniform_bound", "got 0"});
  expect_error([] { rng::linear_bias_bound(-1); }, {"linear_bias_bound", "got -1"});
}

TEST(RandomKernels, DrawCountsFollowTheSpecTable) {
  std::vector<float> f32(100);
  std::vector<double> f64(100);
  Generator gen(5);
  rng::normal_fill_f32(gen, f32.data(), 32, 0.0, 1.0);
  EXPECT_TRUE(made_draws(gen, 5, 32)) << "normal_fill_f32, n = 32";
  gen.manual_seed(5);
  rng::normal_fill_f32(gen, f32.data(), 17, 0.0, 1.0);
  EXPECT_TRUE(made_draws(gen, 5, 17 + 16)) << "normal_fill_f32, n = 17 (tail)";
  gen.manual_seed(5);
  rng::normal_fill_f64(gen, f64.data(), 17, 0.0, 1.0);
  EXPECT_TRUE(made_draws(gen, 5, 2 * (17 + 16))) << "normal_fill_f64, n = 17 (tail)";
  gen.manual_seed(5);
  rng::normal_scalar(gen);
  rng::normal_scalar(gen);  // cache hit: no draws
  EXPECT_TRUE(made_draws(gen, 5, 4)) << "normal_scalar twice";
  gen.manual_seed(5);
  rng::randint_one(gen, 0, int64_t{1} << 32);
  rng::randint_one(gen, 0, (int64_t{1} << 32) - 1);
  EXPECT_TRUE(made_draws(gen, 5, 3)) << "randint: 2 draws for range 2^32, 1 below";
  gen.manual_seed(5);
  int64_t one[1];
  rng::randperm_fill(gen, one, 1);
  EXPECT_EQ(one[0], 0);
  EXPECT_TRUE(made_draws(gen, 5, 0)) << "randperm(1)";
}

TEST(RandomKernels, BlockPathNeitherReadsNorWritesTheCachedNormal) {
  Generator gen(9);
  rng::normal_scalar(gen);
  double cached = *gen.next_double_normal();
  std::vector<float> data(40);
  rng::normal_fill_f32(gen, data.data(), 40, 0.0, 1.0);
  std::vector<double> data64(40);
  rng::normal_fill_f64(gen, data64.data(), 40, 0.0, 1.0);
  ASSERT_TRUE(gen.next_double_normal().has_value());
  EXPECT_EQ(std::bit_cast<uint64_t>(*gen.next_double_normal()), std::bit_cast<uint64_t>(cached));
}

TEST(RandomKernels, BlockPathRejectsFewerThanSixteenElements) {
  Generator gen(0);
  float data[15];
  double data64[15];
  expect_error([&] { rng::normal_fill_f32(gen, data, 15, 0.0, 1.0); },
               {"normal_fill_f32", "n >= 16", "n = 15"});
  expect_error([&] { rng::normal_fill_f64(gen, data64, 15, 0.0, 1.0); },
               {"normal_fill_f64", "n = 15"});
  EXPECT_FALSE(rng::normal_uses_block_path(15, true));
  EXPECT_TRUE(rng::normal_uses_block_path(16, true));
  EXPECT_FALSE(rng::normal_uses_block_path(1000, false));
}

TEST(RandomKernels, MultinomialRejectsInvalidRowsWithTorchMessageBeforeDrawing) {
  Generator gen(4);
  const float negative[3] = {0.5f, -0.25f, 0.5f};
  expect_error([&] { rng::multinomial_row_f32(gen, negative, 3); },
               {"multinomial: probability tensor contains either inf, nan or element < 0",
                "element 1 is -0.25"});
  const double with_nan[2] = {0.5, std::nan("")};
  expect_error([&] { rng::multinomial_row_f64(gen, with_nan, 2); },
               {"inf, nan or element < 0", "element 1"});
  const float zeros[3] = {0.0f, 0.0f, 0.0f};
  expect_error([&] { rng::multinomial_row_f32(gen, zeros, 3); },
               {"invalid multinomial distribution (sum of probabilities <= 0)"});
  // Two rows, the second invalid: nothing is drawn for the first either.
  const float rows[6] = {0.2f, 0.3f, 0.5f, 0.0f, 0.0f, 0.0f};
  int64_t picks[2];
  expect_error([&] { rng::multinomial_rows_f32(gen, picks, rows, 2, 3); }, {"in row 1"});
  EXPECT_TRUE(made_draws(gen, 4, 0)) << "rejected multinomial calls must not draw";
}

TEST(RandomKernels, MultinomialNeverPicksAZeroProbabilityEntry) {
  Generator gen(6);
  const float probs[5] = {0.0f, 1.0f, 0.0f, 3.0f, 0.0f};
  for (int i = 0; i < 500; ++i) {
    int64_t pick = rng::multinomial_row_f32(gen, probs, 5);
    ASSERT_TRUE(pick == 1 || pick == 3) << "pick " << i << " was " << pick;
  }
}

TEST(RandomKernels, ScalarKernelsRejectBadArgumentsNamingTheValue) {
  Generator gen(0);
  expect_error([&] { rng::randint_one(gen, 5, 5); }, {"randint_one", "low = 5", "high = 5"});
  expect_error([&] { rng::bernoulli_one(gen, 1.5); }, {"bernoulli_one", "got 1.5"});
  expect_error([&] { rng::exponential_one(gen, -1.0); }, {"exponential_one", "got -1"});
  int64_t out[1];
  expect_error([&] { rng::randperm_fill(gen, out, -3); }, {"randperm_fill", "got -3"});
  EXPECT_TRUE(made_draws(gen, 0, 0));
}

TEST(RandomKernels, RandintCoversTheFullInt64Range) {
  Generator gen(1);
  int64_t lowest = std::numeric_limits<int64_t>::min();
  int64_t highest = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 1000; ++i) {
    int64_t v = rng::randint_one(gen, lowest, highest);
    ASSERT_LT(v, highest);
  }
  for (int i = 0; i < 1000; ++i) {
    int64_t v = rng::randint_one(gen, -3, -1);
    ASSERT_TRUE(v == -3 || v == -2) << v;
  }
}

}  // namespace
