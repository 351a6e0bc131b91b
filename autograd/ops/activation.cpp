// autograd/ops/activation.cpp — tanh, sigmoid, silu, relu, gelu, and SwiGLU's product.
//
//   tanh     y = tanh x                    dx = g * (1 - y^2)
//   sigmoid  y = 1 / (1 + e^-x)            dx = g * y * (1 - y)
//   silu     y = x / (1 + e^-x) = x s(x)   dx = g * s (1 + x (1 - s)),  s = sigmoid(x)
//   swiglu   y = silu(a) * b               da = (g * b) * s (1 + a (1 - s)),  db = g * silu(a),  s = sigmoid(a)
//   relu     y = max(x, 0)                 dx = g * (y > 0)
//   gelu     y = x * Phi(x)                dx = g * (Phi(x) + x * phi(x))
//   gelu tanh  y = x/2 (1 + tanh(k (x + 0.044715 x^3))),  k = sqrt(2/pi)
//              dx = g * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3*0.044715 x^2))
//
// tanh, sigmoid, gelu(tanh), silu and swiglu also have a fast float32 path: fast_f32 below says
// when it runs.
#include <cmath>
#include <numbers>
#include <optional>
#include <type_traits>

#include "autograd/ops.h"
#include "autograd/kernels/activation_kernels.h"
#include "autograd/ops/derivatives.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/fast_kernels.h"
#include "autograd/record.h"

namespace tg {

namespace K = activation_kernels;

namespace nn_loops {

// --- the plain reference: the element formulas on std::tanh and std::exp ----------------------

template <class T>
T tanh_reference(T x) {
  return std::tanh(x);
}

template <class T>
T sigmoid_reference(T x) {
  return K::sigmoid_value(x, [](T v) { return std::exp(v); });
}

template <class T>
T gelu_tanh_reference(T x) {
  return K::gelu_tanh_value(x, [](T v) { return std::tanh(v); });
}

template <class T>
T gelu_tanh_derivative_reference(T x) {
  return K::gelu_tanh_derivative(x, [](T v) { return std::tanh(v); });
}

// SwiGLU's product, the gate of Llama's and Qwen's feed-forward: y = silu(gate) * up, element by
// element, n of them. Each element's steps are silu's and mul's, in their order, so the values
// are those of silu(gate) * up to the bit (tests/autograd/test_swiglu.cpp holds them so).
template <class T>
void swiglu_forward_reference(T* out, const T* gate, const T* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T a = gate[i];
    const T silu_a = a / (T(1) + std::exp(-a));
    out[i] = silu_a * up[i];
  }
}

// dgate = (g * up) * s (1 + gate (1 - s)) and dup = g * silu(gate), s = sigmoid(gate): mul's
// backward, then silu's.
template <class T>
void swiglu_backward_reference(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T a = gate[i], g = dout[i];
    const T silu_a = a / (T(1) + std::exp(-a));
    const T s = sigmoid_reference(a);
    dgate[i] = static_cast<T>((g * up[i]) * (s * (1 + a * (1 - s))));
    dup[i] = g * silu_a;
  }
}

template void swiglu_forward_reference<float>(float*, const float*, const float*, int64_t);
template void swiglu_forward_reference<double>(double*, const double*, const double*, int64_t);
template void swiglu_backward_reference<float>(float*, float*, const float*, const float*, const float*, int64_t);
template void swiglu_backward_reference<double>(double*, double*, const double*, const double*, const double*, int64_t);

template float tanh_reference<float>(float);
template double tanh_reference<double>(double);
template float sigmoid_reference<float>(float);
template double sigmoid_reference<double>(double);
template float gelu_tanh_reference<float>(float);
template double gelu_tanh_reference<double>(double);
template float gelu_tanh_derivative_reference<float>(float);
template double gelu_tanh_derivative_reference<double>(double);

}  // namespace nn_loops

