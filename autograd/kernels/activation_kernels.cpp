// autograd/kernels/activation_kernels.cpp — the float32 loops of activation_kernels.h: one
// elementwise loop, written once, with the element formula inlined, compiled for every
// instruction set by kernels::run_on.
//
// Why they exist: thread CPU time on a (2048, 512) float32 tensor, the GPT's FF hidden layer
// (2 cores of an AVX-512 server):
//                       std::tanh (ref.) baseline (SSE2, 4 floats a step)   AVX2 (8 a step)
//   gelu(tanh) forward      20.5 ms           2.2 ms                          1.0 ms
//   gelu(tanh) backward     23.3 ms           2.9 ms                          1.4 ms
//   tanh forward            15.0 ms           1.5 ms                          0.7 ms
// The loops run the AVX-512 copy where the CPU has it: GELU became 8-13% of a training step once
// the matrix products ran in bfloat16, and the AVX-512 copy made the small GPT's whole training
// run 5% faster in bf16 and the medium one's 2% in fp32 (interleaved A/B against the AVX2 copy).
#include "autograd/kernels/activation_kernels.h"

#include "autograd/kernels/vec_math.h"

namespace tg::activation_kernels {
namespace {

// vec_math's, as function objects to pass to the element formulas.
struct FastTanh {
  float operator()(float v) const { return vec_math::tanh(v); }
};
struct FastExp {
  float operator()(float v) const { return vec_math::exp(v); }
};

// The element functions, as types the loops below are instantiated with.
struct GeluTanh {
  float operator()(float x) const { return gelu_tanh_value(x, FastTanh{}); }
};
struct GeluTanhGrad {
  float operator()(float g, float x) const { return g * gelu_tanh_derivative(x, FastTanh{}); }
};
struct Sigmoid {
  float operator()(float x) const { return sigmoid_value(x, FastExp{}); }
};

// out[i] = F()(a[i]) and out[i] = F()(a[i], b[i]): one loop each, vectorised for each set.
template <class F>
[[gnu::always_inline]] inline void map_unary(float* out, const float* a, int64_t N) {
  for (int64_t i = 0; i < N; ++i) out[i] = F{}(a[i]);
}
template <class F>
[[gnu::always_inline]] inline void map_binary(float* out, const float* a, const float* b, int64_t N) {
  for (int64_t i = 0; i < N; ++i) out[i] = F{}(a[i], b[i]);
}

// A float32 value stored as float32, or rounded to bfloat16 (the bits of BFloat16's constructor).
inline void store(float& out, float v) { out = v; }
inline void store(BFloat16& out, float v) { out.bits = BFloat16::round_to_bits(v); }

[[gnu::always_inline]] inline void gelu_forward_rounded_loop(BFloat16* out, const float* inp, int64_t N) {
  for (int64_t i = 0; i < N; ++i) store(out[i], GeluTanh{}(inp[i]));
}

template <class Out>
[[gnu::always_inline]] inline void gelu_value_and_backward_loop(Out* out, float* dinp, const float* inp, int64_t N) {
  for (int64_t i = 0; i < N; ++i) {
    const float x = inp[i], t = vec_math::tanh(gelu_tanh_inner(x));
    store(out[i], gelu_tanh_value_at(x, t));
    dinp[i] = dinp[i] * gelu_tanh_derivative_at(x, t);
  }
}

}  // namespace

void gelu_tanh_value_and_backward(float* out, float* dinp, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<gelu_value_and_backward_loop<float>>(isa, out, dinp, inp, N);
}
void gelu_tanh_value_and_backward(BFloat16* out, float* dinp, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<gelu_value_and_backward_loop<BFloat16>>(isa, out, dinp, inp, N);
}

void gelu_tanh_forward(float* out, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<map_unary<GeluTanh>>(isa, out, inp, N);
}
void gelu_tanh_forward_rounded(BFloat16* out, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<gelu_forward_rounded_loop>(isa, out, inp, N);
}

void gelu_tanh_backward(float* dinp, const float* dout, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<map_binary<GeluTanhGrad>>(isa, dinp, dout, inp, N);
}

void tanh_forward(float* out, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<map_unary<FastTanh>>(isa, out, inp, N);
}

void sigmoid_forward(float* out, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<map_unary<Sigmoid>>(isa, out, inp, N);
}

}  // namespace tg::activation_kernels
