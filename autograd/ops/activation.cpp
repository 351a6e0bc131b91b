// autograd/ops/activation.cpp — tanh, sigmoid, relu, gelu.
//
//   tanh     y = tanh x                    dx = g * (1 - y^2)
//   sigmoid  y = 1 / (1 + e^-x)            dx = g * y * (1 - y)
//   relu     y = max(x, 0)                 dx = g * (y > 0)
//   gelu     y = x * Phi(x)                dx = g * (Phi(x) + x * phi(x))
//   gelu tanh  y = x/2 (1 + tanh(k (x + 0.044715 x^3))),  k = sqrt(2/pi)
//              dx = g * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3*0.044715 x^2))
//
// Two paths each for tanh, sigmoid and gelu(tanh):
//   * a contiguous float32 tensor (what a model passes) runs the vectorised loops of
//     activation_kernels.h, on vec_math's exp and tanh, compiled for baseline x86-64 and for
//     AVX2 and picked at run time;
//   * anything else (float64, strided views, integers promoted to float32) runs the plain
//     elementwise loop on std::exp and std::tanh: the same formulas, the twin the fast loops
//     are tested against.
// Every backward is one elementwise pass computing g * y' directly (no temporary y', no
// separate multiply).
#include <cmath>
#include <numbers>

#include "autograd/ops.h"
#include "autograd/kernels/activation_kernels.h"
#include "autograd/ops/derivatives.h"
#include "autograd/loops.h"
#include "autograd/kernels/vec_math.h"
#include "autograd/record.h"

namespace tg {

namespace activation_kernels {

// Which compiled loop runs. Thread CPU time on a (2048, 512) float32 tensor, the GPT's FF
// hidden layer (2 cores of an AVX-512 server):
//                       std::tanh twin   baseline (SSE2, 4 floats a step)   AVX2 (8 a step)
//   gelu(tanh) forward      20.5 ms           2.2 ms                          1.0 ms
//   gelu(tanh) backward     23.3 ms           2.9 ms                          1.4 ms
//   tanh forward            15.0 ms           1.5 ms                          0.7 ms
// The AVX2 copy halves the time again and gives the same bits, so it is worth a second compile
// of these few loops. (An AVX-512 copy halved it once more in a trial, but that is under 1% of
// a GPT training step, for a third copy to keep identical.) The copy is picked by hand,
// target("avx2") and a CPU check, rather than by target_clones, so that a test can run both
// on one machine and compare their bits.
bool isa_available(Isa isa) {
  if (isa == Isa::kAvx2) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");  // also checks that the OS saves the YMM registers
  }
  return true;
}

Isa best_isa() {
  static const Isa best = isa_available(Isa::kAvx2) ? Isa::kAvx2 : Isa::kBaseline;
  return best;
}

namespace {

// out[i] = f(a[i]) and out[i] = f(a[i], b[i]), compiled twice. The element functions are
// inlined into each copy, so each copy is one vectorised loop for its instruction set.
template <class F>
void map_baseline(float* out, const float* a, int64_t N, F f) {
  for (int64_t i = 0; i < N; ++i) out[i] = f(a[i]);
}
template <class F>
[[gnu::target("avx2")]] void map_avx2(float* out, const float* a, int64_t N, F f) {
  for (int64_t i = 0; i < N; ++i) out[i] = f(a[i]);
}
template <class F>
void map_baseline(float* out, const float* a, const float* b, int64_t N, F f) {
  for (int64_t i = 0; i < N; ++i) out[i] = f(a[i], b[i]);
}
template <class F>
[[gnu::target("avx2")]] void map_avx2(float* out, const float* a, const float* b, int64_t N, F f) {
  for (int64_t i = 0; i < N; ++i) out[i] = f(a[i], b[i]);
}

template <class... Args>
void map_f32(Isa isa, Args... args) {
  if (isa == Isa::kAvx2) map_avx2(args...);
  else map_baseline(args...);
}

// vec_math's, as function objects to pass to the element formulas.
struct FastTanh {
  float operator()(float v) const { return vec_math::tanh(v); }
};
struct FastExp {
  float operator()(float v) const { return vec_math::exp(v); }
};

}  // namespace

void gelu_tanh_forward(float* out, const float* inp, int64_t N, Isa isa) {
  map_f32(isa, out, inp, N, [](float x) { return gelu_tanh_value(x, FastTanh{}); });
}

void gelu_tanh_backward(float* dinp, const float* dout, const float* inp, int64_t N, Isa isa) {
  map_f32(isa, dinp, dout, inp, N, [](float g, float x) { return g * gelu_tanh_derivative(x, FastTanh{}); });
}

void tanh_forward(float* out, const float* inp, int64_t N, Isa isa) {
  map_f32(isa, out, inp, N, FastTanh{});
}

void sigmoid_forward(float* out, const float* inp, int64_t N, Isa isa) {
  map_f32(isa, out, inp, N, [](float x) { return sigmoid_value(x, FastExp{}); });
}

}  // namespace activation_kernels

