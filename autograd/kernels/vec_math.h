// autograd/kernels/vec_math.h — exp and tanh for float, written so that a plain loop calling them
// vectorises (g++ -O3, even for baseline x86-64: 4 floats per SSE2 step, 8 per AVX2 step).
//
//   exp x   = 2^n e^r                 x = n ln2 + r,  n = round(x / ln2),  |r| <= ln2/2
//   e^r - 1 = r + r^2 (1/2! + r/3! + ... + r^5/7!)            Taylor to degree 7 on |r| <= 0.35
//   tanh x  = u / (u + 2)             u = e^2|x| - 1 = 2^n (1 + (e^r - 1)) - 1 >= 0, sign of x
//
// Read exp and tanh at the bottom first. The rules that keep a loop over them vectorisable are
// above select; how accurate they are is above exp.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace tg::vec_math {

inline uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
inline float float_of(uint32_t bits) { return std::bit_cast<float>(bits); }

// How a loop over exp and tanh stays vectorisable, with the project's -ffp-contract=off and without
// -ffast-math:
//   * no branches: a choice is select(c, a, b), a bit mask, never `c ? a : b` on floats (under
//     -ftrapping-math, g++ will not turn a branch whose arms do float arithmetic into a vector
//     blend);
//   * no float -> int conversion: adding 1.5 * 2^23 rounds x / ln2 to an integer and leaves it in
//     the low bits of the float, read back as bits (no conversion instruction, no range
//     question for nan or inf);
//   * 2^n is made by writing n + 127 into the exponent field;
//   * only +, -, *, / and bit operations: IEEE rounds each the same way at any vector width, so
//     a loop gives the same bits compiled for SSE2, for AVX2 or as scalar code. (No FMA is
//     written anywhere here; the compiler adds none under -ffp-contract=off.)
//
// c ? a : b, by masking bits: no branch, so a loop around it vectorises.
inline float select(bool c, float a, float b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);  // all ones when c
  return float_of((bits_of(a) & mask) | (bits_of(b) & ~mask));
}

// 2^n for n in [-126, 127]: the biased exponent n + 127, mantissa 0. (Unsigned arithmetic: a
// garbage n, as a nan input gives, wraps instead of being undefined; the nan survives elsewhere.)
inline float pow2(int32_t n) { return float_of((static_cast<uint32_t>(n) + 127u) << 23); }

// The constants of exp's reduction and polynomial (the AVX-512 softmax row in
// softmax_kernels.cpp computes exp with them too, step for step).
constexpr float kLog2e = 1.44269504088896341f;
// ln2 in two parts: kLn2Hi has 9 significant bits, so n * kLn2Hi is exact for |n| < 2^15,
// and x - n * kLn2Hi is exact too (Cody and Waite's reduction).
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
// Adding 1.5 * 2^23 leaves no bits below the units: the sum holds round(x / ln2) (to
// nearest, ties to even) in its low mantissa bits, and subtracting it back gives n as a float.
constexpr float kRoundingShift = 12582912.0f;  // 1.5 * 2^23
// The Taylor coefficients of (e^r - 1 - r) / r^2, highest first: 1/7!, 1/6!, ..., 1/2!.
constexpr float kExpm1Coefficients[6] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f};
// exp clamps its input to [kExpLowest, kExpHighest] (see exp below).
constexpr float kExpLowest = -104.0f, kExpHighest = 89.0f;

// x = n ln2 + r with n = round(x / ln2) and |r| <= ln2/2 (a hair more where x / ln2 rounds
// across a half). Needs |x| < 2^22 * ln2; x is clamped by the callers.
struct Ln2Split {
  int32_t n;
  float r;
};
inline Ln2Split split_ln2(float x) {
  const float shifted = x * kLog2e + kRoundingShift;
  const float n = shifted - kRoundingShift;
  const auto n_int = static_cast<int32_t>(bits_of(shifted) - bits_of(kRoundingShift));
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  return {n_int, r};
}

// e^r - 1 for |r| <= 0.35: the Taylor series to degree 7. The first term left out, r^8/8!, is
// below 5.2e-9, under 0.2 ulp of e^r - 1; kept apart from the 1, a small r keeps its bits.
inline float expm1_reduced(float r) {
  float q = kExpm1Coefficients[0];  // 1/7!
  for (int i = 1; i < 6; ++i) q = q * r + kExpm1Coefficients[i];
  return r + (r * r) * q;
}

// Accuracy against the correctly rounded result (std::exp / std::tanh in double, rounded to
// float), measured over every 7th float of the whole line (613 million inputs); the test suite
// (tests/autograd/test_vec_math.cpp) re-checks every 401st float of [-10, 10] for tanh and of
// [-104, 89] for exp, a coarse sample of the whole line, and the edges:
//   exp   <= 1 ulp for every float, subnormal results included (there 1 ulp = 2^-149);
//         exp(x) = inf above 88.7228 (and for +inf), 0 below -103.98 (and for -inf), nan for nan.
//   tanh  <= 2 ulp for every float (2 ulp only for some |x| in [2^-14, 0.5), 1 float in ~3300
//         of the whole line); tanh(+-inf) = +-1, tanh(+-0) = +-0, tanh(nan) = nan.
// The error terms: e^r - 1's polynomial (under 0.2 ulp) and its rounding, the reduction's
// rounding of r, then for tanh u + 2 and the division, rounding once each.
//
// e^x for float. x is clamped to [-104, 89] (outside it the result is 0 or inf anyway), so
// n is in [-150, 128]; 2^n is applied as 2^(n/2) * 2^(n - n/2), both normal, so a result in
// the subnormal range or just below the overflow threshold rounds once, at the last multiply.
// A nan passes the clamps (both comparisons are false) and stays nan.
inline float exp(float x) {
  const float above_min = select(x < kExpLowest, kExpLowest, x);
  const float clamped = select(above_min > kExpHighest, kExpHighest, above_min);
  const Ln2Split s = split_ln2(clamped);
  const float e_r = 1.0f + expm1_reduced(s.r);
  const int32_t n_half = s.n >> 1;  // floor(n / 2): arithmetic shift (defined since C++20)
  return (e_r * pow2(n_half)) * pow2(s.n - n_half);
}

// tanh x for float (its accuracy is above exp). tanh is odd: computed for |x| and given x's sign
// (copysign: -0 stays -0). |x| is clamped to 9.1, past which tanh rounds to 1 in float
// (1 - tanh 9.1 < 2^-25); then u = e^2|x| - 1 < 2^27, n <= 27, and u / (u + 2) never divides
// inf by inf. A nan passes the clamp and stays nan.
inline float tanh(float x) {
  const float a = select(std::fabs(x) > 9.1f, 9.1f, std::fabs(x));
  const Ln2Split s = split_ln2(2.0f * a);
  const float scale = pow2(s.n);
  // u = 2^n e^r - 1 = 2^n (e^r - 1) + (2^n - 1): exact for n = 0, where u is small; the sum
  // cancels little for n >= 1 (u >= 0.41 there).
  const float u = scale * expm1_reduced(s.r) + (scale - 1.0f);
  return std::copysign(u / (u + 2.0f), x);
}

}  // namespace tg::vec_math
