// tests/optim/test_optim_kernels.cpp — the fast loops behind Adam's step and the gradient 2-norm
// (autograd/kernels/optim_kernels.h) on every instruction set this CPU has, against their
// references (adam_step_reference, sum_of_squares_reference).
//
// Both paths do the same correctly rounded operations (fma, sqrt, +, *, /) in the same order,
// so they must agree bit for bit (NaN with NaN): checked on lengths around the vector width
// (1, 7, 8, 9, 17) and long ones, with large, tiny, zero, infinite and NaN gradients, for every
// combination of Adam's flags, in float and double.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/kernels/optim_kernels.h"
#include "optim/optim_loops.h"

namespace tg::optim {
namespace {

using kernels::Isa;

std::vector<Isa> isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512})
    if (kernels::isa_available(isa)) out.push_back(isa);
  return out;
}

const std::vector<int64_t> kLengths = {1, 7, 8, 9, 17, 1000, 4103};

// n values of scale `scale`, with the special ones sprinkled in when `specials`.
template <class T>
std::vector<T> values(int64_t n, uint32_t seed, double scale, bool specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(normal(rng));
  if (specials) {
    const T list[] = {T(0), -T(0), T(1e30), T(-3e38), std::numeric_limits<T>::denorm_min(),
                      std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN()};
    for (size_t k = 0; k < std::size(list) && 3 * k < v.size(); ++k) v[3 * k] = list[k];
  }
  return v;
}

// Same bits, or both NaN; names the first index that differs.
template <class T>
::testing::AssertionResult same_values(const std::string& what, const std::vector<T>& fast,
                                       const std::vector<T>& reference) {
  for (size_t i = 0; i < fast.size(); ++i) {
    const bool both_nan = std::isnan(fast[i]) && std::isnan(reference[i]);
    if (!both_nan && std::bit_cast<std::array<unsigned char, sizeof(T)>>(fast[i]) !=
                         std::bit_cast<std::array<unsigned char, sizeof(T)>>(reference[i])) {
      return ::testing::AssertionFailure() << what << " at index " << i << " of " << fast.size() << ": fast "
                                           << fast[i] << ", reference " << reference[i];
    }
  }
  return ::testing::AssertionSuccess();
}

template <class T>
void check_adam_against_reference() {
  for (int64_t n : kLengths) {
    for (int flags = 0; flags < 8; ++flags) {
      for (bool specials : {false, true}) {
        const bool decoupled = flags & 1, amsgrad = flags & 2, maximize = flags & 4;
        AdamStep<T> s{T(0.9), T(0.1), T(0.999), T(0.001), T(decoupled ? 0.0 : 0.05), T(1.0 - 1e-3 * 0.1),
                      T(std::sqrt(1.0 - std::pow(0.999, 3))), T(1e-8), T(-1e-3 / (1.0 - std::pow(0.9, 3))),
                      decoupled, amsgrad, maximize};
        const std::vector<T> grad = values<T>(n, 1, 1e-2, specials);
        const std::vector<T> p0 = values<T>(n, 2, 1.0, false), m0 = values<T>(n, 3, 1e-3, false);
        std::vector<T> v0 = values<T>(n, 4, 1e-4, false), vmax0 = values<T>(n, 5, 1e-4, false);
        for (T& x : v0) x = x * x;
        for (T& x : vmax0) x = x * x;
        std::vector<T> p = p0, m = m0, v = v0, vmax = vmax0;
        adam_step_reference(p.data(), grad.data(), m.data(), v.data(), amsgrad ? vmax.data() : nullptr, n, s);
        for (Isa isa : isas()) {
          std::vector<T> fp = p0, fm = m0, fv = v0, fvmax = vmax0;
          kernels::adam_step(fp.data(), grad.data(), fm.data(), fv.data(), amsgrad ? fvmax.data() : nullptr, n, s,
                             isa);
          const std::string what = std::string(sizeof(T) == 4 ? "float" : "double") + " n " + std::to_string(n) +
                                   " decoupled " + std::to_string(decoupled) + " amsgrad " +
                                   std::to_string(amsgrad) + " maximize " + std::to_string(maximize) +
                                   " " + kernels::isa_name(isa) + (specials ? " specials" : "");
          EXPECT_TRUE(same_values(what + ": p", fp, p));
          EXPECT_TRUE(same_values(what + ": exp_avg", fm, m));
          EXPECT_TRUE(same_values(what + ": exp_avg_sq", fv, v));
          if (amsgrad) {
            EXPECT_TRUE(same_values(what + ": max_exp_avg_sq", fvmax, vmax));
          }
        }
      }
    }
  }
}

TEST(OptimKernels, AdamStepEqualsAdamStepReferenceBitForBitForEveryFlagAndLength) {
  check_adam_against_reference<float>();
  check_adam_against_reference<double>();
}

template <class T>
void check_sum_of_squares_against_reference() {
  for (int64_t n : kLengths) {
    for (double scale : {1e-3, 1.0, 1e15}) {
      for (bool specials : {false, true}) {
        const std::vector<T> x = values<T>(n, 7, scale, specials);
        const std::vector<T> reference{sum_of_squares_reference(x.data(), n)};
        for (Isa isa : isas()) {
          const std::vector<T> fast{kernels::sum_of_squares(x.data(), n, isa)};
          EXPECT_TRUE(same_values("sum of squares of " + std::to_string(n) + " values of scale " +
                                      std::to_string(scale) + " " + kernels::isa_name(isa),
                                  fast, reference));
        }
      }
    }
  }
}

TEST(OptimKernels, SumOfSquaresEqualsSumOfSquaresReferenceBitForBit) {
  check_sum_of_squares_against_reference<float>();
  check_sum_of_squares_against_reference<double>();
}

}  // namespace
}  // namespace tg::optim
