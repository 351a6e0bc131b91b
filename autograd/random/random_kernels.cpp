// autograd/random/random_kernels.cpp — PyTorch 1.13's CPU random algorithms (AVX2 variant), bit for bit.
//
// Floating point rules for this file (§9; section marks as listed in random_kernels.h):
//   * It must be compiled with -ffp-contract=off (the whole project is). PyTorch's AVX2 build
//     fuses some a*b+c into one fused multiply-add and leaves others as two roundings; we
//     reproduce that by writing each fused one as std::fma / std::fmaf, so the compiler must
//     not fuse any other.
//   * Plain SSE float/double arithmetic (the x86-64 default), never x87, never -ffast-math.
//   * The double-precision paths call glibc's log, sin and cos where PyTorch does; their
//     results are not correctly rounded, so float64 normals are bit-exact only with glibc.
//     The float32 block path (§4.4) uses its own polynomials and needs no libm at all.
#include "autograd/random/random_kernels.h"
#include "autograd/error.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

namespace tg::rng {
namespace {

// 2*pi as the double 2.0 * M_PI = 6.283185307179586 (doubling is exact).
constexpr double kTwoPi = 2.0 * 3.141592653589793;

// Shortest text that reads back as the same double, for error messages.
std::string show(double v) {
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, result.ptr);
}

[[noreturn]] void invalid(const std::string& message) { throw Error(message); }

}  // namespace

// ---- §2 Unit uniforms -------------------------------------------------------------------------

float unit_uniform_f32(Generator& gen) {
  uint32_t r = gen.random();
  return static_cast<float>(r & 0xFFFFFFu) * 0x1p-24f;  // low 24 bits, exact
}

double unit_uniform_f64(Generator& gen) {
  uint64_t v = gen.random64();
  return static_cast<double>(v & ((uint64_t{1} << 53) - 1)) * 0x1p-53;  // low 53 bits, exact
}

// ---- §3 rand / uniform_ -----------------------------------------------------------------------

UniformF32 uniform_params_f32(double a, double b) {
  if (!(a <= b)) invalid("uniform_params_f32: need a <= b, got a = " + show(a) + ", b = " + show(b));
  float lo = static_cast<float>(a);
  float hi = static_cast<float>(b);
  float range = hi - lo;  // float32 subtraction
  if (!std::isfinite(range)) {
    invalid("uniform_params_f32: b - a overflows float32 (a = " + show(a) + ", b = " + show(b) + ")");
  }
  return {lo, range};
}

UniformF64 uniform_params_f64(double a, double b) {
  if (!(a <= b)) invalid("uniform_params_f64: need a <= b, got a = " + show(a) + ", b = " + show(b));
  double range = b - a;
  if (!std::isfinite(range)) {
    invalid("uniform_params_f64: b - a overflows (a = " + show(a) + ", b = " + show(b) + ")");
  }
  return {a, range};
}

// value = U24 * range + lo with one rounding (the AVX2 build fuses it).
float uniform_f32(Generator& gen, float lo, float range) {
  return std::fmaf(unit_uniform_f32(gen), range, lo);
}

// value = U53 * range + lo with one rounding.
double uniform_f64(Generator& gen, double lo, double range) {
  return std::fma(unit_uniform_f64(gen), range, lo);
}

// ---- §4.2 Scalar normal path ------------------------------------------------------------------

bool normal_uses_block_path(int64_t n, bool contiguous) {
  return contiguous && n >= kNormalBlockSize;
}

// Box-Muller: for u1, u2 uniform in [0, 1), r = sqrt(-2 log(1 - u2)) and theta = 2 pi u1 give
// two independent standard normals r cos(theta) and r sin(theta). We return the cos one and
// keep the sin one for the next call.
double normal_scalar(Generator& gen) {
  std::optional<double>& cache = gen.next_double_normal();
  if (cache) {
    double z = *cache;
    cache.reset();
    return z;
  }
  double u1 = unit_uniform_f64(gen);
  double u2 = unit_uniform_f64(gen);
  double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  double theta = kTwoPi * u1;
  cache = r * std::sin(theta);
  return r * std::cos(theta);
}