namespace {

bool contiguous_f32(const Tensor& t) { return t.dtype() == kFloat32 && t.is_contiguous(); }

// The vectorised float32 loops run for x: the fast kernels are on and x is contiguous float32.
//
// Two paths each for tanh, sigmoid, gelu(tanh), silu and swiglu:
//   * the plain one: the `_reference` element functions above, on std::exp and std::tanh, one
//     element at a time, for any dtype and strides (integers computed in float32);
//   * with the fast kernels on (fast_kernels.h), a contiguous float32 tensor (what a model
//     passes) runs the vectorised loops of autograd/kernels/activation_kernels.h instead: the
//     same formulas on vec_math's exp and tanh, tested against the `_reference` functions.
bool fast_f32(const Tensor& x) { return fast_kernels() && contiguous_f32(x); }

// y = f(x) by a float32 loop of activation_kernels (x contiguous float32), split over the
// threads in chunks of elements (each element alone: the split changes no result).
template <class Loop>
Tensor fast_unary(const Tensor& x, Loop loop) {
  Tensor y = make_empty(x.sizes(), kFloat32);
  float* out = y.data_ptr<float>();
  const float* inp = x.data_ptr<float>();
  const K::Isa isa = K::best_isa();
  for_elements(x.numel(), [&](int64_t begin, int64_t end) { loop(out + begin, inp + begin, end - begin, isa); });
  return y;
}

// dx = loop(g, x) by a float32 loop of activation_kernels (the backward of fast_unary's ops),
// g and x float32 of one shape (copied contiguous first when they are not), split as fast_unary.
template <class Loop>
Tensor fast_backward(const Tensor& grad_out, const Tensor& saved, Loop loop) {
  const Tensor g = grad_out.contiguous(), x = saved.contiguous();
  Tensor dx = make_empty(x.sizes(), kFloat32);
  float* dinp = dx.data_ptr<float>();
  const float* dout = g.data_ptr<float>();
  const float* inp = x.data_ptr<float>();
  const K::Isa isa = K::best_isa();
  for_elements(x.numel(), [&](int64_t begin, int64_t end) { loop(dinp + begin, dout + begin, inp + begin, end - begin, isa); });
  return dx;
}

// dx = g * dydx(v) elementwise in one pass, in g's floating dtype: the backward of an op whose
// derivative is a function of the tensor v it saved (its input or its output). Every backward
// here computes g * y' directly (no temporary y', no separate multiply).
template <class F>
Tensor grad_times(const Tensor& grad_out, const Tensor& saved, const char* op, F dydx) {
  const Tensor v = saved.dtype() == grad_out.dtype() ? saved : saved.to(grad_out.dtype());
  Tensor dx = make_empty(grad_out.sizes(), grad_out.dtype());
  visit_floating(grad_out.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_binary<T, T, T>(dx, grad_out, v, [&](T g, T x) { return static_cast<T>(g * dydx(x)); });
  });
  return dx;
}

}  // namespace

Tensor tanh(const Tensor& x) {
  check_defined(x, "tanh", "input");
  Tensor y = fast_f32(x) ? fast_unary(x, K::tanh_forward)
                         : elementwise_unary(x, "tanh", [](auto v) { return nn_loops::tanh_reference(v); });
  record("TanhBackward0", {x}, y, {y}, [](const BackwardArgs& ctx) {
    return Grads{grad_times(ctx.grad_out, ctx.saved[0], "tanh", [](auto t) { return 1 - t * t; })};
  });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  check_defined(x, "sigmoid", "input");
  Tensor y = fast_f32(x) ? fast_unary(x, K::sigmoid_forward)
                         : elementwise_unary(x, "sigmoid", [](auto v) { return nn_loops::sigmoid_reference(v); });
  record("SigmoidBackward0", {x}, y, {y}, [](const BackwardArgs& ctx) {
    return Grads{grad_times(ctx.grad_out, ctx.saved[0], "sigmoid", [](auto s) { return s * (1 - s); })};
  });
  return y;
}

