// autograd/kernels/softmax_kernels.cpp — the float32 row loops of softmax_kernels.h, each written
// once as an always-inline body and compiled for every instruction set by kernels::run_on.
// softmax_kernels.h gives the math, the lanes and the accuracy; the plain loops they are tested
// against are softmax_row_reference and its neighbours in autograd/ops/softmax.cpp.
#include "autograd/kernels/softmax_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/kernels/isa.h"
#include "autograd/kernels/vec_math.h"

#if TG_X86_KERNELS  // the AVX-512 rows (isa.h)
#include <immintrin.h>
#endif

namespace tg {
namespace softmax_kernels {
namespace {

// --- the row loops, written once (always inlined), compiled twice below ------------------------

constexpr int kLanes = 16;

// The lanes' total: lane k + 8 added to lane k, then k + 4, k + 2, k + 1. (Written out: as a
// loop over the widths, the compiler kept the lanes in memory, and every row paid for it.)
[[gnu::always_inline]] inline double lanes_total(double (&lane)[kLanes]) {
  static_assert(kLanes == 16);
  for (int k = 0; k < 8; ++k) lane[k] += lane[k + 8];
  for (int k = 0; k < 4; ++k) lane[k] += lane[k + 4];
  for (int k = 0; k < 2; ++k) lane[k] += lane[k + 2];
  return lane[0] + lane[1];
}

// sum_j term(j) over j in [0, n), term j in lane j % 16 (the header says why).
template <class Term>
[[gnu::always_inline]] inline double lane_sum(int64_t n, Term term) {
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) lane[k] += term(j + k);
  for (int k = 0; j + k < n; ++k) lane[k] += term(j + k);
  return lanes_total(lane);
}

// The largest of x (n), -inf if none: x_j > m ? x_j : m in 16 running maxima. (Only the sign of
// a zero maximum depends on the order, and x - (+0) and x - (-0) have the same exp.)
[[gnu::always_inline]] inline float row_max(const float* x, int64_t n) {
  float lane[kLanes];
  for (float& m : lane) m = -std::numeric_limits<float>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) lane[k] = x[j + k] > lane[k] ? x[j + k] : lane[k];
  for (int k = 0; j + k < n; ++k) lane[k] = x[j + k] > lane[k] ? x[j + k] : lane[k];
  for (int k = 1; k < kLanes; ++k) lane[0] = lane[k] > lane[0] ? lane[k] : lane[0];
  return lane[0];
}

// e (n) = exp(x - m), returning sum_j e_j. e may be x. The sum has a loop of its own: the two
// loops vectorise better apart.
[[gnu::always_inline]] inline double exp_shifted_sum(float* e, const float* x, float m, int64_t n) {
  for (int64_t j = 0; j < n; ++j) e[j] = vec_math::exp(x[j] - m);
  return lane_sum(n, [e](int64_t j) { return static_cast<double>(e[j]); });
}

[[gnu::always_inline]] inline double softmax_row_body(float* y, const float* x, int64_t n) {
  const double inv = 1.0 / exp_shifted_sum(y, x, row_max(x, n), n);
  for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(static_cast<double>(y[j]) * inv);
  return inv;
}

[[gnu::always_inline]] inline void divide_row_body(float* y, const float* x, int64_t n, float divisor) {
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] / divisor;
}

[[gnu::always_inline]] inline double logsumexp_row_body(float* e, const float* x, int64_t n) {
  const float m = row_max(x, n);
  return static_cast<double>(m) + std::log(exp_shifted_sum(e, x, m, n));
}

[[gnu::always_inline]] inline void log_softmax_row_body(float* y, const float* x, int64_t n) {
  const double lse = logsumexp_row_body(y, x, n);
  for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(static_cast<double>(x[j]) - lse);
}