double normal_scale(double z, double mean, double std) { return std::fma(z, std, mean); }

// ---- §4.3 float64 block path ------------------------------------------------------------------

namespace {

// Box-Muller on one block of 16 uniforms: lane j (0..7) takes its radius from data[j] and its
// angle from data[8+j], and writes the cos normal to data[j] and the sin normal to data[8+j].
void box_muller_block_f64(double* block, double mean, double std) {
  for (int j = 0; j < 8; ++j) {
    double v1 = 1.0 - block[j];
    double radius = std::sqrt(-2.0 * std::log(v1));
    double theta = kTwoPi * block[8 + j];
    block[j] = std::fma(radius * std::cos(theta), std, mean);
    block[8 + j] = std::fma(radius * std::sin(theta), std, mean);
  }
}

void check_block_path_size(const char* function, int64_t n) {
  if (n < kNormalBlockSize) {
    invalid(std::string(function) + ": the block path needs n >= 16, got n = " + std::to_string(n) +
            " (smaller tensors use normal_scalar per element)");
  }
}

// The block path's skeleton, the same for both dtypes (§4): fill data (n) with uniforms from
// draw(), transform each full block of 16 in place, then, if n is not a multiple of 16, draw 16
// fresh uniforms into the last 16 slots and transform that window (it overlaps the last full
// block; the uniforms it overwrites are drawn but never used).
template <class T, class Draw, class Transform>
void fill_normal_blocks(T* data, int64_t n, Draw draw, Transform transform) {
  for (int64_t i = 0; i < n; ++i) data[i] = draw();
  for (int64_t k = 0; k + kNormalBlockSize <= n; k += kNormalBlockSize) transform(data + k);
  if (n % kNormalBlockSize != 0) {
    T* tail = data + n - kNormalBlockSize;
    for (int64_t i = 0; i < kNormalBlockSize; ++i) tail[i] = draw();
    transform(tail);
  }
}

}  // namespace

void normal_fill_f64(Generator& gen, double* data, int64_t n, double mean, double std) {
  check_block_path_size("normal_fill_f64", n);
  fill_normal_blocks(data, n, [&] { return unit_uniform_f64(gen); },
                     [&](double* block) { box_muller_block_f64(block, mean, std); });
}

// ---- §4.4 float32 block path: PyTorch's AVX2 polynomials, one lane at a time ------------------

