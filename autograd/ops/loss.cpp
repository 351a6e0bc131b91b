// autograd/ops/loss.cpp — cross entropy of logits against class targets, mean reduction, fused.
//
//   forward   lse_n = m_n + log sum_c exp(x_nc - m_n),   m_n = max_c x_nc
//             loss  = (1/K) sum_n (lse_n - x_{n,t_n})     over the K rows whose target is not -100
//   backward  dx_nc = (exp(x_nc - lse_n) - [c == t_n]) * g / K      (0 for an ignored row)
//
// This is F.cross_entropy(logits, targets) with its defaults: log_softmax and nll_loss in one
// pass per row, no (N,C) log-probabilities made, and a target of -100 (ignore_index) skipped
// (all rows ignored gives 0/0 = NaN, as in PyTorch). Saved for backward: the logits, the
// targets and lse (N) in float64; the probabilities are recomputed from them.
// Logits (C) with a 0-d target are one row: N = 1, and the loss is 0-d as always.
// The plain loops below (cross_entropy_forward_reference, _backward_reference) run float64, and
// float32 when the fast kernels are off; with them on, float32 runs softmax_kernels.h's rows (a
// vectorised exp, sums in fixed lanes), the rows split over the threads, tested against them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/kernels/softmax_kernels.h"
#include "autograd/runtime/parallel.h"
#include "autograd/fast_kernels.h"
#include "autograd/record.h"

namespace tg {
namespace nn_loops {

inline constexpr int64_t kIgnoreIndex = -100;  // F.cross_entropy's default ignore_index

// --- the plain reference ------------------------------------------------------------------------------

// loss (1) = (1/K) sum_n (lse_n - x_{n,t_n}) over the K rows not ignored, from lse (N),
// logits (N,C) and targets (N): the rows in order, in double, for either path.
template <class T>
void mean_row_loss(T* loss, const double* lse, const T* logits, const int64_t* targets, int64_t N, int64_t C) {
  double total = 0.0;
  int64_t count = 0;
  for (int64_t n = 0; n < N; ++n) {
    if (targets[n] == kIgnoreIndex) continue;
    total += lse[n] - static_cast<double>(logits[n * C + targets[n]]);
    ++count;
  }
  loss[0] = static_cast<T>(total / static_cast<double>(count));
}

// g / K: the gradient g of the mean loss over the K rows of targets (N) not ignored.
inline double gradient_scale(double g, const int64_t* targets, int64_t N) {
  int64_t count = 0;
  for (int64_t n = 0; n < N; ++n) count += targets[n] != kIgnoreIndex;
  return g / static_cast<double>(count);
}

// loss (1) = mean cross entropy, lse (N) = logsumexp of each row, from logits (N,C) and
// targets (N); all contiguous, targets already checked to be in [0, C) or -100.
template <class T>
void cross_entropy_forward_reference(T* loss, double* lse, const T* logits, const int64_t* targets, int64_t N,
                                     int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const T* x = logits + n * C;  // x (C)
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t c = 0; c < C; ++c) m = x[c] > m ? x[c] : m;
    double s = 0.0;
    for (int64_t c = 0; c < C; ++c) s += static_cast<double>(std::exp(x[c] - m));
    lse[n] = static_cast<double>(m) + std::log(s);
  }
  mean_row_loss(loss, lse, logits, targets, N, C);
}

// dlogits (N,C) from dloss (1), logits (N,C), lse (N) and targets (N); all contiguous.
template <class T>
void cross_entropy_backward_reference(T* dlogits, const T* dloss, const T* logits, const double* lse,
                                      const int64_t* targets, int64_t N, int64_t C) {
  const double scale = gradient_scale(dloss[0], targets, N);
  for (int64_t n = 0; n < N; ++n) {
    const T* x = logits + n * C;  // x (C)
    T* dx = dlogits + n * C;      // dx (C)
    const int64_t t = targets[n];
    if (t == kIgnoreIndex) {
      for (int64_t c = 0; c < C; ++c) dx[c] = T(0);
      continue;
    }
    for (int64_t c = 0; c < C; ++c) {
      const double p = std::exp(static_cast<double>(x[c]) - lse[n]);
      dx[c] = static_cast<T>((p - (c == t ? 1.0 : 0.0)) * scale);
    }
  }
}

template void cross_entropy_forward_reference<float>(float*, double*, const float*, const int64_t*, int64_t, int64_t);
template void cross_entropy_forward_reference<double>(double*, double*, const double*, const int64_t*, int64_t,
                                                      int64_t);
template void cross_entropy_backward_reference<float>(float*, const float*, const float*, const double*, const int64_t*,
                                                      int64_t, int64_t);
template void cross_entropy_backward_reference<double>(double*, const double*, const double*, const double*,
                                                       const int64_t*, int64_t, int64_t);

}  // namespace nn_loops

