#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/random/random_kernels.h"
#include "rng_replay.h"
#include "test_util.h"

namespace {

using tg::test::expect_error;

// n draws from each generator must agree.
void expect_same_stream(tg::Generator& a, tg::Generator& b, int n, const std::string& what) {
  for (int i = 0; i < n; ++i) ASSERT_EQ(a.random(), b.random()) << what << ": draw " << i;
}

TEST(Generator, EngineIsMt19937Seed5489TenThousandthDraw) {
  tg::Generator gen(5489);
  uint32_t v = 0;
  for (int i = 0; i < 10000; ++i) v = gen.random();
  EXPECT_EQ(v, 4123659995u);
}

TEST(Generator, Random64FirstDrawIsHighHalf) {
  tg::Generator a(42), b(42);
  uint64_t hi = a.random(), lo = a.random();
  EXPECT_EQ(b.random64(), (hi << 32) | lo);
}

TEST(Generator, OnlyLow32BitsOfSeedReachTheEngine) {
  tg::Generator a(5), b(5 + (1ULL << 32));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.random(), b.random()) << "draw " << i;
  EXPECT_EQ(b.initial_seed(), 5 + (1ULL << 32));
}

TEST(Generator, OwnEngineEqualsStdMt19937AcrossSeveralTwists) {
  for (uint64_t seed : {0ULL, 1ULL, 42ULL, 123ULL, 4294967303ULL, 18446744073709551615ULL}) {
    tg::Generator gen(seed);
    std::mt19937 reference(static_cast<uint32_t>(seed));
    for (int i = 0; i < 3000; ++i) {
      ASSERT_EQ(gen.random(), reference()) << "seed " << seed << ", draw " << i;
    }
  }
}

TEST(Generator, FirstDrawAfterSeedingTwistsTheBlock) {
  tg::Generator gen(7);
  EXPECT_EQ(gen.left(), 1);
  EXPECT_EQ(gen.next_index(), 0);
  EXPECT_EQ(gen.state_words()[0], 7u);  // untwisted: word 0 is the seed
  gen.random();
  EXPECT_EQ(gen.left(), 624);
  EXPECT_EQ(gen.next_index(), 1);
  for (int i = 1; i < 624; ++i) gen.random();
  EXPECT_EQ(gen.left(), 1);
  EXPECT_EQ(gen.next_index(), 624);
  gen.random();  // draw 625 twists again
  EXPECT_EQ(gen.left(), 624);
  EXPECT_EQ(gen.next_index(), 1);
}

TEST(Generator, FreshGeneratorStateHeaderMatchesTorchGenerator) {
  // torch.Generator().get_state()[:24]: seed 67280421310721, left 1, seeded 1, next 0.
  const std::vector<uint8_t> torch_header = {0x01, 0xd1, 0x9c, 0xf1, 0x30, 0x3d, 0x00, 0x00,
                                             0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
                                             0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  std::vector<uint8_t> state = tg::Generator().get_state();
  for (size_t i = 0; i < torch_header.size(); ++i) {
    EXPECT_EQ(state[i], torch_header[i]) << "byte " << i;
  }
}

TEST(Generator, NegativeSeedWrapsToUint64LikeTorch) {
  tg::Generator gen(static_cast<uint64_t>(int64_t{-1}));
  EXPECT_EQ(gen.initial_seed(), 18446744073709551615ULL);
  tg::Generator low_bits(0xFFFFFFFFu);
  expect_same_stream(gen, low_bits, 100, "seed -1 vs 2^32 - 1");
}

TEST(Generator, DefaultGeneratorFollowsManualSeed) {
  tg::manual_seed(42);
  EXPECT_EQ(tg::default_generator().initial_seed(), 42u);
  EXPECT_EQ(tg::default_generator().random(), 1608637542u);  // golden engine_u32_seed42[0]
}

TEST(Generator, GoldenEngineDrawsMatchTorch) {
  tg_test::Tally tally = tg_test::replay_family("engine");
  EXPECT_EQ(tally.vectors, 6);
  EXPECT_EQ(tally.values, 48);
}

TEST(Generator, GetStateBytesEqualTorchGetRngStateByteForByte) {
  tg_test::Tally tally = tg_test::replay_family("engine_state");
  EXPECT_EQ(tally.vectors, 9);
  EXPECT_EQ(tally.state_bytes, 9 * static_cast<int64_t>(tg::Generator::kStateBytes));
}

TEST(Generator, ManualSeedClearsTheCachedNormal) {
  tg::Generator gen(3);
  tg::rng::normal_scalar(gen);
  ASSERT_TRUE(gen.next_double_normal().has_value());
  gen.manual_seed(3);
  EXPECT_FALSE(gen.next_double_normal().has_value());
}

TEST(Generator, CopyIsASavedStateIncludingTheCachedNormal) {
  tg::Generator gen(11);
  for (int i = 0; i < 700; ++i) gen.random();  // past a twist
  tg::rng::normal_scalar(gen);                  // leaves a sin value cached
  tg::Generator saved = gen;

  double cached = tg::rng::normal_scalar(gen);
  double fresh = tg::rng::normal_scalar(gen);
  uint32_t draw = gen.random();

  gen = saved;
  EXPECT_EQ(std::bit_cast<uint64_t>(tg::rng::normal_scalar(gen)), std::bit_cast<uint64_t>(cached));
  EXPECT_EQ(std::bit_cast<uint64_t>(tg::rng::normal_scalar(gen)), std::bit_cast<uint64_t>(fresh));
  EXPECT_EQ(gen.random(), draw);
}

TEST(Generator, GetStateThenSetStateRestoresStreamAndCachedNormal) {
  tg::Generator gen(2);
  for (int i = 0; i < 1000; ++i) gen.random();
  tg::rng::normal_scalar(gen);
  std::vector<uint8_t> state = gen.get_state();
  ASSERT_EQ(state.size(), tg::Generator::kStateBytes);

  std::vector<double> expected;
  for (int i = 0; i < 5; ++i) expected.push_back(tg::rng::normal_scalar(gen));

  tg::Generator restored(999);
  restored.set_state(state);
  EXPECT_EQ(restored.initial_seed(), 2u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(tg::rng::normal_scalar(restored)),
              std::bit_cast<uint64_t>(expected[i]))
        << "normal " << i << " after set_state";
  }
  expect_same_stream(gen, restored, 2000, "after set_state");
}

