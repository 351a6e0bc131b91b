// tests/autograd/naive_kernels.h — independent oracles for the nn kernels' plain code: each
// quantity the textbook way, one at a time, mostly in double. The library's `_reference` loops
// (the op files) are tested against these; the fast loops (autograd/kernels/) against the
// `_reference` loops. Buffers as autograd/ops/nn_loops.h: contiguous, outputs first.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "autograd/random/generator.h"
#include "autograd/random/random_kernels.h"

namespace tg::naive_kernels {

inline constexpr int64_t kIgnoreIndex = -100;  // F.cross_entropy's default ignore_index

// --- softmax (the library's loops: autograd/ops/softmax.cpp) ---

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

// --- loss (the library's loops: autograd/ops/loss.cpp) ---

// loss (1) from logits (N,C) and targets (N).
template <class T>
void cross_entropy_forward_naive(T* loss, const T* logits, const int64_t* targets, int64_t N, int64_t C) {
  double total = 0.0;
  int64_t count = 0;
  for (int64_t n = 0; n < N; ++n) {
    if (targets[n] == kIgnoreIndex) continue;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < C; ++c) m = std::max(m, static_cast<double>(logits[n * C + c]));
    double s = 0.0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(static_cast<double>(logits[n * C + c]) - m);
    const double logprob = static_cast<double>(logits[n * C + targets[n]]) - m - std::log(s);
    total += -logprob;
    ++count;
  }
  loss[0] = static_cast<T>(total / static_cast<double>(count));
}

// dlogits (N,C) = (softmax(logits) - onehot(targets)) * dloss / K.
template <class T>
void cross_entropy_backward_naive(T* dlogits, const T* dloss, const T* logits, const int64_t* targets, int64_t N,
                                  int64_t C) {
  int64_t count = 0;
  for (int64_t n = 0; n < N; ++n) count += targets[n] != kIgnoreIndex;
  for (int64_t n = 0; n < N; ++n) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < C; ++c) m = std::max(m, static_cast<double>(logits[n * C + c]));
    double s = 0.0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(static_cast<double>(logits[n * C + c]) - m);
    for (int64_t c = 0; c < C; ++c) {
      const double p = std::exp(static_cast<double>(logits[n * C + c]) - m) / s;
      const double onehot = c == targets[n] ? 1.0 : 0.0;
      const double d = targets[n] == kIgnoreIndex ? 0.0 : (p - onehot) * static_cast<double>(dloss[0]) / count;
      dlogits[n * C + c] = static_cast<T>(d);
    }
  }
}

// --- layer_norm (the library's loops: autograd/ops/layer_norm.cpp) ---

// out (R,C), mean (R), rstd (R) from inp (R,C), weight (C) or null, bias (C) or null.
template <class T>
void layer_norm_forward_naive(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t R,
                              int64_t C, double eps) {
  for (int64_t r = 0; r < R; ++r) {
    double m = 0.0;
    for (int64_t c = 0; c < C; ++c) m += static_cast<double>(inp[r * C + c]) / static_cast<double>(C);
    double var = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double d = static_cast<double>(inp[r * C + c]) - m;
      var += d * d / static_cast<double>(C);
    }
    const double rs = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < C; ++c) {
      const double norm = (static_cast<double>(inp[r * C + c]) - m) * rs;
      const double w = weight ? static_cast<double>(weight[c]) : 1.0;
      const double b = bias ? static_cast<double>(bias[c]) : 0.0;
      out[r * C + c] = static_cast<T>(norm * w + b);
    }
    mean[r] = static_cast<T>(m);
    rstd[r] = static_cast<T>(rs);
  }
}

// dinp (R,C), dweight (C), dbias (C) (none may be null here) from dout, inp, weight or null,
// mean, rstd: dx by the chain rule through norm, mean and rstd written out term by term.
template <class T>
void layer_norm_backward_naive(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                               const T* mean, const T* rstd, int64_t R, int64_t C) {
  for (int64_t c = 0; c < C; ++c) {
    double dw = 0.0, db = 0.0;
    for (int64_t r = 0; r < R; ++r) {
      const double norm = (static_cast<double>(inp[r * C + c]) - static_cast<double>(mean[r])) *
                          static_cast<double>(rstd[r]);
      dw += static_cast<double>(dout[r * C + c]) * norm;
      db += static_cast<double>(dout[r * C + c]);
    }
    dweight[c] = static_cast<T>(dw);
    dbias[c] = static_cast<T>(db);
  }
  for (int64_t r = 0; r < R; ++r) {
    const double m = static_cast<double>(mean[r]);
    const double rs = static_cast<double>(rstd[r]);
    // y = (x - m) * rs:  dx_i = rs * dn_i + dm/N + dvar * 2 (x_i - m) / N, with
    // dvar = sum_j dn_j (x_j - m) * (-1/2) rs^3  and  dm = -rs * sum_j dn_j
    double dvar = 0.0, dm = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double dn = static_cast<double>(dout[r * C + c]) * (weight ? static_cast<double>(weight[c]) : 1.0);
      dvar += dn * (static_cast<double>(inp[r * C + c]) - m) * -0.5 * rs * rs * rs;
      dm += -dn * rs;
    }
    for (int64_t c = 0; c < C; ++c) {
      const double dn = static_cast<double>(dout[r * C + c]) * (weight ? static_cast<double>(weight[c]) : 1.0);
      const double xm = static_cast<double>(inp[r * C + c]) - m;
      dinp[r * C + c] =
          static_cast<T>(dn * rs + dvar * 2.0 * xm / static_cast<double>(C) + dm / static_cast<double>(C));
    }
  }
}

// --- embedding (the library's loops: autograd/ops/embedding.cpp) ---

// out (N,C) = weight (V,C) at idx (N).
template <class T>
void embedding_forward_naive(T* out, const T* weight, const int64_t* idx, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) out[n * C + c] = weight[idx[n] * C + c];
}

// dweight (V,C): for each row v, the sum of the dout (N,C) rows whose index is v.
template <class T>
void embedding_backward_naive(T* dweight, const T* dout, const int64_t* idx, int64_t N, int64_t V, int64_t C) {
  for (int64_t v = 0; v < V; ++v) {
    for (int64_t c = 0; c < C; ++c) {
      T acc = T(0);
      for (int64_t n = 0; n < N; ++n)
        if (idx[n] == v) acc += dout[n * C + c];
      dweight[v * C + c] = acc;
    }
  }
}

// --- dropout (the library's loops: autograd/ops/dropout.cpp) ---

// noise = bernoulli_(1 - p) as 1 or 0; noise = noise / T(1 - p); out = inp * noise.
template <class T>
void dropout_forward_naive(T* out, T* noise, const T* inp, Generator& gen, int64_t N, double p) {
  for (int64_t i = 0; i < N; ++i) noise[i] = rng::bernoulli_one(gen, 1.0 - p) ? T(1) : T(0);
  for (int64_t i = 0; i < N; ++i) noise[i] = noise[i] / static_cast<T>(1.0 - p);
  for (int64_t i = 0; i < N; ++i) out[i] = inp[i] * noise[i];
}

// dinp (N) = dout (N) * noise (N), one element at a time.
template <class T>
void dropout_backward_naive(T* dinp, const T* dout, const T* noise, int64_t N) {
  for (int64_t i = 0; i < N; ++i) {
    const T g = dout[i];
    dinp[i] = g * noise[i];
  }
}

}  // namespace tg::naive_kernels
