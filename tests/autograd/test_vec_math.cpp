// tests/autograd/test_vec_math.cpp — vec_math's exp and tanh (autograd/kernels/vec_math.h) against
// the correctly rounded result: std::exp / std::tanh in double, rounded to float.
//
// Sweeps take every 401st float of a range, stepping through the floats in order (so every
// binade, tiny and subnormal inputs included, gets the same share of points), then every
// 65537th float of the whole line, then the edges: 0, -0, the smallest subnormal, the overflow
// and underflow thresholds, FLT_MAX, +-inf, nan. Each prints its worst
// case on a "[ worst    ]" line. tanh runs through the float32 loop activation.cpp uses
// (activation_kernels::tanh_forward), so the vectorised code is what is measured.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <sstream>
#include <vector>

#include "autograd/kernels/activation_kernels.h"
#include "autograd/kernels/vec_math.h"

namespace tg {
namespace {

namespace K = activation_kernels;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// A float's position on the number line, counted in floats: neighbours differ by 1, and
// -0 and +0 share position 0.
int64_t float_position(float x) {
  const auto bits = static_cast<int64_t>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
  return std::signbit(x) ? -bits : bits;
}

// Distance in ulp between two floats; 0 for two nans, "infinitely" far for a nan and a number.
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  return std::abs(float_position(a) - float_position(b));
}

// A double rounded to the nearest float, inf past float's range (the cast itself is undefined
// there). Halfway between FLT_MAX and 2^128 rounds to 2^128 = inf (FLT_MAX's last bit is odd).
float round_to_float(double v) {
  const double overflow = 0x1.ffffffp127;  // (2 - 2^-24) * 2^127
  if (std::abs(v) >= overflow) return std::copysign(kInf, static_cast<float>(v));
  return static_cast<float>(v);
}

float float_at(int64_t position) {
  const auto bits = static_cast<uint32_t>(position < 0 ? -position : position) | (position < 0 ? 0x80000000u : 0u);
  return std::bit_cast<float>(bits);
}

// Every 401st float from lo up to hi, every 65537th from -FLT_MAX to FLT_MAX, then the edges.
std::vector<float> sweep(float lo, float hi) {
  std::vector<float> xs;
  for (int64_t p = float_position(lo); p <= float_position(hi); p += 401) xs.push_back(float_at(p));
  const float max_float = std::numeric_limits<float>::max();
  for (int64_t p = float_position(-max_float); p <= float_position(max_float); p += 65537) xs.push_back(float_at(p));
  const float min_subnormal = std::numeric_limits<float>::denorm_min();
  for (float edge : {0.0f, -0.0f, min_subnormal, -min_subnormal, std::numeric_limits<float>::min(), 88.7228f,
                     88.72284f, 88.7229f, -87.3365f, -103.972f, -103.973f, -104.0f, 9.01f, 9.02f, 9.1f, 10.0f, -9.1f,
                     max_float, -max_float, kInf, -kInf, kNan}) {
    xs.push_back(edge);
  }
  return xs;
}

struct Worst {
  int64_t ulp = 0;
  float x = 0, got = 0, want = 0;
  std::string str() const {
    std::ostringstream s;
    s.precision(9);
    s << ulp << " ulp at x = " << x << " (got " << got << ", correctly rounded " << want << ")";
    return s.str();
  }
};

// The worst ulp distance of got[i] from want(xs[i]); fails naming every point past max_ulp.
template <class Want>
Worst check_ulp(const char* name, const std::vector<float>& xs, const std::vector<float>& got, Want want,
                int64_t max_ulp) {
  Worst worst;
  int failures = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float w = round_to_float(want(static_cast<double>(xs[i])));
    const int64_t d = ulp_distance(got[i], w);
    if (d > max_ulp && ++failures <= 10) {
      ADD_FAILURE() << name << "(" << xs[i] << ") = " << got[i] << ", correctly rounded " << w << ": " << d << " ulp";
    }
    if (d > worst.ulp) worst = {d, xs[i], got[i], w};
  }
  std::cout << "[ worst    ] " << name << " over " << xs.size() << " floats: " << worst.str() << "\n";
  return worst;
}

TEST(VecMath, TanhWithin2UlpOfCorrectlyRounded) {
  const std::vector<float> xs = sweep(-10.0f, 10.0f);
  std::vector<float> got(xs.size());
  K::tanh_forward(got.data(), xs.data(), static_cast<int64_t>(xs.size()));
  const Worst worst = check_ulp("vec_math::tanh", xs, got, [](double x) { return std::tanh(x); }, 2);
  EXPECT_GE(worst.ulp, 1) << "a sweep this size that finds no rounding difference did not run";
}

TEST(VecMath, ExpWithin1UlpOfCorrectlyRounded) {
  // -104 .. 89 holds every input whose result is finite and nonzero.
  const std::vector<float> xs = sweep(-104.0f, 89.0f);
  std::vector<float> got(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) got[i] = vec_math::exp(xs[i]);
  check_ulp("vec_math::exp", xs, got, [](double x) { return std::exp(x); }, 1);
}

TEST(VecMath, SpecialValuesAsTheStandardFunctions) {
  EXPECT_EQ(vec_math::tanh(kInf), 1.0f);
  EXPECT_EQ(vec_math::tanh(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(vec_math::tanh(kNan)));
  EXPECT_TRUE(std::isnan(vec_math::tanh(-kNan)));
  EXPECT_EQ(std::bit_cast<uint32_t>(vec_math::tanh(-0.0f)), std::bit_cast<uint32_t>(-0.0f));
  EXPECT_EQ(vec_math::tanh(std::numeric_limits<float>::max()), 1.0f);
  EXPECT_EQ(vec_math::tanh(std::numeric_limits<float>::denorm_min()), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(vec_math::exp(kInf), kInf);
  EXPECT_EQ(vec_math::exp(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(vec_math::exp(kNan)));
  EXPECT_EQ(vec_math::exp(0.0f), 1.0f);
  EXPECT_EQ(vec_math::exp(89.0f), kInf);                                    // past ln(FLT_MAX) = 88.7228
  EXPECT_LE(ulp_distance(vec_math::exp(88.72f), round_to_float(std::exp(double{88.72f}))), 1);    // just below: finite
  EXPECT_LE(ulp_distance(vec_math::exp(-100.0f), round_to_float(std::exp(double{-100.0f}))), 1);  // a subnormal result
  EXPECT_EQ(vec_math::exp(-104.0f), 0.0f);                                  // below half the smallest subnormal
}

}  // namespace
}  // namespace tg
