// autograd/kernels/softmax_kernels.cpp — the float32 row loops of softmax_kernels.h, each written
// once as an always-inline body and compiled for every instruction set by kernels::run_on.
// softmax_kernels.h gives the math, the lanes and the accuracy; the plain loops they are tested
// against are softmax_row_reference and its neighbours in autograd/ops/softmax.cpp.
#include "autograd/kernels/softmax_kernels.h"

#include <cmath>
#include <limits>

#include "autograd/kernels/isa.h"
#include "autograd/kernels/vec_math.h"

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

}  // namespace

double softmax_row(float* y, const float* x, int64_t n, Isa isa) {
  return kernels::run_on<softmax_row_body>(isa, y, x, n);
}

void log_softmax_row(float* y, const float* x, int64_t n, Isa isa) {
  kernels::run_on<log_softmax_row_body>(isa, y, x, n);
}

double logsumexp_row(float* e, const float* x, int64_t n, Isa isa) {
  return kernels::run_on<logsumexp_row_body>(isa, e, x, n);
}

void softmax_backward_row(float* dx, const float* g, const float* y, int64_t n, float divisor, Isa isa) {
  kernels::run_on<softmax_backward_row_body>(isa, dx, g, y, n, divisor);
}

void cross_entropy_backward_row(float* dx, const float* x, double lse, int64_t target, double scale, int64_t n,
                                Isa isa) {
  kernels::run_on<cross_entropy_backward_row_body>(isa, dx, x, lse, target, scale, n);
}

}  // namespace softmax_kernels

}  // namespace tg