// silu (swish): the gate of Llama's and Qwen's SwiGLU feed-forward. Written x / (1 + e^-x), as
// PyTorch's kernel; float32 takes activation_kernels' loops with the fast kernels on.
Tensor silu(const Tensor& x) {
  check_defined(x, "silu", "input");
  // any float32 layout takes the fast loops (a copy first when strided), so that swiglu, which
  // reads its inputs contiguous, keeps silu's bits
  const bool fast = fast_kernels() && x.dtype() == kFloat32;
  Tensor y = fast ? fast_unary(x.contiguous(), K::silu_forward)
                  : elementwise_unary(x, "silu", [](auto v) { return v / (decltype(v)(1) + std::exp(-v)); });
  record("SiluBackward0", {x}, y, {x}, [](const BackwardArgs& ctx) {
    const Tensor& saved = ctx.saved[0];
    if (fast_kernels() && saved.dtype() == kFloat32 && ctx.grad_out.dtype() == kFloat32 &&
        ctx.grad_out.sizes() == saved.sizes())
      return Grads{fast_backward(ctx.grad_out, saved, K::silu_backward)};
    return Grads{grad_times(ctx.grad_out, saved, "silu", [](auto v) {
      const auto s = nn_loops::sigmoid_reference(v);
      return s * (1 + v * (1 - s));
    })};
  });
  return y;
}

// silu(gate) * up as one op: one pass each way instead of silu's and mul's two, and only gate and
// up kept for backward (not silu's output besides). The loops are the plain ones above, or for
// float32 with the fast kernels on, activation_kernels' (vec_math's exp, as silu's own fast path:
// still silu(gate) * up to the bit); split over the threads by elements (which never changes a
// result).
Tensor swiglu(const Tensor& gate, const Tensor& up) {
  check_defined(gate, "swiglu", "gate");
  check_defined(up, "swiglu", "up");
  if (gate.sizes() != up.sizes() || gate.dtype() != up.dtype()) {
    throw Error("swiglu: expected gate and up of one shape and dtype, got " + shape_str(gate.sizes()) + " " +
                dtype_name(gate.dtype()) + " and " + shape_str(up.sizes()) + " " + dtype_name(up.dtype()));
  }
  const Tensor a = gate.contiguous(), b = up.contiguous();
  Tensor y = make_empty(a.sizes(), a.dtype());
  visit_floating(a.dtype(), "swiglu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data_ptr<T>();
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    const bool fast = std::is_same_v<T, float> && fast_kernels();
    for_elements(a.numel(), [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        if (fast) return K::swiglu_forward(out + begin, pa + begin, pb + begin, end - begin);
      }
      nn_loops::swiglu_forward_reference<T>(out + begin, pa + begin, pb + begin, end - begin);
    });
  });
  record("SwigluBackward0", {gate, up}, y, {a, b}, [](const BackwardArgs& ctx) {
    const Tensor g = ctx.grad_out.contiguous();
    const Tensor& a = ctx.saved[0];
    const Tensor& b = ctx.saved[1];
    Tensor da = make_empty(a.sizes(), a.dtype()), db = make_empty(b.sizes(), b.dtype());
    visit_floating(g.dtype(), "swiglu_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* pda = da.data_ptr<T>();
      T* pdb = db.data_ptr<T>();
      const T* pg = g.data_ptr<T>();
      const T* pa = a.data_ptr<T>();
      const T* pb = b.data_ptr<T>();
      const bool fast = std::is_same_v<T, float> && fast_kernels();
      for_elements(g.numel(), [&](int64_t begin, int64_t end) {
        if constexpr (std::is_same_v<T, float>) {
          if (fast) return K::swiglu_backward(pda + begin, pdb + begin, pg + begin, pa + begin, pb + begin, end - begin);
        }
        nn_loops::swiglu_backward_reference<T>(pda + begin, pdb + begin, pg + begin, pa + begin, pb + begin, end - begin);
      });
    });
    return Grads{da, db};
  });
  return y;
}

