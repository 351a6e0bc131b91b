// autograd/ops/layer_norm.cpp — layer normalisation over the trailing dims, fused both ways.
//
// x is seen as (R,C): C = product of normalized_shape (the trailing dims), R = all the rest.
//   forward   mean_r = (1/C) sum_c x_rc            rstd_r = 1 / sqrt((1/C) sum_c (x_rc - mean_r)^2 + eps)
//             norm_rc = (x_rc - mean_r) * rstd_r   y_rc = norm_rc * w_c + b_c
//   backward  dnorm = g * w   (g when there is no weight)
//             dx    = rstd * (dnorm - mean_c(dnorm) - norm * mean_c(dnorm * norm))
//             dw_c  = sum_r g_rc * norm_rc         db_c = sum_r g_rc
// (the llm.c formula). Saved for backward: x, w, and mean (R), rstd (R) in x's dtype; norm is recomputed.
//
// The plain loops below (layer_norm_forward_reference, _backward_reference), whose row
// statistics and dw, db sums accumulate in double, run float64, and float32 when the fast
// kernels are off. With them on, float32 runs the vectorised float loops of row_kernels.h (row
// sums in fixed float lanes, the dw, db sums over rows in double per fixed block of rows, rows
// split over the threads), tested against the float instantiations of the loops below.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/kernels/row_kernels.h"
#include "autograd/fast_kernels.h"
#include "autograd/record.h"