namespace {

float float_from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

// Constants of the Cephes-style approximations, as exact float32 bit patterns.
const float kSqrtHalf = float_from_bits(0x3F3504F3);  // sqrt(1/2)
const float kLogP[9] = {
    float_from_bits(0x3D9021BB), float_from_bits(0xBDEBD1B8), float_from_bits(0x3DEF251A),
    float_from_bits(0xBDFE5D4F), float_from_bits(0x3E11E9BF), float_from_bits(0xBE2AAE50),
    float_from_bits(0x3E4CCEAC), float_from_bits(0xBE7FFFFC), float_from_bits(0x3EAAAAAA)};
const float kLogQ1 = float_from_bits(0xB95E8083);  // ln 2 = Q2 - Q1, split in two parts
const float kLogQ2 = float_from_bits(0x3F318000);
const float kFourOverPi = float_from_bits(0x3FA2F983);
const float kMinusDP1 = float_from_bits(0xBF490000);  // -pi/4 = DP1 + DP2 + DP3, in three parts
const float kMinusDP2 = float_from_bits(0xB97DA000);
const float kMinusDP3 = float_from_bits(0xB3222169);
const float kSinP0 = float_from_bits(0xB94CA1F9);
const float kSinP1 = float_from_bits(0x3C08839E);
const float kSinP2 = float_from_bits(0xBE2AAAA3);
const float kCosP0 = float_from_bits(0x37CCF5CE);
const float kCosP1 = float_from_bits(0xBAB6061A);
const float kCosP2 = float_from_bits(0x3D2AAAA5);
const float kTwoPiF = float_from_bits(0x40C90FDB);  // 6.2831855f
constexpr uint32_t kSignBit = 0x80000000u;

// Natural log for x in (0, 1]. Write x = m * 2^e with m in [sqrt(1/2), sqrt(2)); then
// log x = log m + e ln 2, and log(1 + t) for t = m - 1 is t - t^2/2 + t^3 * P(t).
float polynomial_log(float x) {
  x = std::max(x, 0x1p-126f);  // smallest normal float; never binds for x >= 2^-24
  uint32_t bits = std::bit_cast<uint32_t>(x);
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127) + 1.0f;
  float m = float_from_bits((bits & 0x807FFFFFu) | 0x3F000000u);  // mantissa in [0.5, 1)
  float t;
  if (m < kSqrtHalf) {
    e = e - 1.0f;
    t = (m - 1.0f) + m;  // 2m - 1
  } else {
    t = m - 1.0f;
  }
  float z = t * t;
  float y = kLogP[0];
  for (int k = 1; k <= 8; ++k) y = std::fmaf(y, t, kLogP[k]);
  y = y * t;
  y = std::fmaf(y, z, e * kLogQ1);
  y = y - 0.5f * z;
  return (t + y) + e * kLogQ2;
}

// sin and cos of theta in [0, 2 pi). Reduce by the multiple j of pi/4 (rounded up to even), so
// x = |theta| - j pi/4 lies in [-pi/4, pi/4]; evaluate both short polynomials on x; swap them and
// fix the signs according to the octant j.
void polynomial_sincos(float theta, float& sin_out, float& cos_out) {
  uint32_t theta_sign = std::bit_cast<uint32_t>(theta) & kSignBit;
  float a = std::fabs(theta);
  int32_t j = static_cast<int32_t>(a * kFourOverPi);  // truncates toward zero
  j = (j + 1) & ~1;
  float y = static_cast<float>(j);
  float x = std::fmaf(y, kMinusDP1, a);
  x = std::fmaf(y, kMinusDP2, x);
  x = std::fmaf(y, kMinusDP3, x);
  uint32_t sin_sign = ((j & 4) != 0 ? kSignBit : 0u) ^ theta_sign;
  uint32_t cos_sign = ((j - 2) & 4) == 0 ? kSignBit : 0u;

  float z = x * x;
  // cos x ~ 1 - z/2 + z^2 (CP2 + CP1 z + CP0 z^2)
  float c = std::fmaf(std::fmaf(kCosP0, z, kCosP1), z, kCosP2);
  c = c * z;
  c = std::fmaf(c, z, -(0.5f * z));
  c = c + 1.0f;
  // sin x ~ x + x z (SP2 + SP1 z + SP0 z^2)
  float s = std::fmaf(std::fmaf(kSinP0, z, kSinP1), z, kSinP2);
  s = s * z;
  s = std::fmaf(s, x, x);

  bool swap = (j & 2) != 0;
  // PyTorch selects by masking and adding, so a -0.0 result becomes +0.0 before the sign flip:
  // adding +0.0f reproduces that (x + 0.0f == x for every other x).
  float sin_abs = (swap ? c : s) + 0.0f;
  float cos_abs = (swap ? s : c) + 0.0f;
  sin_out = std::bit_cast<float>(std::bit_cast<uint32_t>(sin_abs) ^ sin_sign);
  cos_out = std::bit_cast<float>(std::bit_cast<uint32_t>(cos_abs) ^ cos_sign);
}