// --- the float32 path: softmax_kernels' rows, split over the threads ---------------------------
namespace {

// As nn_loops::cross_entropy_forward_reference, each row's lse by softmax_kernels::logsumexp_row; the loss is then
// summed over the rows in order, so the thread count changes no bit.
void cross_entropy_forward_f32(float* loss, double* lse, const float* logits, const int64_t* targets, int64_t N,
                               int64_t C) {
  parallel_for(0, N, softmax_kernels::rows_per_chunk(C), [&](int64_t begin, int64_t end) {
    std::vector<float> e(static_cast<size_t>(C));  // e (C): the exponentials, scratch
    for (int64_t n = begin; n < end; ++n) lse[n] = softmax_kernels::logsumexp_row(e.data(), logits + n * C, C);
  });
  nn_loops::mean_row_loss(loss, lse, logits, targets, N, C);
}

// As nn_loops::cross_entropy_backward_reference, each row by softmax_kernels::cross_entropy_backward_row.
void cross_entropy_backward_f32(float* dlogits, const float* dloss, const float* logits, const double* lse,
                                const int64_t* targets, int64_t N, int64_t C) {
  const double scale = nn_loops::gradient_scale(dloss[0], targets, N);
  parallel_for(0, N, softmax_kernels::rows_per_chunk(C), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      float* dx = dlogits + n * C;  // dx (C)
      if (targets[n] == nn_loops::kIgnoreIndex) {
        std::fill(dx, dx + C, 0.0f);
      } else {
        softmax_kernels::cross_entropy_backward_row(dx, logits + n * C, lse[n], targets[n], scale, C);
      }
    }
  });
}

}  // namespace

namespace {

// PyTorch's name for a dtype in "expected scalar type Long but found Float".
const char* torch_type_name(ScalarType t) {
  switch (t) {
    case kFloat32: return "Float";
    case kFloat64: return "Double";
    case kInt64: return "Long";
    case kBool: return "Bool";
    case kBFloat16: return "BFloat16";
    case kInt8: return "Char";
    case kFloat16: return "Half";
  }
  return "?";
}

// Shapes and targets must make sense before the kernel reads them. Returns (N, C).
std::pair<int64_t, int64_t> check_cross_entropy(const Tensor& logits, const Tensor& targets,
                                                int64_t ignore_index = nn_loops::kIgnoreIndex) {
  const char* op = "cross_entropy";
  check_floating(logits, op);
  check_defined(targets, op, "targets");
  if (targets.dtype() != kInt64) {
    throw Error(std::string(op) + ": expected scalar type Long but found " + torch_type_name(targets.dtype()) +
                " (targets must be int64 class indices)");
  }
  if (logits.dim() == 0) throw Error(std::string(op) + ": logits must have a class dim, got a 0-d tensor");
  if (logits.dim() == 1 && targets.dim() != 0) {
    throw Error(std::string(op) + ": logits of shape " + shape_str(logits.sizes()) +
                " (one row) need a 0-d target, got targets of shape " + shape_str(targets.sizes()));
  }
  // (N,C,d1,...) logits need (N,d1,...) targets: the logits' shape without the class dim 1
  Shape expected = logits.sizes();
  if (logits.dim() >= 2) expected.erase(expected.begin() + 1);
  if (logits.dim() >= 2 && targets.sizes() != expected) {
    if (logits.dim() == 2 && targets.dim() == 1) {
      throw Error(std::string(op) + ": Expected input batch_size (" + std::to_string(logits.sizes()[0]) +
                  ") to match target batch_size (" + std::to_string(targets.sizes()[0]) + ").");
    }
    throw Error(std::string(op) + ": logits of shape " + shape_str(logits.sizes()) +
                " (class dim 1) need targets of shape " + shape_str(expected) + ", got " + shape_str(targets.sizes()));
  }
  const int64_t C = logits.dim() == 1 ? logits.sizes()[0] : logits.sizes()[1];
  const int64_t N = C ? logits.numel() / C : 0;
  const std::vector<int64_t> t = targets.tolist<int64_t>();
  for (size_t n = 0; n < t.size(); ++n) {
    if (t[n] == ignore_index || (t[n] >= 0 && t[n] < C)) continue;
    throw Error(std::string(op) + ": Target " + std::to_string(t[n]) + " is out of bounds. (element " +
                std::to_string(n) + " of the flattened targets is " + std::to_string(t[n]) + ", but logits have " +
                std::to_string(C) + " classes: a target must be in [0, " + std::to_string(C) + ") or " +
                std::to_string(ignore_index) + " (ignore_index) to ignore the row)");
  }
  return {N, C};
}

// dlogits (N,C) (shaped like the logits) for the gradient g of the 0-d loss.
Tensor cross_entropy_grad(const Tensor& g, const Tensor& logits, const Tensor& targets, const Tensor& lse) {
  const Tensor xc = logits.contiguous();
  const Tensor tc = targets.contiguous();
  const Tensor gc = g.contiguous();
  const int64_t N = lse.numel();
  const int64_t C = logits.sizes().back();
  Tensor dx = make_empty(logits.sizes(), logits.dtype());
  visit_floating(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      if (fast_kernels()) {
        return cross_entropy_backward_f32(dx.data_ptr<T>(), gc.data_ptr<T>(), xc.data_ptr<T>(), lse.data_ptr<double>(),
                                          tc.data_ptr<int64_t>(), N, C);
      }
    }
    nn_loops::cross_entropy_backward_reference<T>(dx.data_ptr<T>(), gc.data_ptr<T>(), xc.data_ptr<T>(),
                                                  lse.data_ptr<double>(), tc.data_ptr<int64_t>(), N, C);
  });
  return dx;
}

}  // namespace

