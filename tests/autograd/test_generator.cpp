#include <gtest/gtest.h>

#include "autograd/generator.h"

namespace {

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

}  // namespace
