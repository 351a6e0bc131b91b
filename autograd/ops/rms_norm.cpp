// autograd/ops/rms_norm.cpp — root-mean-square normalisation over the trailing dims (Llama's,
// Qwen's), fused both ways.
//
// x is seen as (R,C): C = product of normalized_shape (the trailing dims), R = all the rest.
//   forward   rstd_r = 1 / sqrt((1/C) sum_c x_rc^2 + eps)
//             norm_rc = x_rc * rstd_r          y_rc = norm_rc * w_c
//   backward  dnorm = g * w   (g when there is no weight)
//             dx    = rstd * (dnorm - norm * mean_c(dnorm * norm))
//             dw_c  = sum_r g_rc * norm_rc
// LayerNorm's formula without the mean (and its dnorm - mean_c(dnorm) term) and without a bias.
// Saved for backward: x, w, and rstd (R) in x's dtype; norm is recomputed.
//
// The loops below keep their row sums and the dw sums over rows in double, in float32 and float64
// alike; PyTorch's twin of Hugging Face's LlamaRMSNorm sums in float32, which the tests allow for.
// They are the plain path and the test oracle: with the fast kernels on, float32 runs
// kernels/row_kernels.h's rows instead (float lanes, the rows split over the threads), as
// layer_norm does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/row_kernels.h"
#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/record.h"

