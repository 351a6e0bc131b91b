// autograd/ops/softmax.cpp — softmax and log_softmax along one dim, numerically stable.
//
//   softmax      forward   y_i = exp(x_i - m) / s,     m = max_j x_j,  s = sum_j exp(x_j - m)
//                backward  dx  = y * (g - sum_j g_j y_j)
//   log_softmax  forward   y_i = x_i - m - log(s)
//                backward  dx  = g - exp(y) * sum_j g_j
// (sums along dim). Saved for backward: the output y only, not the input.
//
// A tensor is seen as x (B,N,I) with the dim of size N in the middle: B = product of the sizes
// before dim, I = product of those after. When dim is the last one (I == 1) each row of N is
// one contiguous pass, in both directions; otherwise the kernel walks the I columns of a (N,I)
// block side by side.
// float32 is computed in float with the row sums in double, so results match PyTorch to ~1e-6.
// Along the last dim a float32 tensor runs softmax_kernels.h's rows (a vectorised exp, the sums
// in fixed lanes; log_softmax's backward excepted), the rows split over the threads; the loops
// here are float64's path, the other dims', and the twins those rows are tested against.
//
// -inf entries (masked attention) give exp(-inf) = 0: they get probability 0 (log-prob -inf).
// A row of all -inf has m = -inf and x - m = NaN, so the whole row is NaN, as in PyTorch.
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_kernels.h"
#include "autograd/kernels/softmax_kernels.h"
#include "autograd/kernels/vec_math.h"
#include "autograd/runtime/parallel.h"
#include "autograd/record.h"

namespace tg {
namespace nn_kernels {

// --- fused kernels ------------------------------------------------------------------------------

// y (n) = softmax(x (n)), one contiguous row of softmax_forward below, returning 1/s. y may be x.
template <class T>
double softmax_row_plain(T* y, const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  double s = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const T e = std::exp(x[j] - m);
    y[j] = e;
    s += static_cast<double>(e);
  }
  const double inv = 1.0 / s;
  for (int64_t j = 0; j < n; ++j) y[j] = static_cast<T>(static_cast<double>(y[j]) * inv);
  return inv;
}

// out (B,N,I) = softmax (or log_softmax when log_space) over N of inp (B,N,I); both contiguous.
template <class T>
void softmax_forward(T* out, const T* inp, int64_t B, int64_t N, int64_t I, bool log_space) {
  if (I == 1) {
    for (int64_t b = 0; b < B; ++b) {
      const T* x = inp + b * N;  // x (N)
      T* y = out + b * N;        // y (N)
      if (!log_space) {
        softmax_row_plain(y, x, N);
        continue;
      }
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t n = 0; n < N; ++n) m = x[n] > m ? x[n] : m;
      double s = 0.0;
      for (int64_t n = 0; n < N; ++n) s += static_cast<double>(std::exp(x[n] - m));
      const double lse = static_cast<double>(m) + std::log(s);
      for (int64_t n = 0; n < N; ++n) y[n] = static_cast<T>(static_cast<double>(x[n]) - lse);
    }
    return;
  }
  std::vector<T> m(static_cast<size_t>(I));       // m (I): column maxima of one (N,I) block
  std::vector<double> s(static_cast<size_t>(I));  // s (I): column sums of exp(x - m)
  for (int64_t b = 0; b < B; ++b) {
    const T* x = inp + b * N * I;  // x (N,I)
    T* y = out + b * N * I;        // y (N,I)
    std::fill(m.begin(), m.end(), -std::numeric_limits<T>::infinity());
    std::fill(s.begin(), s.end(), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < I; ++i) m[i] = x[n * I + i] > m[i] ? x[n * I + i] : m[i];
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < I; ++i) {
        const T e = std::exp(x[n * I + i] - m[i]);
        if (!log_space) y[n * I + i] = e;
        s[i] += static_cast<double>(e);
      }
    }
    if (log_space) {
      for (int64_t i = 0; i < I; ++i) s[i] = static_cast<double>(m[i]) + std::log(s[i]);  // now lse
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < I; ++i) y[n * I + i] = static_cast<T>(static_cast<double>(x[n * I + i]) - s[i]);
    } else {
      for (int64_t i = 0; i < I; ++i) s[i] = 1.0 / s[i];  // now 1/s
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < I; ++i) y[n * I + i] = static_cast<T>(static_cast<double>(y[n * I + i]) * s[i]);
    }
  }
}