// Box-Muller on one block of 16 float uniforms, lanes as in box_muller_block_f64, all in
// float32: radius = sqrt(-2 LOG(1 - u)), theta = 2pi_f * u' (a float32 multiply).
void box_muller_block_f32(float* block, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    float v1 = 1.0f - block[j];
    float radius = std::sqrt(-2.0f * polynomial_log(v1));
    float theta = kTwoPiF * block[8 + j];
    float sin_theta, cos_theta;
    polynomial_sincos(theta, sin_theta, cos_theta);
    float n1 = radius * cos_theta;
    float n2 = radius * sin_theta;
    block[j] = std::fmaf(n1, std, mean);
    block[8 + j] = std::fmaf(n2, std, mean);
  }
}

}  // namespace

// Same skeleton as normal_fill_f64 with U24 uniforms (1 draw each) and float32 arithmetic.
void normal_fill_f32(Generator& gen, float* data, int64_t n, double mean, double std) {
  check_block_path_size("normal_fill_f32", n);
  const float mean_f = static_cast<float>(mean);
  const float std_f = static_cast<float>(std);
  fill_normal_blocks(data, n, [&] { return unit_uniform_f32(gen); },
                     [&](float* block) { box_muller_block_f32(block, mean_f, std_f); });
}

// ---- §5 randint, §7.2 randperm ----------------------------------------------------------------

// No rejection sampling: the small modulo bias is part of PyTorch's definition.
int64_t randint_one(Generator& gen, int64_t low, int64_t high) {
  if (!(low < high)) {
    invalid("randint_one: need low < high, got low = " + std::to_string(low) +
            ", high = " + std::to_string(high));
  }
  uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);  // wraps correctly
  uint64_t v = range >= (uint64_t{1} << 32) ? gen.random64() : gen.random();
  return static_cast<int64_t>(v % range + static_cast<uint64_t>(low));  // mod 2^64 arithmetic
}

// Forward Fisher-Yates: for i = 0 .. n-2, swap p[i] with p[i + (random() mod (n - i))].
// Verified against torch up to n = 1000.
void randperm_fill(Generator& gen, int64_t* out, int64_t n) {
  if (n < 0) invalid("randperm_fill: n must be >= 0, got " + std::to_string(n));
  for (int64_t i = 0; i < n; ++i) out[i] = i;
  for (int64_t i = 0; i + 1 < n; ++i) {
    int64_t z = static_cast<int64_t>(gen.random() % static_cast<uint64_t>(n - i));
    std::swap(out[i], out[i + z]);
  }
}

// ---- §6 Bernoulli and dropout -----------------------------------------------------------------

bool bernoulli_one(Generator& gen, double p) {
  if (!(p >= 0.0 && p <= 1.0)) invalid("bernoulli_one: p must be in [0, 1], got " + show(p));
  return unit_uniform_f64(gen) < p;
}

float dropout_scale(double p) {
  if (!(p >= 0.0 && p < 1.0)) {
    invalid("dropout_scale: p must be in [0, 1) (p = 1 zeroes everything, with no scale), got " +
            show(p));
  }
  return 1.0f / static_cast<float>(1.0 - p);
}

// torch: noise = bernoulli_(1 - p) as 1.0f / 0.0f, then noise / f32(1 - p).
float dropout_noise_one(Generator& gen, double p) {
  if (!(p >= 0.0 && p < 1.0)) {
    invalid("dropout_noise_one: p must be in [0, 1) (p = 1 needs no draws: out = x * 0), got " +
            show(p));
  }
  float keep_prob = static_cast<float>(1.0 - p);
  float bit = bernoulli_one(gen, 1.0 - p) ? 1.0f : 0.0f;
  return bit / keep_prob;
}

// ---- §7.1 Exponential and multinomial ---------------------------------------------------------

// Inverse CDF: if u is uniform in [0, 1), -log(1 - u) / lambda is exponential with rate lambda.
double exponential_one(Generator& gen, double lambda) {
  if (!(lambda >= 0.0)) invalid("exponential_one: lambda must be >= 0, got " + show(lambda));
  double u = unit_uniform_f64(gen);
  return (-1.0 / lambda) * std::log(1.0 - u);
}

