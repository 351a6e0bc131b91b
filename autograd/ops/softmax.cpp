// autograd/ops/softmax.cpp — softmax and log_softmax along one dim, numerically stable.
//
//   softmax      forward   y_i = exp(x_i - m) / s,     m = max_j x_j,  s = sum_j exp(x_j - m)
//                backward  dx  = y * (g - sum_j g_j y_j)
//   log_softmax  forward   y_i = x_i - m - log(s)
//                backward  dx  = g - exp(y) * sum_j g_j
// (sums along dim). Saved for backward: the output y only, not the input: both backward formulas
// read y alone (log_softmax's as exp(y)), so x can be freed after the forward.
//
// -inf entries (masked attention) give exp(-inf) = 0: they get probability 0 (log-prob -inf).
// A row of all -inf has m = -inf and x - m = NaN, so the whole row is NaN, as in PyTorch.
//
// Read softmax_op at the end first: it picks the plain loops (nn_loops, first) or the fast rows.
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/kernels/softmax_kernels.h"
#include "autograd/kernels/vec_math.h"
#include "autograd/runtime/parallel.h"
#include "autograd/fast_kernels.h"
#include "autograd/record.h"

namespace tg {
namespace nn_loops {

// --- the plain reference ------------------------------------------------------------------------------

// The plain loops (softmax_forward_reference, softmax_backward_reference) compute float32
// in float with the row sums in double, so results match PyTorch to ~1e-6. With the fast kernels
// on (fast_kernels.h), a float32 tensor along its last dim runs softmax_kernels.h's rows instead
// (a vectorised exp, the sums in fixed lanes; log_softmax's backward excepted), the rows split
// over the threads and tested against the loops here.

// y (n) = softmax(x (n)), one contiguous row of softmax_forward_reference below, returning 1/s.
// y may be x.
template <class T>
double softmax_row_reference(T* y, const T* x, int64_t n) {
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
//
// A tensor is seen as x (B,N,I) with the dim of size N in the middle: B = product of the sizes
// before dim, I = product of those after. When dim is the last one (I == 1) each row of N is
// one contiguous pass, in both directions; otherwise the kernel walks the I columns of a (N,I)
// block side by side.
template <class T>
void softmax_forward_reference(T* out, const T* inp, int64_t B, int64_t N, int64_t I, bool log_space) {
  if (I == 1) {
    for (int64_t b = 0; b < B; ++b) {
      const T* x = inp + b * N;  // x (N)
      T* y = out + b * N;        // y (N)
      if (!log_space) {
        softmax_row_reference(y, x, N);
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
// contiguous row of softmax_backward_reference below (divisor 1). dx may be g or y.
template <class T>
void softmax_backward_row_reference(T* dx, const T* g, const T* y, int64_t n, T divisor) {
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
void softmax_backward_reference(T* dinp, const T* dout, const T* out, int64_t B, int64_t N, int64_t I, bool log_space) {
  if (I == 1) {  // one contiguous row of N each: the loop below's sums and products, in its order
    for (int64_t b = 0; b < B; ++b) {
      const T* g = dout + b * N;  // g (N)
      const T* y = out + b * N;   // y (N)
      T* dx = dinp + b * N;       // dx (N)
      if (!log_space) {
        softmax_backward_row_reference(dx, g, y, N, T(1));
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

template double softmax_row_reference<float>(float*, const float*, int64_t);
template double softmax_row_reference<double>(double*, const double*, int64_t);
template void softmax_backward_row_reference<float>(float*, const float*, const float*, int64_t, float);
template void softmax_backward_row_reference<double>(double*, const double*, const double*, int64_t, double);
template void softmax_forward_reference<float>(float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_forward_reference<double>(double*, const double*, int64_t, int64_t, int64_t, bool);
template void softmax_backward_reference<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, bool);
template void softmax_backward_reference<double>(double*, const double*, const double*, int64_t, int64_t, int64_t,
                                                 bool);

}  // namespace nn_loops

namespace {

// The fast path: the fast kernels are on, and dim is the last one (I == 1) of a float32 tensor.
bool fast_rows(ScalarType dtype, const DimSplit& r) { return fast_kernels() && dtype == kFloat32 && r.I == 1; }

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
    for_rows(r.B, N,
             [&](int64_t b) { softmax_kernels::softmax_backward_row(pdx + b * N, pg + b * N, py + b * N, N, 1.0f); });
    return dx;
  }
  visit_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    nn_loops::softmax_backward_reference<T>(dx.data_ptr<T>(), gc.data_ptr<T>(), y.data_ptr<T>(), r.B, r.N, r.I,
                                            log_space);
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
      nn_loops::softmax_forward_reference<T>(y.data_ptr<T>(), xc.data_ptr<T>(), r.B, r.N, r.I, log_space);
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