TEST(Generator, SetStateLoadsAStateSavedByTorch) {
  // torch: manual_seed(7); randn(1); get_rng_state() -- the sin value of the pair is cached.
  const tg::json::Value* saved = nullptr;
  for (const tg::json::Value& v : tg_test::torch_file()["vectors"].as_array()) {
    if (v["id"].as_string() == "state_with_cached_normal_seed7") saved = &v;
  }
  ASSERT_NE(saved, nullptr) << "rng_torch.json lacks state_with_cached_normal_seed7";
  const std::string& hex = (*saved)["values"][0].as_string();
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < hex.size(); i += 2) bytes.push_back(tg_test::parse_hex(hex.substr(i, 2)));

  tg::Generator loaded(12345);
  loaded.set_state(bytes);
  tg::Generator reference(7);
  tg::rng::normal_scalar(reference);
  ASSERT_TRUE(loaded.next_double_normal().has_value());
  EXPECT_EQ(std::bit_cast<uint64_t>(*loaded.next_double_normal()),
            std::bit_cast<uint64_t>(*reference.next_double_normal()));
  EXPECT_EQ(loaded.initial_seed(), 7u);
  expect_same_stream(loaded, reference, 1000, "torch state vs replayed");
}

TEST(Generator, SetStateWithWrongSizeSaysExpectedAndGot) {
  tg::Generator gen(1);
  std::vector<uint8_t> too_short(100, 0);
  expect_error([&] { gen.set_state(too_short); },
               {"Generator::set_state", "expected 5056 bytes", "got 100"});
  std::vector<uint8_t> legacy(5048, 0);  // torch's older layout without the float cache
  expect_error([&] { gen.set_state(legacy); }, {"got 5048"});
}

TEST(Generator, SetStateRejectsBadFieldsAndLeavesGeneratorUnchanged) {
  tg::Generator gen(8);
  for (int i = 0; i < 10; ++i) gen.random();
  const std::vector<uint8_t> good = gen.get_state();
  auto with = [&](size_t offset, std::vector<uint8_t> patch) {
    std::vector<uint8_t> bytes = good;
    for (size_t i = 0; i < patch.size(); ++i) bytes[offset + i] = patch[i];
    return bytes;
  };
  tg::Generator untouched = gen;

  expect_error([&] { gen.set_state(with(8, {0, 0, 0, 0})); }, {"'left'", "got 0"});
  expect_error([&] { gen.set_state(with(8, {0x71, 0x02, 0, 0})); }, {"'left'", "got 625"});
  expect_error([&] { gen.set_state(with(12, {0, 0, 0, 0})); }, {"'seeded'", "got 0"});
  // left = 615 after 10 draws, so next may be at most 10.
  expect_error([&] { gen.set_state(with(16, {11})); }, {"'next'", "625 - left = 10", "got 11"});
  expect_error([&] { gen.set_state(with(24 + 8 * 5 + 4, {1})); },
               {"state word 5", "does not fit in 32 bits"});
  expect_error([&] { gen.set_state(with(5040, {2})); }, {"'normal_is_valid'", "got 2"});
  expect_error([&] { gen.set_state(with(5048, {7})); },
               {"'next_float_normal_is_valid'", "got 7"});
  expect_same_stream(gen, untouched, 1000, "after rejected set_state calls");
}

}  // namespace
