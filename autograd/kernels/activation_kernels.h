// autograd/kernels/activation_kernels.h — the float32 loops behind tanh, sigmoid, gelu(tanh),
// silu and SwiGLU's product (autograd/ops/activation.cpp) and the element formulas they share with
// the plain `_reference` functions there.
//
// Buffers are contiguous, N elements; outputs first, then inputs; gradients prefixed d.
//   gelu tanh  out = x/2 (1 + tanh(k (x + c x^3)))                     k = sqrt(2/pi), c = 0.044715
//              dinp = dout * (1/2 (1 + t) + x/2 (1 - t^2) k (1 + 3 c x^2))     t = tanh(k (x + c x^3))
//   tanh       out = tanh x
//   sigmoid    out = 1 / (1 + e^-x)
//   silu       out = x / (1 + e^-x)        dinp = dout * s (1 + x (1 - s)),  s = sigmoid(x)
//   swiglu     out = silu(gate) * up       dgate = (dout * up) * silu'(gate), dup = dout * silu(gate)
// (tanh's and sigmoid's backward need no exp or tanh: activation.cpp runs them as one fused
// elementwise pass for every dtype.) The fast loops differ from the `_reference` functions only in
// exp and tanh: vec_math's (<= 1 and 2 ulp, and vectorised) in place of std::exp and std::tanh. The
// gelu backward is one pass: no temporary holding the derivative, no separate multiply by dout.
#pragma once
#include <cmath>
#include <cstdint>

#include "autograd/dtype.h"
#include "autograd/kernels/isa.h"

namespace tg::activation_kernels {

// Every copy of a loop (kernels::run_on, isa.h) gives the same bits (see vec_math.h). The
// loops run the widest copy the CPU has (activation_kernels.cpp says why).
using kernels::Isa;
inline Isa best_isa() { return kernels::best_isa(Isa::kAvx512); }

// --- the element formulas, for any floating T and any tanh --------------------------------------

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluCubic = 0.044715;

// The argument of gelu(tanh)'s tanh: sqrt(2/pi) (x + c x^3).
template <class T>
T gelu_tanh_inner(T x) {
  return static_cast<T>(kSqrt2OverPi) * (x + static_cast<T>(kGeluCubic) * x * x * x);
}

// gelu and its derivative at x, given t = tanh(gelu_tanh_inner(x)).
template <class T>
T gelu_tanh_value_at(T x, T t) {
  return static_cast<T>(0.5) * x * (static_cast<T>(1) + t);
}
template <class T>
T gelu_tanh_derivative_at(T x, T t) {
  const T k = static_cast<T>(kSqrt2OverPi), c = static_cast<T>(kGeluCubic);
  return static_cast<T>(0.5) * (1 + t) + static_cast<T>(0.5) * x * (1 - t * t) * k * (1 + 3 * c * x * x);
}

template <class T, class Tanh>
T gelu_tanh_value(T x, Tanh tanh) {
  return gelu_tanh_value_at(x, tanh(gelu_tanh_inner(x)));
}

// d/dx gelu_tanh_value. Recomputes t from x: saving x alone for backward keeps one tensor
// alive instead of two, and the tanh is cheap next to reading them.
template <class T, class Tanh>
T gelu_tanh_derivative(T x, Tanh tanh) {
  return gelu_tanh_derivative_at(x, tanh(gelu_tanh_inner(x)));
}

template <class T, class Exp>
T sigmoid_value(T x, Exp exp) {
  return static_cast<T>(1) / (static_cast<T>(1) + exp(-x));
}

// silu(x) = x / (1 + e^-x), as PyTorch's kernel writes it, and its derivative s (1 + x (1 - s)),
// s = sigmoid(x); swiglu's steps are these and a multiply (autograd/ops/activation.cpp).
template <class T, class Exp>
T silu_value(T x, Exp exp) {
  return x / (static_cast<T>(1) + exp(-x));
}
template <class T, class Exp>
T silu_derivative(T x, Exp exp) {
  const T s = sigmoid_value(x, exp);
  return s * (static_cast<T>(1) + x * (static_cast<T>(1) - s));
}

// --- float32 loops ------------------------------------------------------------------------------

void gelu_tanh_forward(float* out, const float* inp, int64_t N, Isa isa = best_isa());
// The same values rounded to bfloat16 as they are stored: for autocast, whose next product
// rounds them anyway (half the bytes written, and read back).
void gelu_tanh_forward_rounded(BFloat16* out, const float* inp, int64_t N, Isa isa = best_isa());
void gelu_tanh_backward(float* dinp, const float* dout, const float* inp, int64_t N, Isa isa = best_isa());
// out = gelu(inp), and dinp = dout * gelu'(inp) in place of dout, in one pass, one tanh per
// element: the bits of gelu_tanh_forward and gelu_tanh_backward. For feed_forward's backward,
// which needs both.
void gelu_tanh_value_and_backward(float* out, float* dinp, const float* inp, int64_t N, Isa isa = best_isa());
void gelu_tanh_value_and_backward(BFloat16* out, float* dinp, const float* inp, int64_t N, Isa isa = best_isa());
void tanh_forward(float* out, const float* inp, int64_t N, Isa isa = best_isa());
void sigmoid_forward(float* out, const float* inp, int64_t N, Isa isa = best_isa());
void silu_forward(float* out, const float* inp, int64_t N, Isa isa = best_isa());
void silu_backward(float* dinp, const float* dout, const float* inp, int64_t N, Isa isa = best_isa());
// swiglu: out = silu(gate) * up; dgate = (dout * up) * silu'(gate), dup = dout * silu(gate): the
// bits of silu_forward then a multiply, and of a multiply's backward then silu_backward.
void swiglu_forward(float* out, const float* gate, const float* up, int64_t N, Isa isa = best_isa());
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t N,
                     Isa isa = best_isa());

}  // namespace tg::activation_kernels