namespace tg {
namespace nn_loops {

// --- the plain reference ------------------------------------------------------------------------------

// out (R,C), mean (R), rstd (R) from inp (R,C), weight (C), bias (C); weight and bias may be
// null (taken as 1 and 0). All contiguous.
template <class T>
void layer_norm_forward_reference(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t R,
                        int64_t C, double eps) {
  for (int64_t r = 0; r < R; ++r) {
    const T* x = inp + r * C;  // x (C)
    T* y = out + r * C;        // y (C)
    double s = 0.0;
    for (int64_t c = 0; c < C; ++c) s += static_cast<double>(x[c]);
    const double m = s / static_cast<double>(C);
    double v = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double d = static_cast<double>(x[c]) - m;
      v += d * d;
    }
    const double rs = 1.0 / std::sqrt(v / static_cast<double>(C) + eps);
    for (int64_t c = 0; c < C; ++c) {
      double o = (static_cast<double>(x[c]) - m) * rs;
      if (weight) o = o * static_cast<double>(weight[c]);
      if (bias) o = o + static_cast<double>(bias[c]);
      y[c] = static_cast<T>(o);
    }
    mean[r] = static_cast<T>(m);
    rstd[r] = static_cast<T>(rs);
  }
}

// dinp (R,C), dweight (C), dbias (C) from dout (R,C), inp (R,C), weight (C), mean (R), rstd (R).
// Any of dinp / dweight / dbias may be null (not wanted); weight may be null (taken as 1).
// dweight and dbias are overwritten (sums over R). All contiguous.
template <class T>
void layer_norm_backward_reference(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                                   const T* mean, const T* rstd, int64_t R, int64_t C) {
  std::vector<double> dw(dweight ? static_cast<size_t>(C) : 0, 0.0);  // dw (C)
  std::vector<double> db(dbias ? static_cast<size_t>(C) : 0, 0.0);    // db (C)
  for (int64_t r = 0; r < R; ++r) {
    const T* g = dout + r * C;  // g (C)
    const T* x = inp + r * C;   // x (C)
    const double m = static_cast<double>(mean[r]);
    const double rs = static_cast<double>(rstd[r]);
    // the two row means of the dx formula
    double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
    if (dinp) {
      for (int64_t c = 0; c < C; ++c) {
        const double norm = (static_cast<double>(x[c]) - m) * rs;
        const double dnorm = static_cast<double>(g[c]) * (weight ? static_cast<double>(weight[c]) : 1.0);
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
      }
      dnorm_mean /= static_cast<double>(C);
      dnorm_norm_mean /= static_cast<double>(C);
    }
    T* dx = dinp ? dinp + r * C : nullptr;  // dx (C)
    for (int64_t c = 0; c < C; ++c) {
      const double norm = (static_cast<double>(x[c]) - m) * rs;
      const double gc = static_cast<double>(g[c]);
      if (dbias) db[c] += gc;
      if (dweight) dw[c] += gc * norm;
      if (dx) {
        const double dnorm = gc * (weight ? static_cast<double>(weight[c]) : 1.0);
        dx[c] = static_cast<T>(rs * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
      }
    }
  }
  for (int64_t c = 0; c < C && dweight; ++c) dweight[c] = static_cast<T>(dw[c]);
  for (int64_t c = 0; c < C && dbias; ++c) dbias[c] = static_cast<T>(db[c]);
}

template void layer_norm_forward_reference<float>(float*, float*, float*, const float*, const float*, const float*,
                                                  int64_t, int64_t, double);
template void layer_norm_forward_reference<double>(double*, double*, double*, const double*, const double*,
                                                   const double*, int64_t, int64_t, double);
template void layer_norm_backward_reference<float>(float*, float*, float*, const float*, const float*, const float*,
                                         const float*, const float*, int64_t, int64_t);
template void layer_norm_backward_reference<double>(double*, double*, double*, const double*, const double*,
                                                    const double*, const double*, const double*, int64_t, int64_t);

}  // namespace nn_loops

namespace {

// "[2, 3]" — shapes as PyTorch writes them in layer_norm's messages.
std::string list_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void check_layer_norm(const Tensor& x, const Shape& ns, const Tensor& weight, const Tensor& bias) {
  const char* op = "layer_norm";
  check_floating(x, op);
  if (ns.empty()) {
    throw Error(std::string(op) + ": Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                "least one element, but got normalized_shape = []");
  }
  const size_t k = ns.size();
  const Shape& xs = x.sizes();
  if (xs.size() < k || !std::equal(ns.begin(), ns.end(), xs.end() - static_cast<std::ptrdiff_t>(k))) {
    std::string expected = "[*";
    for (int64_t s : ns) expected += ", " + std::to_string(s);
    throw Error(std::string(op) + ": Given normalized_shape=" + list_str(ns) + ", expected input with shape " +
                expected + "], but got input of size" + list_str(xs));
  }
  const std::pair<const Tensor*, const char*> params[] = {{&weight, "weight"}, {&bias, "bias"}};
  for (const auto& [t, name] : params) {
    if (!t->defined()) continue;
    if (t->sizes() != ns) {
      throw Error(std::string(op) + ": Expected " + name + " to be of same shape as normalized_shape, but got " +
                  name + " of shape " + list_str(t->sizes()) + " and normalized_shape = " + list_str(ns));
    }
    if (t->dtype() != x.dtype()) {
      throw Error(std::string(op) + ": expected " + name + " to have the input's dtype " + dtype_name(x.dtype()) +
                  ", got " + dtype_name(t->dtype()));
    }
  }
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  check_layer_norm(x, normalized_shape, weight, bias);
  const int64_t C = shape_numel(normalized_shape);
  const int64_t R = C == 0 ? 0 : x.numel() / C;
  const Tensor xc = contiguous_data(x);
  const Tensor wc = contiguous_data(weight);
  const Tensor bc = contiguous_data(bias);
  Tensor y = make_empty(x.sizes(), x.dtype());
  Tensor mean = make_empty({R}, x.dtype());  // mean (R)
  Tensor rstd = make_empty({R}, x.dtype());  // rstd (R)
  visit_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      if (fast_kernels()) {
        row_kernels::layer_norm_forward(y.data_ptr<T>(), mean.data_ptr<T>(), rstd.data_ptr<T>(), xc.data_ptr<T>(),
                                        data_or_null<T>(wc), data_or_null<T>(bc), R, C, eps);
        return;
      }
    }
    nn_loops::layer_norm_forward_reference<T>(y.data_ptr<T>(), mean.data_ptr<T>(), rstd.data_ptr<T>(),
                                              xc.data_ptr<T>(), data_or_null<T>(wc), data_or_null<T>(bc), R, C, eps);
  });
  const Shape ns = normalized_shape;
  record("NativeLayerNormBackward0", {x, weight, bias}, y, {xc, wc, mean, rstd}, [R, C, ns](const BackwardArgs& ctx) {
    const Tensor& xs = ctx.saved[0];
    const Tensor& ws = ctx.saved[1];
    const Tensor g = ctx.grad_out.contiguous();
    Tensor dx = ctx.needs_grad[0] ? make_empty(xs.sizes(), xs.dtype()) : Tensor();
    Tensor dw = ctx.needs_grad[1] ? make_empty(ns, xs.dtype()) : Tensor();
    Tensor db = ctx.needs_grad[2] ? make_empty(ns, xs.dtype()) : Tensor();
    visit_floating(xs.dtype(), "layer_norm_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto out_ptr = [](const Tensor& t) { return t.defined() ? t.data_ptr<T>() : nullptr; };
      if constexpr (std::is_same_v<T, float>) {
        if (fast_kernels()) {
          row_kernels::layer_norm_backward(out_ptr(dx), out_ptr(dw), out_ptr(db), g.data_ptr<T>(), xs.data_ptr<T>(),
                                           data_or_null<T>(ws), ctx.saved[2].data_ptr<T>(), ctx.saved[3].data_ptr<T>(),
                                           R, C);
          return;
        }
      }
      nn_loops::layer_norm_backward_reference<T>(out_ptr(dx), out_ptr(dw), out_ptr(db), g.data_ptr<T>(),
                                                 xs.data_ptr<T>(), data_or_null<T>(ws), ctx.saved[2].data_ptr<T>(),
                                                 ctx.saved[3].data_ptr<T>(), R, C);
    });
    return Grads{dx, dw, db};
  });
  return y;
}

}  // namespace tg