namespace {

// multinomial's validity check on one row (no draws): entries finite and >= 0, some entry > 0.
// (A sum of non-negative numbers is > 0 exactly when some entry is, however it is rounded.)
template <typename T>
void check_multinomial_row(const char* function, const T* probs, int64_t n, int64_t row) {
  if (n <= 0) invalid(std::string(function) + ": a probability row needs at least one entry, got " +
                      std::to_string(n));
  bool any_positive = false;
  for (int64_t i = 0; i < n; ++i) {
    T p = probs[i];
    if (!std::isfinite(p) || p < 0) {
      invalid(std::string(function) +
              ": probability tensor contains either inf, nan or element < 0 (row " +
              std::to_string(row) + ", element " + std::to_string(i) + " is " +
              show(static_cast<double>(p)) + ")");
    }
    if (p > 0) any_positive = true;
  }
  if (!any_positive) {
    invalid(std::string(function) +
            ": invalid multinomial distribution (sum of probabilities <= 0) in row " +
            std::to_string(row));
  }
}

// The exponential (Gumbel) trick: with E_i ~ Exp(1) independent, argmax_i p_i / E_i is
// distributed as i with probability p_i / sum(p). E_i is rounded to T first (f32 for float
// probs), the division is in T, and the first maximum wins; a NaN ratio counts as the maximum.
template <typename T>
int64_t multinomial_row_unchecked(Generator& gen, const T* probs, int64_t n) {
  int64_t best = 0;
  T best_ratio = 0;
  bool best_is_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    T noise = static_cast<T>(exponential_one(gen, 1.0));
    T ratio = probs[i] / noise;
    if (best_is_nan) continue;  // keep drawing: every element costs two draws
    if (i == 0 || std::isnan(ratio) || ratio > best_ratio) {
      best = i;
      best_ratio = ratio;
      best_is_nan = std::isnan(ratio);
    }
  }
  return best;
}

}  // namespace

int64_t multinomial_row_f32(Generator& gen, const float* probs, int64_t n) {
  check_multinomial_row("multinomial", probs, n, 0);
  return multinomial_row_unchecked(gen, probs, n);
}

int64_t multinomial_row_f64(Generator& gen, const double* probs, int64_t n) {
  check_multinomial_row("multinomial", probs, n, 0);
  return multinomial_row_unchecked(gen, probs, n);
}

void multinomial_rows_f32(Generator& gen, int64_t* out, const float* probs, int64_t rows,
                          int64_t n) {
  for (int64_t r = 0; r < rows; ++r) check_multinomial_row("multinomial", probs + r * n, n, r);
  for (int64_t r = 0; r < rows; ++r) out[r] = multinomial_row_unchecked(gen, probs + r * n, n);
}

void multinomial_rows_f64(Generator& gen, int64_t* out, const double* probs, int64_t rows,
                          int64_t n) {
  for (int64_t r = 0; r < rows; ++r) check_multinomial_row("multinomial", probs + r * n, n, r);
  for (int64_t r = 0; r < rows; ++r) out[r] = multinomial_row_unchecked(gen, probs + r * n, n);
}

// ---- §8.1 nn.Linear initialisation ------------------------------------------------------------

double kaiming_uniform_bound(int64_t fan_in) {
  if (fan_in <= 0) {
    invalid("kaiming_uniform_bound: fan_in must be > 0, got " + std::to_string(fan_in));
  }
  double a = std::sqrt(5.0);
  double gain = std::sqrt(2.0 / (1.0 + a * a));  // Python's a**2 is the correctly rounded a*a
  double std_dev = gain / std::sqrt(static_cast<double>(fan_in));
  return std::sqrt(3.0) * std_dev;
}

double linear_bias_bound(int64_t fan_in) {
  if (fan_in < 0) invalid("linear_bias_bound: fan_in must be >= 0, got " + std::to_string(fan_in));
  if (fan_in == 0) return 0.0;
  return 1.0 / std::sqrt(static_cast<double>(fan_in));
}

}  // namespace tg::rng