[[gnu::always_inline]] inline void softmax_backward_row_body(float* dx, const float* g, const float* y, int64_t n,
                                                             float divisor) {
  // the product of two floats is exact in double: only the sum rounds
  const double s = lane_sum(n, [g, y](int64_t j) { return static_cast<double>(g[j]) * static_cast<double>(y[j]); });
  if (divisor == 1.0f) {  // x / 1 is x: the division skipped, the same bits
    for (int64_t j = 0; j < n; ++j) {
      dx[j] = static_cast<float>(static_cast<double>(y[j]) * (static_cast<double>(g[j]) - s));
    }
  } else {
    for (int64_t j = 0; j < n; ++j) {
      dx[j] = static_cast<float>(static_cast<double>(y[j]) * (static_cast<double>(g[j]) - s)) / divisor;
    }
  }
}

[[gnu::always_inline]] inline void cross_entropy_backward_row_body(float* dx, const float* x, double lse,
                                                                   int64_t target, double scale, int64_t n) {
  // exp(x_j - lse) = exp(x_j - m) exp(m - lse): the first in float, vectorised, as the forward's
  const float m = row_max(x, n);
  const double inv = std::exp(static_cast<double>(m) - lse);  // 1/s
  for (int64_t j = 0; j < n; ++j) {
    dx[j] = static_cast<float>(static_cast<double>(vec_math::exp(x[j] - m)) * inv * scale);
  }
  if (target >= 0 && target < n) {
    const double p = static_cast<double>(vec_math::exp(x[target] - m)) * inv;
    dx[target] = static_cast<float>((p - 1.0) * scale);
  }
}

#if TG_X86_KERNELS

// --- the softmax rows on AVX-512, their last n % 16 keys one masked step ----------------------
// softmax_row_body leaves a row's last n % 16 entries to scalar code, each exp the whole
// polynomial: on attention's causal rows (1 to T keys) that was a third of the row's time (n = 63
// took 25% longer than n = 64). Here every step is 16 lanes, the last one masked: lanes past n
// read -inf for the maximum, and their exps are neither stored nor summed (a masked add leaves a
// lane as it was). The same operations in the same order as vec_math::exp and softmax_row_body,
// lane for lane, so the same bits as the other copies (tests/autograd/test_softmax_kernels.cpp).

// GCC 12's AVX-512 intrinsics start from an "undefined" register they never read, and -Wall warns
// that it may be uninitialized once they are inlined (as in bf16_gemm.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512 splat(float v) { return _mm512_set1_ps(v); }

// c ? a : b in each lane.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512 select(__mmask16 c, __m512 a, __m512 b) {
  return _mm512_mask_blend_ps(c, b, a);
}

// 2^n for n in [-126, 127] in each lane (vec_math::pow2).
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512 pow2(__m512i n) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
}

// vec_math::exp on 16 lanes, step for step.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512 exp16(__m512 x) {
  using namespace vec_math;
  const __m512 above_min = select(_mm512_cmp_ps_mask(x, splat(kExpLowest), _CMP_LT_OQ), splat(kExpLowest), x);
  const __m512 clamped =
      select(_mm512_cmp_ps_mask(above_min, splat(kExpHighest), _CMP_GT_OQ), splat(kExpHighest), above_min);
  // split_ln2
  const __m512 shifted = _mm512_add_ps(_mm512_mul_ps(clamped, splat(kLog2e)), splat(kRoundingShift));
  const __m512 n = _mm512_sub_ps(shifted, splat(kRoundingShift));
  const __m512i n_int = _mm512_sub_epi32(_mm512_castps_si512(shifted), _mm512_set1_epi32(static_cast<int>(
                                                                             bits_of(kRoundingShift))));
  const __m512 r =
      _mm512_sub_ps(_mm512_sub_ps(clamped, _mm512_mul_ps(n, splat(kLn2Hi))), _mm512_mul_ps(n, splat(kLn2Lo)));
  // expm1_reduced
  __m512 q = splat(kExpm1Coefficients[0]);
  for (int i = 1; i < 6; ++i) q = _mm512_add_ps(_mm512_mul_ps(q, r), splat(kExpm1Coefficients[i]));
  const __m512 expm1 = _mm512_add_ps(r, _mm512_mul_ps(_mm512_mul_ps(r, r), q));
  const __m512 e_r = _mm512_add_ps(splat(1.0f), expm1);
  const __m512i n_half = _mm512_srai_epi32(n_int, 1);
  return _mm512_mul_ps(_mm512_mul_ps(e_r, pow2(n_half)), pow2(_mm512_sub_epi32(n_int, n_half)));
}

