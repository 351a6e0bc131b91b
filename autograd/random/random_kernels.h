// autograd/random/random_kernels.h — PyTorch 1.13's CPU random algorithms on raw numbers and buffers.
//
// Each function turns Generator draws into values exactly as PyTorch does on an x86-64 CPU with
// AVX2 and FMA (the "AVX2 variant", which AVX-512 CPUs also give; checked bit for bit against
// torch 1.13 by tests/autograd/test_random_*.cpp). There is no tensor type here: the tensor
// layer calls these once per element, or once per contiguous buffer, in the order below.
//
// Section marks (§) used in the comments of the random-number files:
//   §1 the mt19937 engine and its seeding     §6 bernoulli_ and dropout
//   §2 unit uniforms U24 and U53              §7 multinomial, exponential_, randperm
//   §3 rand / uniform_                        §8 module initialisation (Linear, Embedding)
//   §4 randn / normal_ and its three paths    §9 which results depend on glibc's libm
//   §5 randint / random_                      §10 element order, and draws per call
//
// Read the table "which function a tensor op uses", below, first.
#pragma once
#include <cstdint>

#include "autograd/random/generator.h"

namespace tg::rng {

// ---- Which function a tensor op uses ------------------------------------------------------------

// n = numel; "memory order" = increasing address, which for a contiguous tensor is row-major
// order (§10):
//
//   op                                   path                          function(s), per element
//   ----------------------------------   ---------------------------   --------------------------
//   rand / uniform_(a, b)      float32   always                        uniform_params_f32 once,
//                                                                      then uniform_f32, memory order
//   rand / uniform_(a, b)      float64   always                        uniform_params_f64, uniform_f64
//   randn / normal_(mean, std) float32   n >= 16 and contiguous        normal_fill_f32 (whole buffer)
//   randn / normal_(mean, std) float64   n >= 16 and contiguous        normal_fill_f64 (whole buffer)
//   randn / normal_(mean, std) any       n < 16 or not contiguous      normal_scale(normal_scalar(g),
//                                                                      mean, std), cast to the dtype
//                                                                      (normal_uses_block_path decides)
//   randint(low, high) / random_         int64                         randint_one, memory order
//   randperm(n)                          int64                         randperm_fill
//   bernoulli_(p), scalar p              any                           bernoulli_one(p) -> 1 or 0
//   dropout(x, p), train, 0 < p < 1      float32                       noise = dropout_noise_one(g, p)
//                                                                      in memory order of a new
//                                                                      contiguous tensor; out = x * noise
//   dropout, p == 0 or eval / p == 1     float32                       no draws: x / x * 0.0f
//   exponential_(lambda)                 float32                       float(exponential_one), memory order
//   exponential_(lambda)                 float64                       exponential_one
//   multinomial(probs, 1)                float32 / float64 probs       multinomial_rows_f32 / _f64
//   nn.Linear(in, out) init              float32                       weight: uniform_ with bound
//                                                                      kaiming_uniform_bound(in), then
//                                                                      bias: linear_bias_bound(in)
//   nn.Embedding(N, d) init              float32                       randn of N*d elements

// ---- §2 Unit uniforms -------------------------------------------------------------------------

// U24: the low 24 bits of one draw, times 2^-24. An exact float in [0, 1).
float unit_uniform_f32(Generator& gen);
// U53: the low 53 bits of random64(), times 2^-53. An exact double in [0, 1). Two draws.
double unit_uniform_f64(Generator& gen);

// ---- §3 rand / uniform_ -----------------------------------------------------------------------

// The (lo, range) pair a uniform_(a, b) kernel works with.
struct UniformF32 {
  float lo;
  float range;
};
struct UniformF64 {
  double lo;
  double range;
};
// float32: lo = f32(a), hi = f32(b), range = hi - lo in float32. Throws if a > b or the range
// overflows.
UniformF32 uniform_params_f32(double a, double b);
// float64: lo = a, range = b - a. Throws if a > b or the range overflows.
UniformF64 uniform_params_f64(double a, double b);
// One value: fma(U24, range, lo) in float32 (one rounding). rand() is lo = 0, range = 1.
float uniform_f32(Generator& gen, float lo, float range);
// One value: fma(U53, range, lo) in double.
double uniform_f64(Generator& gen, double lo, double range);

// ---- §4 randn / normal_ -----------------------------------------------------------------------

// Smallest contiguous size that takes the 16-wide block path.
inline constexpr int64_t kNormalBlockSize = 16;
// True when normal_ on n elements uses normal_fill_f32 / normal_fill_f64 (§4.1).
bool normal_uses_block_path(int64_t n, bool contiguous);
// One unscaled standard normal from the scalar path: the cached value if there is one,
// otherwise a fresh Box-Muller pair (cos returned, sin cached). 0 or 4 draws.
double normal_scalar(Generator& gen);
// The scale step of the scalar path: fma(z, std, mean) in double. Cast to float after, for a
// float32 tensor.
double normal_scale(double z, double mean, double std);
// The float32 block path (§4.4): fills data[0..n) in place. Needs n >= 16 and a contiguous
// buffer. Neither reads nor writes the generator's cached normal.
void normal_fill_f32(Generator& gen, float* data, int64_t n, double mean, double std);
// The float64 block path (§4.3), same rules.
void normal_fill_f64(Generator& gen, double* data, int64_t n, double mean, double std);

// ---- §5, §7.2 Integers ------------------------------------------------------------------------

// One value of randint(low, high): (v mod (high - low)) + low, with v one draw when the range
// is below 2^32 and random64() otherwise. Throws unless low < high.
int64_t randint_one(Generator& gen, int64_t low, int64_t high);
// out[0..n) = randperm(n): a forward Fisher-Yates shuffle of 0..n-1 with n - 1 draws.
void randperm_fill(Generator& gen, int64_t* out, int64_t n);

// ---- §6 Bernoulli and dropout -----------------------------------------------------------------

// One bernoulli_(p) value: U53 < p (two draws). Throws unless 0 <= p <= 1.
bool bernoulli_one(Generator& gen, double p);
// The value kept elements are multiplied by: 1.0f / f32(1 - p), a float32 division (which is
// not always f32(1 / (1 - p))). Throws unless 0 <= p < 1.
float dropout_scale(double p);
// One element of dropout's noise tensor for 0 <= p < 1: dropout_scale(p) with probability
// 1 - p (bernoulli_one(1 - p)), else 0.0f. The output element is x * noise (float32 multiply).
float dropout_noise_one(Generator& gen, double p);

// ---- §7.1 Exponential and multinomial ---------------------------------------------------------

// One exponential_(lambda) value: (-1.0 / lambda) * log(1.0 - U53), in double. Throws if
// lambda < 0 or NaN (lambda = 0 gives +inf, as in torch).
double exponential_one(Generator& gen, double lambda);
// One sample of multinomial(probs, 1) for a row probs[0..n): the index of the largest
// probs[i] / f32(exponential_one(1)), first index on ties. 2n draws. Checks the row first
// and throws tg::Error (no draws) on inf, nan, negative entries or a zero sum.
int64_t multinomial_row_f32(Generator& gen, const float* probs, int64_t n);
int64_t multinomial_row_f64(Generator& gen, const double* probs, int64_t n);
// A whole [rows, n] probability matrix (row-major): checks every row before any draw, as torch
// does, then out[r] = multinomial_row(probs + r*n).
void multinomial_rows_f32(Generator& gen, int64_t* out, const float* probs, int64_t rows,
                          int64_t n);
void multinomial_rows_f64(Generator& gen, int64_t* out, const double* probs, int64_t rows,
                          int64_t n);

// ---- §8.1 nn.Linear initialisation ------------------------------------------------------------

// kaiming_uniform_(weight, a = sqrt(5)) bound, in PyTorch's exact order of double operations:
// gain = sqrt(2 / (1 + a*a)), std = gain / sqrt(fan_in), bound = sqrt(3) * std. The weight is
// then uniform_(-bound, bound). Throws unless fan_in > 0 (a zero-element weight draws nothing).
double kaiming_uniform_bound(int64_t fan_in);
// The bias bound 1 / sqrt(fan_in), or 0 when fan_in == 0. Throws if fan_in < 0.
double linear_bias_bound(int64_t fan_in);

}  // namespace tg::rng