// dx (n) = y (g - sum_k g_k y_k) / divisor for the gradient g (n) of the output y (n), one
// contiguous row of softmax_backward below (divisor 1). dx may be g or y.
template <class T>
void softmax_backward_row_plain(T* dx, const T* g, const T* y, int64_t n, T divisor) {
  double s = 0.0;
  for (int64_t j = 0; j < n; ++j) s += static_cast<double>(g[j]) * static_cast<double>(y[j]);
  for (int64_t j = 0; j < n; ++j) {
    dx[j] = static_cast<T>(static_cast<double>(y[j]) * (static_cast<double>(g[j]) - s)) / divisor;
  }
}

// dinp (B,N,I) from dout (B,N,I) and the forward's out (B,N,I); all contiguous.
//   softmax:     dinp = out * (dout - sum_N dout*out)
//   log_softmax: dinp = dout - exp(out) * sum_N dout
template <class T>
void softmax_backward(T* dinp, const T* dout, const T* out, int64_t B, int64_t N, int64_t I, bool log_space) {
  if (I == 1) {  // one contiguous row of N each: the loop below's sums and products, in its order
    for (int64_t b = 0; b < B; ++b) {
      const T* g = dout + b * N;  // g (N)
      const T* y = out + b * N;   // y (N)
      T* dx = dinp + b * N;       // dx (N)
      if (!log_space) {
        softmax_backward_row_plain(dx, g, y, N, T(1));
        continue;
      }
      double s = 0.0;
      for (int64_t n = 0; n < N; ++n) s += static_cast<double>(g[n]);
      for (int64_t n = 0; n < N; ++n)
        dx[n] = static_cast<T>(static_cast<double>(g[n]) - std::exp(static_cast<double>(y[n])) * s);
    }
    return;
  }
  std::vector<double> s(static_cast<size_t>(I));  // s (I): the sum along N for each column
  for (int64_t b = 0; b < B; ++b) {
    const T* g = dout + b * N * I;  // g (N,I)
    const T* y = out + b * N * I;   // y (N,I)
    T* dx = dinp + b * N * I;       // dx (N,I)
    std::fill(s.begin(), s.end(), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < I; ++i)
        s[i] += log_space ? static_cast<double>(g[n * I + i])
                          : static_cast<double>(g[n * I + i]) * static_cast<double>(y[n * I + i]);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < I; ++i) {
        const int64_t k = n * I + i;
        if (log_space) {
          dx[k] = static_cast<T>(static_cast<double>(g[k]) - std::exp(static_cast<double>(y[k])) * s[i]);
        } else {
          dx[k] = static_cast<T>(static_cast<double>(y[k]) * (static_cast<double>(g[k]) - s[i]));
        }
      }
    }
  }
}

// --- naive twins (the test oracle): one (b, i) column at a time, everything in double ----------

// out (B,N,I) = softmax / log_softmax over N of inp (B,N,I).
template <class T>
void softmax_forward_naive(T* out, const T* inp, int64_t B, int64_t N, int64_t I, bool log_space) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < I; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t n = 0; n < N; ++n) m = std::max(m, static_cast<double>(inp[(b * N + n) * I + i]));
      double s = 0.0;
      for (int64_t n = 0; n < N; ++n) s += std::exp(static_cast<double>(inp[(b * N + n) * I + i]) - m);
      for (int64_t n = 0; n < N; ++n) {
        const double x = static_cast<double>(inp[(b * N + n) * I + i]);
        out[(b * N + n) * I + i] = static_cast<T>(log_space ? x - m - std::log(s) : std::exp(x - m) / s);
      }
    }
  }
}

// dinp (B,N,I) from dout (B,N,I) and out (B,N,I).
template <class T>
void softmax_backward_naive(T* dinp, const T* dout, const T* out, int64_t B, int64_t N, int64_t I,
                            bool log_space) {
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < I; ++i) {
      double s = 0.0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t k = (b * N + n) * I + i;
        s += log_space ? static_cast<double>(dout[k]) : static_cast<double>(dout[k]) * static_cast<double>(out[k]);
      }
      for (int64_t n = 0; n < N; ++n) {
        const int64_t k = (b * N + n) * I + i;
        const double g = dout[k], y = out[k];
        dinp[k] = static_cast<T>(log_space ? g - std::exp(y) * s : y * (g - s));
      }
    }
  }
}

template double softmax_row_plain<float>(float*, const float*, int64_t);
template double softmax_row_plain<double>(double*, const double*, int64_t);
template void softmax_backward_row_plain<float>(float*, const float*, const float*, int64_t, float);
template void softmax_backward_row_plain<double>(double*, const double*, const double*, int64_t, double);
template void softmax_forward<float>(float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_forward<double>(double*, const double*, int64_t, int64_t, int64_t, bool);
template void softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t, int64_t, bool);
template void softmax_forward_naive<float>(float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_forward_naive<double>(double*, const double*, int64_t, int64_t, int64_t, bool);
template void softmax_backward_naive<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_backward_naive<double>(double*, const double*, const double*, int64_t, int64_t, int64_t,
                                             bool);

}  // namespace nn_kernels

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