// lanes 0-7 and 8-15 of 16 floats, each widened to 8 doubles.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512d low_doubles(__m512 v) {
  return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512d high_doubles(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// lanes_total of 16 double lanes, lanes 0-7 in low and 8-15 in high: lane k + 8 added to lane k,
// then k + 4, k + 2, k + 1.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline double lanes_total(__m512d low, __m512d high) {
  const __m512d sum8 = _mm512_add_pd(low, high);
  const __m256d sum4 = _mm256_add_pd(_mm512_castpd512_pd256(sum8), _mm512_extractf64x4_pd(sum8, 1));
  const __m128d sum2 = _mm_add_pd(_mm256_castpd256_pd128(sum4), _mm256_extractf128_pd(sum4, 1));
  return _mm_cvtsd_f64(sum2) + _mm_cvtsd_f64(_mm_unpackhi_pd(sum2, sum2));
}

// float(double(e) * s) in each lane.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512 times_in_double(__m512 e, __m512d s) {
  const __m256 low = _mm512_cvtpd_ps(_mm512_mul_pd(low_doubles(e), s));
  const __m256 high = _mm512_cvtpd_ps(_mm512_mul_pd(high_doubles(e), s));
  return _mm512_insertf32x8(_mm512_castps256_ps512(low), high, 1);
}

// The lanes of a row of n's last, partial step of 16 (none when n is a multiple of 16).
__mmask16 last_step_lanes(int64_t n) { return static_cast<__mmask16>((1u << (n % kLanes)) - 1); }

// softmax_row on AVX-512 in its three passes over the row, each its own function so that
// softmax_rows_avx512 can run each pass over several rows in turn.
// 1. m: x_j > m ? x_j : m in 16 running maxima (row_max), then the lanes' maximum as a tree (four
//    steps, not fifteen in a chain): a different order can only change the sign of a zero maximum,
//    and x - (+0) and x - (-0) have the same exp.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline float row_max_avx512(const float* x, int64_t n) {
  const int64_t whole = n - n % kLanes;
  const __mmask16 tail = last_step_lanes(n);
  const __m512 neg_inf = splat(-std::numeric_limits<float>::infinity());
  __m512 max16 = neg_inf;
  for (int64_t j = 0; j < whole; j += kLanes) {
    const __m512 v = _mm512_loadu_ps(x + j);
    max16 = select(_mm512_cmp_ps_mask(v, max16, _CMP_GT_OQ), v, max16);
  }
  if (tail) {
    const __m512 v = _mm512_mask_loadu_ps(neg_inf, tail, x + whole);
    max16 = select(_mm512_cmp_ps_mask(v, max16, _CMP_GT_OQ), v, max16);
  }
  return _mm512_reduce_max_ps(max16);
}