namespace K = activation_kernels;

namespace {

bool contiguous_f32(const Tensor& t) { return t.dtype() == kFloat32 && t.is_contiguous(); }

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

// dx = g * dydx(v) elementwise in one pass, in g's floating dtype: the backward of an op whose
// derivative is a function of the tensor v it saved (its input or its output).
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
  Tensor y = contiguous_f32(x) ? fast_unary(x, K::tanh_forward)
                               : elementwise_unary(x, "tanh", [](auto v) { return std::tanh(v); });
  record("TanhBackward0", {x}, y, {y}, [](const BackwardArgs& ctx) {
    return Grads{grad_times(ctx.grad_out, ctx.saved[0], "tanh", [](auto t) { return 1 - t * t; })};
  });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  check_defined(x, "sigmoid", "input");
  Tensor y = contiguous_f32(x) ? fast_unary(x, K::sigmoid_forward)
                               : elementwise_unary(x, "sigmoid", [](auto v) {
                                   return K::sigmoid_value(v, [](auto e) { return std::exp(e); });
                                 });
  record("SigmoidBackward0", {x}, y, {y}, [](const BackwardArgs& ctx) {
    return Grads{grad_times(ctx.grad_out, ctx.saved[0], "sigmoid", [](auto s) { return s * (1 - s); })};
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
    if (contiguous_f32(x) && contiguous_f32(grad_out) && grad_out.sizes() == x.sizes()) {
      Tensor dx = make_empty(x.sizes(), kFloat32);
      float* dinp = dx.data_ptr<float>();
      const float* dout = grad_out.data_ptr<float>();
      const float* inp = x.data_ptr<float>();
      for_elements(x.numel(), [&](int64_t begin, int64_t end) {
        K::gelu_tanh_backward(dinp + begin, dout + begin, inp + begin, end - begin);
      });
      return dx;
    }
    return grad_times(grad_out, x, "gelu", [](auto v) {
      return K::gelu_tanh_derivative(v, [](auto u) { return std::tanh(u); });
    });
  }
  return grad_times(grad_out, x, "gelu", [](auto v) {
    using T = decltype(v);
    const T cdf = static_cast<T>(0.5) * (1 + std::erf(v * static_cast<T>(std::numbers::sqrt2 / 2)));
    const T pdf = std::exp(static_cast<T>(-0.5) * v * v) * static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    return cdf + v * pdf;
  });
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh") {
    throw Error("gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
  }
  check_defined(x, "gelu", "input");
  Tensor y;
  if (approximate == "tanh") {
    y = contiguous_f32(x) ? fast_unary(x, K::gelu_tanh_forward) : elementwise_unary(x, "gelu", [](auto v) {
      return K::gelu_tanh_value(v, [](auto u) { return std::tanh(u); });
    });
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
