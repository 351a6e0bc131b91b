// autograd/kernels/activation_kernels.cpp — the float32 loops of activation_kernels.h: one
// elementwise loop, written once, with the element formula inlined, compiled for every
// instruction set by kernels::run_on.
//
// Why they exist: on the GPT's FF hidden layer the AVX2 copy runs gelu(tanh) and tanh about twenty
// times as fast as the std::tanh reference, and twice as fast as the baseline SSE2 copy. The loops
// run the AVX-512 copy where the CPU has it: GELU became 8-13% of a training step once the matrix
// products ran in bfloat16, and the AVX-512 copy makes training a few percent faster still.
// (Measured in docs/performance.md.)
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
struct Silu {
  float operator()(float x) const { return silu_value(x, FastExp{}); }
};
struct SiluGrad {
  float operator()(float g, float x) const { return g * silu_derivative(x, FastExp{}); }
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

[[gnu::always_inline]] inline void swiglu_forward_loop(float* out, const float* gate, const float* up, int64_t N) {
  for (int64_t i = 0; i < N; ++i) out[i] = Silu{}(gate[i]) * up[i];
}

[[gnu::always_inline]] inline void swiglu_backward_loop(float* dgate, float* dup, const float* dout, const float* gate,
                                                        const float* up, int64_t N) {
  for (int64_t i = 0; i < N; ++i) {
    const float g = dout[i], a = gate[i];
    dgate[i] = SiluGrad{}(g * up[i], a);
    dup[i] = g * Silu{}(a);
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

void silu_forward(float* out, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<map_unary<Silu>>(isa, out, inp, N);
}

void silu_backward(float* dinp, const float* dout, const float* inp, int64_t N, Isa isa) {
  kernels::run_on<map_binary<SiluGrad>>(isa, dinp, dout, inp, N);
}

void swiglu_forward(float* out, const float* gate, const float* up, int64_t N, Isa isa) {
  kernels::run_on<swiglu_forward_loop>(isa, out, gate, up, N);
}

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t N,
                     Isa isa) {
  kernels::run_on<swiglu_backward_loop>(isa, dgate, dup, dout, gate, up, N);
}

}  // namespace tg::activation_kernels
