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
//
// -inf entries (masked attention) give exp(-inf) = 0: they get probability 0 (log-prob -inf).
// A row of all -inf has m = -inf and x - m = NaN, so the whole row is NaN, as in PyTorch.
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/loops.h"
#include "autograd/ops/nn_kernels.h"
#include "autograd/tape.h"

namespace tg {
namespace nn_kernels {

// --- fused kernels ------------------------------------------------------------------------------

// out (B,N,I) = softmax (or log_softmax when log_space) over N of inp (B,N,I); both contiguous.
template <class T>
void softmax_forward(T* out, const T* inp, int64_t B, int64_t N, int64_t I, bool log_space) {
  if (I == 1) {
    for (int64_t b = 0; b < B; ++b) {
      const T* x = inp + b * N;  // x (N)
      T* y = out + b * N;        // y (N)
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t n = 0; n < N; ++n) m = x[n] > m ? x[n] : m;
      double s = 0.0;
      if (log_space) {
        for (int64_t n = 0; n < N; ++n) s += static_cast<double>(std::exp(x[n] - m));
        const double lse = static_cast<double>(m) + std::log(s);
        for (int64_t n = 0; n < N; ++n) y[n] = static_cast<T>(static_cast<double>(x[n]) - lse);
      } else {
        for (int64_t n = 0; n < N; ++n) {
          const T e = std::exp(x[n] - m);
          y[n] = e;
          s += static_cast<double>(e);
        }
        const double inv = 1.0 / s;
        for (int64_t n = 0; n < N; ++n) y[n] = static_cast<T>(static_cast<double>(y[n]) * inv);
      }
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
      double s = 0.0;
      if (log_space) {
        for (int64_t n = 0; n < N; ++n) s += static_cast<double>(g[n]);
        for (int64_t n = 0; n < N; ++n)
          dx[n] = static_cast<T>(static_cast<double>(g[n]) - std::exp(static_cast<double>(y[n])) * s);
      } else {
        for (int64_t n = 0; n < N; ++n) s += static_cast<double>(g[n]) * static_cast<double>(y[n]);
        for (int64_t n = 0; n < N; ++n)
          dx[n] = static_cast<T>(static_cast<double>(y[n]) * (static_cast<double>(g[n]) - s));
      }
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

namespace {

// dx (B,N,I) for g (B,N,I) and the saved output y (B,N,I).
Tensor softmax_grad(const Tensor& g, const Tensor& y, int64_t dim, bool log_space) {
  const DimSplit r = split_at_dim(y.sizes(), dim);
  const Tensor gc = g.contiguous();
  Tensor dx = make_empty(y.sizes(), y.dtype());
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
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    nn_kernels::softmax_forward<T>(y.data_ptr<T>(), xc.data_ptr<T>(), r.B, r.N, r.I, log_space);
  });
  record(log_space ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {x}, y, {y},
         [dim, log_space](const BackwardArgs& a) {
           return Grads{softmax_grad(a.grad_out, a.saved[0], dim, log_space)};
         });
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_op(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_op(x, dim, true); }

}  // namespace tg