// body(args...) compiled for baseline x86-64 (SSE2) and for AVX2: the body and everything it
// calls is inlined into each copy.
template <auto body, class... Args>
auto on_baseline(Args... args) {
  return body(args...);
}
template <auto body, class... Args>
[[gnu::target("avx2")]] auto on_avx2(Args... args) {
  return body(args...);
}
template <auto body, class... Args>
auto on(Isa isa, Args... args) {
  return isa == Isa::kAvx2 ? on_avx2<body>(args...) : on_baseline<body>(args...);
}

}  // namespace

double softmax_row(float* y, const float* x, int64_t n, Isa isa) { return on<softmax_row_body>(isa, y, x, n); }

void log_softmax_row(float* y, const float* x, int64_t n, Isa isa) { on<log_softmax_row_body>(isa, y, x, n); }

double logsumexp_row(float* e, const float* x, int64_t n, Isa isa) { return on<logsumexp_row_body>(isa, e, x, n); }

void softmax_backward_row(float* dx, const float* g, const float* y, int64_t n, float divisor, Isa isa) {
  on<softmax_backward_row_body>(isa, dx, g, y, n, divisor);
}

void cross_entropy_backward_row(float* dx, const float* x, double lse, int64_t target, double scale, int64_t n,
                                Isa isa) {
  on<cross_entropy_backward_row_body>(isa, dx, x, lse, target, scale, n);
}

}  // namespace softmax_kernels

namespace {

// The float32 path: dim is the last one (I == 1) of a float32 tensor.
bool fast_rows(ScalarType dtype, const DimSplit& r) { return dtype == kFloat32 && r.I == 1; }

// f(r) for each row r of R, the rows split over the threads.
template <class F>
void for_rows(int64_t R, int64_t N, F f) {
  parallel_for(0, R, softmax_kernels::rows_per_chunk(N), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) f(r);
  });
}

// dx (B,N,I) for g (B,N,I) and the saved output y (B,N,I). log_softmax keeps the plain loop in
// float32 too: it takes exp of y in double, where a float exp's 1 ulp of exp(y) * sum_N g
// would show in a dx that cancels to near 0.
Tensor softmax_grad(const Tensor& g, const Tensor& y, int64_t dim, bool log_space) {
  const DimSplit r = split_at_dim(y.sizes(), dim);
  const Tensor gc = g.contiguous();
  Tensor dx = make_empty(y.sizes(), y.dtype());
  if (fast_rows(y.dtype(), r) && !log_space) {
    float* pdx = dx.data_ptr<float>();
    const float *pg = gc.data_ptr<float>(), *py = y.data_ptr<float>();
    const int64_t N = r.N;
    for_rows(r.B, N, [&](int64_t b) { softmax_kernels::softmax_backward_row(pdx + b * N, pg + b * N, py + b * N, N, 1.0f); });
    return dx;
  }
  visit_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    nn_kernels::softmax_backward<T>(dx.data_ptr<T>(), gc.data_ptr<T>(), y.data_ptr<T>(), r.B, r.N, r.I, log_space);
  });
  return dx;
}

Tensor softmax_op(const Tensor& x, int64_t dim, bool log_space) {
  const char* op = log_space ? "log_softmax" : "softmax";
  check_floating(x, op);
  dim = wrap_dim(dim, x.dim(), op);
  const DimSplit r = split_at_dim(x.sizes(), dim);
  const Tensor xc = x.is_contiguous() ? x : x.detach().contiguous();
  Tensor y = make_empty(x.sizes(), x.dtype());
  if (fast_rows(x.dtype(), r)) {
    float* py = y.data_ptr<float>();
    const float* px = xc.data_ptr<float>();
    const int64_t N = r.N;
    for_rows(r.B, N, [&](int64_t b) {
      if (log_space) softmax_kernels::log_softmax_row(py + b * N, px + b * N, N);
      else softmax_kernels::softmax_row(py + b * N, px + b * N, N);
    });
  } else {
    visit_floating(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      nn_kernels::softmax_forward<T>(y.data_ptr<T>(), xc.data_ptr<T>(), r.B, r.N, r.I, log_space);
    });
  }
  record(log_space ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {x}, y, {y},
         [dim, log_space](const BackwardArgs& ctx) {
           return Grads{softmax_grad(ctx.grad_out, ctx.saved[0], dim, log_space)};
         });
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_op(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_op(x, dim, true); }

}  // namespace tg