// The fused path: (N,C) or (C) logits, mean over the rows, ignore_index -100, no smoothing.
Tensor cross_entropy_fused(const Tensor& logits, const Tensor& targets) {
  // (named, not a structured binding: Clang with OpenMP cannot capture a binding in a lambda)
  const std::pair<int64_t, int64_t> rows_and_classes = check_cross_entropy(logits, targets);
  const int64_t N = rows_and_classes.first, C = rows_and_classes.second;
  const Tensor xc = logits.is_contiguous() ? logits : logits.detach().contiguous();
  const Tensor tc = targets.contiguous();
  Tensor loss = make_empty({}, logits.dtype());  // loss (): 0-d
  Tensor lse = make_empty({N}, kFloat64);  // lse (N)
  visit_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      if (fast_kernels()) {
        return cross_entropy_forward_f32(loss.data_ptr<T>(), lse.data_ptr<double>(), xc.data_ptr<T>(),
                                         tc.data_ptr<int64_t>(), N, C);
      }
    }
    nn_loops::cross_entropy_forward_reference<T>(loss.data_ptr<T>(), lse.data_ptr<double>(), xc.data_ptr<T>(),
                                                 tc.data_ptr<int64_t>(), N, C);
  });
  record("NllLossBackward0", {logits, targets}, loss, {xc, tc, lse}, [](const BackwardArgs& ctx) {
    return Grads{cross_entropy_grad(ctx.grad_out, ctx.saved[0], ctx.saved[1], ctx.saved[2]), Tensor()};
  });
  return loss;
}

// Every other case, composed of differentiable ops (their backward gives the gradient):
//   logp = log_softmax(x) over the class dim;  row loss = (1 - eps) * -logp[t] + eps * -mean_c logp
//   (0 for rows whose target is ignore_index), then summed, averaged over the kept rows, or not.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const std::string& reduction, int64_t ignore_index,
                     double label_smoothing) {
  const char* op = "cross_entropy";
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    throw Error(std::string(op) + ": reduction must be \"mean\", \"sum\" or \"none\", got \"" + reduction + "\"");
  }
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    throw Error(std::string(op) + ": label_smoothing must be between 0.0 and 1.0, got " +
                std::to_string(label_smoothing));
  }
  check_cross_entropy(logits, targets, ignore_index);
  if (reduction == "mean" && ignore_index == nn_loops::kIgnoreIndex && label_smoothing == 0.0 && logits.dim() <= 2) {
    return cross_entropy_fused(logits, targets);
  }
  // rows (R,C): the class dim moved last; targets (R)
  const int64_t C = logits.dim() == 1 ? logits.sizes()[0] : logits.sizes()[1];
  Shape to_last;
  for (int64_t d = 0; d < logits.dim(); ++d)
    if (d != 1) to_last.push_back(d);
  if (logits.dim() >= 2) to_last.push_back(1);
  const Tensor rows = logits.dim() >= 2 ? logits.permute(to_last).reshape({-1, C}) : logits.reshape({1, C});
  const Tensor t = targets.reshape({-1});
  const Tensor keep = ne(t, ignore_index);                                      // (R) bool
  const Tensor safe_t = where(keep, t, zeros({}, kInt64));                      // (R), ignored rows pick class 0
  const Tensor logp = log_softmax(rows, 1);                                     // (R,C)
  Tensor row_loss = neg(gather(logp, 1, safe_t.unsqueeze(1)).squeeze(1));       // (R) -log p[t]
  if (label_smoothing > 0.0)
    row_loss = add(mul(row_loss, 1.0 - label_smoothing), mul(neg(mean(logp, 1)), label_smoothing));
  row_loss = masked_fill(row_loss, logical_not(keep), 0.0);
  if (reduction == "none") return row_loss.reshape(targets.sizes());
  if (reduction == "sum") return sum(row_loss);
  const double kept = static_cast<double>(sum(keep).item<int64_t>());
  return div(sum(row_loss), kept);  // all rows ignored: 0/0 = NaN, as PyTorch
}

}  // namespace tg