// 2. e = exp(x - m) into y, summed in 16 double lanes: lanes 0-7 and 8-15 (exp_shifted_sum);
//    returns 1/s.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline double exp_into_avx512(float* y, const float* x,
                                                                                       int64_t n, float max) {
  const int64_t whole = n - n % kLanes;
  const __mmask16 tail = last_step_lanes(n);
  const __m512 m = splat(max);
  __m512d low = _mm512_setzero_pd(), high = _mm512_setzero_pd();
  for (int64_t j = 0; j < whole; j += kLanes) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), m));
    _mm512_storeu_ps(y + j, e);
    low = _mm512_add_pd(low, low_doubles(e));
    high = _mm512_add_pd(high, high_doubles(e));
  }
  if (tail) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + whole), m));
    _mm512_mask_storeu_ps(y + whole, tail, e);
    low = _mm512_mask_add_pd(low, static_cast<__mmask8>(tail), low, low_doubles(e));
    high = _mm512_mask_add_pd(high, static_cast<__mmask8>(tail >> 8), high, high_doubles(e));
  }
  return 1.0 / lanes_total(low, high);
}

// 3. y = float(double(e) * (1/s)).
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline void scale_avx512(float* y, int64_t n, double inv) {
  const int64_t whole = n - n % kLanes;
  const __mmask16 tail = last_step_lanes(n);
  const __m512d inv8 = _mm512_set1_pd(inv);
  for (int64_t j = 0; j < whole; j += kLanes) _mm512_storeu_ps(y + j, times_in_double(_mm512_loadu_ps(y + j), inv8));
  if (tail) _mm512_mask_storeu_ps(y + whole, tail, times_in_double(_mm512_maskz_loadu_ps(tail, y + whole), inv8));
}

[[gnu::target("avx512f,avx512dq")]] double softmax_row_avx512(float* y, const float* x, int64_t n) {
  const double inv = exp_into_avx512(y, x, n, row_max_avx512(x, n));
  scale_avx512(y, n, inv);
  return inv;
}

// Rows of a few dozen keys spend most of their time waiting: each pass needs the last one's
// result (the maximum, then the sum), and a row is a chain of about 190 cycles. Rows do not
// depend on each other, so doing each pass for kRowsAtOnce rows before the next pass gives the
// CPU independent work to overlap. Each row is computed exactly as softmax_row_avx512 computes it.
constexpr int64_t kRowsAtOnce = 4;

[[gnu::target("avx512f,avx512dq")]] void softmax_rows_avx512(double* inv, float* y, int64_t y_stride, const float* x,
                                                            int64_t x_stride, const int64_t* lengths, int64_t rows) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRowsAtOnce) {
    const int64_t count = std::min(kRowsAtOnce, rows - r0);
    float max[kRowsAtOnce];
    for (int64_t r = 0; r < count; ++r) max[r] = row_max_avx512(x + (r0 + r) * x_stride, lengths[r0 + r]);
    for (int64_t r = 0; r < count; ++r)
      inv[r0 + r] = exp_into_avx512(y + (r0 + r) * y_stride, x + (r0 + r) * x_stride, lengths[r0 + r], max[r]);
    for (int64_t r = 0; r < count; ++r) scale_avx512(y + (r0 + r) * y_stride, lengths[r0 + r], inv[r0 + r]);
  }
}

// softmax_backward_row_body on AVX-512, the same way: s = sum of double(g) double(y) in 16 double
// lanes (the last step's lanes past n left as they are), then dx = float(y (g - s)) / divisor.
[[gnu::target("avx512f,avx512dq"), gnu::always_inline]] inline __m512 backward16(__m512 g, __m512 y, __m512d s,
                                                                                  float divisor) {
  const __m256 low = _mm512_cvtpd_ps(_mm512_mul_pd(low_doubles(y), _mm512_sub_pd(low_doubles(g), s)));
  const __m256 high = _mm512_cvtpd_ps(_mm512_mul_pd(high_doubles(y), _mm512_sub_pd(high_doubles(g), s)));
  const __m512 dx = _mm512_insertf32x8(_mm512_castps256_ps512(low), high, 1);
  return divisor == 1.0f ? dx : _mm512_div_ps(dx, splat(divisor));  // x / 1 is x: the same bits
}