Tensor relu(const Tensor& x) {
  check_defined(x, "relu", "input");
  if (x.dtype() == kInt64) return integer_unary(x, [](int64_t v) { return v > 0 ? v : int64_t{0}; });
  Tensor y = elementwise_unary(x, "relu", [](auto v) {
    using T = decltype(v);
    return v > T(0) ? v : (std::isnan(v) ? v : T(0));
  });
  record("ReluBackward0", {x}, y, {y}, [](const BackwardArgs& ctx) {
    return Grads{grad_times(ctx.grad_out, ctx.saved[0], "relu", [](auto v) {
      using T = decltype(v);
      return static_cast<T>(v > T(0));
    })};
  });
  return y;
}

Tensor gelu_backward(const Tensor& grad_out, const Tensor& x, const std::string& approximate) {
  if (approximate == "tanh") {
    if (fast_f32(x) && contiguous_f32(grad_out) && grad_out.sizes() == x.sizes())
      return fast_backward(grad_out, x, K::gelu_tanh_backward);
    return grad_times(grad_out, x, "gelu", [](auto v) { return nn_loops::gelu_tanh_derivative_reference(v); });
  }
  return grad_times(grad_out, x, "gelu", [](auto v) {
    using T = decltype(v);
    const T cdf = static_cast<T>(0.5) * (1 + std::erf(v * static_cast<T>(std::numbers::sqrt2 / 2)));
    const T pdf =
        std::exp(static_cast<T>(-0.5) * v * v) * static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    return cdf + v * pdf;
  });
}

std::optional<Tensor> gelu_tanh_value_and_backward_(const Tensor& x, const Tensor& grad, ScalarType value_dtype) {
  if (!fast_f32(x) || !contiguous_f32(grad) || grad.sizes() != x.sizes()) return std::nullopt;
  Tensor y = make_empty(x.sizes(), value_dtype);
  float* dinp = grad.data_ptr<float>();
  const float* inp = x.data_ptr<float>();
  for_elements(x.numel(), [&](int64_t begin, int64_t end) {
    if (value_dtype == kBFloat16) {
      K::gelu_tanh_value_and_backward(y.data_ptr<BFloat16>() + begin, dinp + begin, inp + begin, end - begin);
    } else {
      K::gelu_tanh_value_and_backward(y.data_ptr<float>() + begin, dinp + begin, inp + begin, end - begin);
    }
  });
  return y;
}

std::optional<Tensor> gelu_tanh_rounded_to_bf16(const Tensor& x) {
  if (!fast_f32(x)) return std::nullopt;
  Tensor y = make_empty(x.sizes(), kBFloat16);
  BFloat16* out = y.data_ptr<BFloat16>();
  const float* inp = x.data_ptr<float>();
  for_elements(x.numel(), [&](int64_t begin, int64_t end) { K::gelu_tanh_forward_rounded(out + begin, inp + begin, end - begin); });
  return y;
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh") {
    throw Error("gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
  }
  check_defined(x, "gelu", "input");
  Tensor y;
  if (approximate == "tanh") {
    y = fast_f32(x) ? fast_unary(x, K::gelu_tanh_forward)
                    : elementwise_unary(x, "gelu", [](auto v) { return nn_loops::gelu_tanh_reference(v); });
  } else {
    y = elementwise_unary(x, "gelu", [](auto v) {
      using T = decltype(v);
      return v * static_cast<T>(0.5) * (static_cast<T>(1) + std::erf(v * static_cast<T>(std::numbers::sqrt2 / 2)));
    });
  }
  // Saves x only (gelu' needs x, not y) and recomputes tanh in backward: keeping t as well
  // would hold a second (B,T,4C) tensor per GPT block until backward, for a tanh that costs
  // about as much as reading that tensor back.
  record("GeluBackward0", {x}, y, {x}, [approximate](const BackwardArgs& ctx) {
    return Grads{gelu_backward(ctx.grad_out, ctx.saved[0], approximate)};
  });
  return y;
}

}  // namespace tg
