// optim/clip_grad.cpp — the total gradient norm and the in-place scaling.
//
// The 2-norm is summed as PyTorch's CPU kernel sums it (sum_of_squares_reference below; with
// fast_kernels() on, its vectorised copy in autograd/kernels/optim_kernels.h, the same bits), so
// float32 results match it closely (usually bit for bit); the other norms are plain running sums.
#include "optim/clip_grad.h"

#include <cmath>
#include <limits>
#include <string>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/optim_kernels.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/module.h"
#include "optim/optim_loops.h"

namespace tg::optim {

// sum_i x_i^2 of x (N), as PyTorch's CPU kernel sums it: eight running sums (one per lane of
// its vector kernel), lane j taking the squares of x[j], x[8 + j], ... over the whole blocks of
// eight; the eight added up in order; then the remaining squares one by one. Each
// square-and-add is one fused multiply-add.
template <class T>
T sum_of_squares_reference(const T* x, int64_t n) {
  const int64_t whole_blocks = n / 8 * 8;  // the elements in whole blocks of eight
  T lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < whole_blocks; ++i) lane[i % 8] = std::fma(x[i], x[i], lane[i % 8]);
  T sum = lane[0];
  for (int j = 1; j < 8; ++j) sum = sum + lane[j];
  for (int64_t i = whole_blocks; i < n; ++i) sum = std::fma(x[i], x[i], sum);
  return sum;
}
template float sum_of_squares_reference<float>(const float*, int64_t);
template double sum_of_squares_reference<double>(const double*, int64_t);

namespace {

// ||x||_p of x (N), in T.
template <class T>
T vector_norm(const T* x, int64_t n, double p) {
  if (p == 2.0) return std::sqrt(fast_kernels() ? kernels::sum_of_squares(x, n) : sum_of_squares_reference(x, n));
  if (std::isinf(p)) {  // max |x| (p = inf) or min |x| (p = -inf); NaN wins
    T best = p > 0 ? T(0) : std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      const T a = std::abs(x[i]);
      if (std::isnan(a) || (p > 0 ? a > best : a < best)) best = a;
      if (std::isnan(best)) break;
    }
    return best;
  }
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T a = std::abs(x[i]);
    if (p == 0.0) {
      sum = sum + (a != 0 ? T(1) : T(0));  // the number of non-zeros
    } else if (p == 1.0) {
      sum = sum + a;
    } else {
      sum = sum + std::pow(a, static_cast<T>(p));
    }
  }
  return p == 0.0 || p == 1.0 ? sum : std::pow(sum, T(1) / static_cast<T>(p));
}

// The total p-norm of the gradients: the norm of their norms, as PyTorch's clip_grad_norm_.
template <class T>
T total_norm(const std::vector<Tensor>& grads, double norm_type) {
  std::vector<T> norms;  // (number of gradients)
  for (const Tensor& g : grads) {
    const Tensor c = g.contiguous();
    norms.push_back(vector_norm(c.data_ptr<T>(), c.numel(), norm_type));
  }
  return vector_norm(norms.data(), static_cast<int64_t>(norms.size()), norm_type);
}

template <class T>
Tensor clip(const std::vector<Tensor>& grads, double max_norm, double norm_type, bool error_if_nonfinite) {
  const T total = total_norm<T>(grads, norm_type);
  if (error_if_nonfinite && !std::isfinite(total)) {
    throw Error("clip_grad_norm_: the total norm of order " + nn::python_float(norm_type) +
                " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error "
                "and scale the gradients by the non-finite norm anyway, set error_if_nonfinite=false");
  }
  // max_norm / (total + 1e-6), computed as PyTorch's float / tensor is: reciprocal, then times.
  const T coef = (T(1) / (total + static_cast<T>(1e-6))) * static_cast<T>(max_norm);
  const T clamped = std::isnan(coef) || coef < T(1) ? coef : T(1);  // min(coef, 1); NaN stays
  NoGradGuard no_grad;
  for (Tensor g : grads) g.mul_(static_cast<double>(clamped));
  return scalar_tensor(static_cast<double>(total), dtype_of<T>());
}

// The defined gradients of params, all of one floating dtype (else an error naming `op`).
std::vector<Tensor> gradients_of(const std::vector<Tensor>& params, const char* op) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  for (const Tensor& g : grads) {
    if (g.dtype() != grads[0].dtype() || !g.is_floating_point()) {
      throw Error(std::string(op) + ": all gradients must have one floating dtype, got " +
                  dtype_name(grads[0].dtype()) + " and " + dtype_name(g.dtype()));
    }
  }
  return grads;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite) {
  const std::vector<Tensor> grads = gradients_of(params, "clip_grad_norm_");
  if (grads.empty()) return scalar_tensor(0.0);
  if (grads[0].dtype() == kFloat32) return clip<float>(grads, max_norm, norm_type, error_if_nonfinite);
  return clip<double>(grads, max_norm, norm_type, error_if_nonfinite);
}

Tensor grad_norm(const std::vector<Tensor>& params, double norm_type) {
  const std::vector<Tensor> grads = gradients_of(params, "grad_norm");
  if (grads.empty()) return scalar_tensor(0.0);
  if (grads[0].dtype() == kFloat32) return scalar_tensor(total_norm<float>(grads, norm_type), kFloat32);
  return scalar_tensor(total_norm<double>(grads, norm_type), kFloat64);
}

}  // namespace tg::optim