[[gnu::target("avx512f,avx512dq")]] void softmax_backward_row_avx512(float* dx, const float* g, const float* y,
                                                                    int64_t n, float divisor) {
  const int64_t whole = n - n % kLanes;
  const __mmask16 tail = last_step_lanes(n);
  __m512d low = _mm512_setzero_pd(), high = _mm512_setzero_pd();
  for (int64_t j = 0; j < whole; j += kLanes) {
    const __m512 gj = _mm512_loadu_ps(g + j), yj = _mm512_loadu_ps(y + j);
    low = _mm512_add_pd(low, _mm512_mul_pd(low_doubles(gj), low_doubles(yj)));
    high = _mm512_add_pd(high, _mm512_mul_pd(high_doubles(gj), high_doubles(yj)));
  }
  // the last step's g and y (zeros past n), read once for the sum and for dx
  __m512 g_tail = _mm512_setzero_ps(), y_tail = _mm512_setzero_ps();
  if (tail) {
    g_tail = _mm512_maskz_loadu_ps(tail, g + whole);
    y_tail = _mm512_maskz_loadu_ps(tail, y + whole);
    low = _mm512_mask_add_pd(low, static_cast<__mmask8>(tail), low,
                             _mm512_mul_pd(low_doubles(g_tail), low_doubles(y_tail)));
    high = _mm512_mask_add_pd(high, static_cast<__mmask8>(tail >> 8), high,
                              _mm512_mul_pd(high_doubles(g_tail), high_doubles(y_tail)));
  }
  const __m512d s = _mm512_set1_pd(lanes_total(low, high));
  for (int64_t j = 0; j < whole; j += kLanes)
    _mm512_storeu_ps(dx + j, backward16(_mm512_loadu_ps(g + j), _mm512_loadu_ps(y + j), s, divisor));
  if (tail) _mm512_mask_storeu_ps(dx + whole, tail, backward16(g_tail, y_tail, s, divisor));
}

#pragma GCC diagnostic pop

#endif  // TG_X86_KERNELS

}  // namespace

void divide_row(float* y, const float* x, int64_t n, float divisor, Isa isa) {
  kernels::run_on<divide_row_body>(isa, y, x, n, divisor);
}

double softmax_row(float* y, const float* x, int64_t n, Isa isa) {
#if TG_X86_KERNELS
  if (isa == Isa::kAvx512) return softmax_row_avx512(y, x, n);
#endif
  return kernels::run_on<softmax_row_body>(isa, y, x, n);
}

void softmax_rows(double* inv, float* y, int64_t y_stride, const float* x, int64_t x_stride, const int64_t* lengths,
                  int64_t rows, Isa isa) {
#if TG_X86_KERNELS
  if (isa == Isa::kAvx512) return softmax_rows_avx512(inv, y, y_stride, x, x_stride, lengths, rows);
#endif
  for (int64_t r = 0; r < rows; ++r) inv[r] = softmax_row(y + r * y_stride, x + r * x_stride, lengths[r], isa);
}

void log_softmax_row(float* y, const float* x, int64_t n, Isa isa) {
  kernels::run_on<log_softmax_row_body>(isa, y, x, n);
}

double logsumexp_row(float* e, const float* x, int64_t n, Isa isa) {
  return kernels::run_on<logsumexp_row_body>(isa, e, x, n);
}

void softmax_backward_row(float* dx, const float* g, const float* y, int64_t n, float divisor, Isa isa) {
#if TG_X86_KERNELS
  if (isa == Isa::kAvx512) return softmax_backward_row_avx512(dx, g, y, n, divisor);
#endif
  kernels::run_on<softmax_backward_row_body>(isa, dx, g, y, n, divisor);
}

void cross_entropy_backward_row(float* dx, const float* x, double lse, int64_t target, double scale, int64_t n,
                                Isa isa) {
  kernels::run_on<cross_entropy_backward_row_body>(isa, dx, x, lse, target, scale, n);
}

}  // namespace softmax_kernels

}  // namespace tg