namespace tg {
namespace nn_loops {

// out (R,C), rstd (R) from inp (R,C), weight (C) or null (taken as 1). All contiguous.
template <class T>
void rms_norm_forward_reference(T* out, T* rstd, const T* inp, const T* weight, int64_t R, int64_t C, double eps) {
  for (int64_t r = 0; r < R; ++r) {
    const T* x = inp + r * C;  // x (C)
    T* y = out + r * C;        // y (C)
    double squares = 0.0;
    for (int64_t c = 0; c < C; ++c) squares += static_cast<double>(x[c]) * static_cast<double>(x[c]);
    const double rs = 1.0 / std::sqrt(squares / static_cast<double>(C) + eps);
    for (int64_t c = 0; c < C; ++c) {
      double o = static_cast<double>(x[c]) * rs;
      if (weight) o = o * static_cast<double>(weight[c]);
      y[c] = static_cast<T>(o);
    }
    rstd[r] = static_cast<T>(rs);
  }
}

// dinp (R,C), dweight (C) from dout (R,C), inp (R,C), weight (C), rstd (R). dinp or dweight may be
// null (not wanted); weight may be null (taken as 1). dweight is overwritten. All contiguous.
template <class T>
void rms_norm_backward_reference(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd,
                                 int64_t R, int64_t C) {
  std::vector<double> dw(dweight ? static_cast<size_t>(C) : 0, 0.0);  // dw (C)
  for (int64_t r = 0; r < R; ++r) {
    const T* g = dout + r * C;  // g (C)
    const T* x = inp + r * C;   // x (C)
    const double rs = static_cast<double>(rstd[r]);
    double dnorm_norm_mean = 0.0;  // the row mean of the dx formula
    if (dinp) {
      for (int64_t c = 0; c < C; ++c) {
        const double dnorm = static_cast<double>(g[c]) * (weight ? static_cast<double>(weight[c]) : 1.0);
        dnorm_norm_mean += dnorm * static_cast<double>(x[c]) * rs;
      }
      dnorm_norm_mean /= static_cast<double>(C);
    }
    T* dx = dinp ? dinp + r * C : nullptr;  // dx (C)
    for (int64_t c = 0; c < C; ++c) {
      const double norm = static_cast<double>(x[c]) * rs;
      const double gc = static_cast<double>(g[c]);
      if (dweight) dw[c] += gc * norm;
      if (dx) {
        const double dnorm = gc * (weight ? static_cast<double>(weight[c]) : 1.0);
        dx[c] = static_cast<T>(rs * (dnorm - norm * dnorm_norm_mean));
      }
    }
  }
  for (int64_t c = 0; c < C && dweight; ++c) dweight[c] = static_cast<T>(dw[c]);
}

template void rms_norm_forward_reference<float>(float*, float*, const float*, const float*, int64_t, int64_t, double);
template void rms_norm_forward_reference<double>(double*, double*, const double*, const double*, int64_t, int64_t,
                                                 double);
template void rms_norm_backward_reference<float>(float*, float*, const float*, const float*, const float*,
                                                 const float*, int64_t, int64_t);
template void rms_norm_backward_reference<double>(double*, double*, const double*, const double*, const double*,
                                                  const double*, int64_t, int64_t);

}  // namespace nn_loops

namespace {

void check_rms_norm(const Tensor& x, const Shape& ns, const Tensor& weight, double eps) {
  const char* op = "rms_norm";
  check_floating(x, op);
  if (ns.empty()) throw Error("rms_norm: normalized_shape must have at least one dim, got ()");
  const size_t k = ns.size();
  const Shape& xs = x.sizes();
  if (xs.size() < k || !std::equal(ns.begin(), ns.end(), xs.end() - static_cast<std::ptrdiff_t>(k))) {
    throw Error("rms_norm: normalized_shape " + shape_str(ns) + " is not the input's trailing dims: input of shape " +
                shape_str(xs));
  }
  if (!(eps >= 0.0)) throw Error("rms_norm: eps must be at least 0, got " + number_str(eps));
  if (!weight.defined()) return;
  if (weight.sizes() != ns) {
    throw Error("rms_norm: weight of shape " + shape_str(weight.sizes()) + " is not normalized_shape " + shape_str(ns));
  }
  if (weight.dtype() != x.dtype()) {
    throw Error(std::string("rms_norm: expected weight to have the input's dtype ") + dtype_name(x.dtype()) +
                ", got " + dtype_name(weight.dtype()));
  }
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps_in) {
  check_defined(x, "rms_norm", "input");
  // no eps: the machine epsilon of x's dtype, as torch.nn.functional.rms_norm
  const double eps = eps_in ? *eps_in
                            : (x.dtype() == kFloat64 ? std::numeric_limits<double>::epsilon()
                                                     : static_cast<double>(std::numeric_limits<float>::epsilon()));
  check_rms_norm(x, normalized_shape, weight, eps);
  const int64_t C = shape_numel(normalized_shape);
  const int64_t R = C == 0 ? 0 : x.numel() / C;
  const Tensor xc = contiguous_data(x);
  const Tensor wc = contiguous_data(weight);
  Tensor y = make_empty(x.sizes(), x.dtype());
  Tensor rstd = make_empty({R}, x.dtype());  // rstd (R)
  visit_floating(x.dtype(), "rms_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      if (fast_kernels()) {
        row_kernels::rms_norm_forward(y.data_ptr<T>(), rstd.data_ptr<T>(), xc.data_ptr<T>(), data_or_null<T>(wc), R, C,
                                      eps);
        return;
      }
    }
    nn_loops::rms_norm_forward_reference<T>(y.data_ptr<T>(), rstd.data_ptr<T>(), xc.data_ptr<T>(), data_or_null<T>(wc),
                                            R, C, eps);
  });
  const Shape ns = normalized_shape;
  record("RmsNormBackward0", {x, weight}, y, {xc, wc, rstd}, [R, C, ns](const BackwardArgs& ctx) {
    const Tensor& xs = ctx.saved[0];
    const Tensor g = ctx.grad_out.contiguous();
    Tensor dx = ctx.needs_grad[0] ? make_empty(xs.sizes(), xs.dtype()) : Tensor();
    Tensor dw = ctx.needs_grad[1] ? make_empty(ns, xs.dtype()) : Tensor();
    visit_floating(xs.dtype(), "rms_norm_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto out_ptr = [](const Tensor& t) { return t.defined() ? t.data_ptr<T>() : nullptr; };
      if constexpr (std::is_same_v<T, float>) {
        if (fast_kernels()) {
          row_kernels::rms_norm_backward(out_ptr(dx), out_ptr(dw), g.data_ptr<T>(), xs.data_ptr<T>(),
                                         data_or_null<T>(ctx.saved[1]), ctx.saved[2].data_ptr<T>(), R, C);
          return;
        }
      }
      nn_loops::rms_norm_backward_reference<T>(out_ptr(dx), out_ptr(dw), g.data_ptr<T>(), xs.data_ptr<T>(),
                                               data_or_null<T>(ctx.saved[1]), ctx.saved[2].data_ptr<T>(), R, C);
    });
    return Grads{dx, dw};
  });
  return y;
}

}  // namespace tg
