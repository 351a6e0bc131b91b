// autograd/ops/nn_loops.h — the plain loops behind softmax, cross_entropy, embedding,
// layer_norm, rms_norm, rotary embeddings and dropout: contiguous buffers in, buffers out (outputs first, then
// inputs, then sizes; gradients prefixed d). A `_reference` is the plain code: what runs when the
// fast kernels are off (fast_kernels.h), float64's path, and the oracle the fast loops of
// autograd/kernels/ are tested against. Embedding, rms_norm, rope and dropout have no fast loops: their
// plain loops always run.
// The shapes and the math are in the comments above each definition; all are instantiated
// for float and double.
#pragma once
#include <cstdint>

#include "autograd/dtype.h"
#include "autograd/random/generator.h"

namespace tg::nn_loops {

// softmax.cpp (softmax_kernels.h's float32 rows are tested against these)
template <class T>
double softmax_row_reference(T* y, const T* x, int64_t n);
template <class T>
void softmax_backward_row_reference(T* dx, const T* g, const T* y, int64_t n, T divisor);
template <class T>
void softmax_forward_reference(T* out, const T* inp, int64_t B, int64_t N, int64_t I, bool log_space);
template <class T>
void softmax_backward_reference(T* dinp, const T* dout, const T* out, int64_t B, int64_t N, int64_t I, bool log_space);

// activation.cpp: the element formulas on std::tanh and std::exp (activation_kernels.h's float32
// loops are tested against these)
template <class T>
T tanh_reference(T x);
template <class T>
T sigmoid_reference(T x);
template <class T>
T gelu_tanh_reference(T x);
template <class T>
T gelu_tanh_derivative_reference(T x);  // d/dx gelu_tanh_reference

// activation.cpp: SwiGLU's product, n elements
template <class T>
void swiglu_forward_reference(T* out, const T* gate, const T* up, int64_t n);
template <class T>
void swiglu_backward_reference(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n);

// loss.cpp
template <class T>
void cross_entropy_forward_reference(T* loss, double* lse, const T* logits, const int64_t* targets, int64_t N, int64_t C);
template <class T>
void cross_entropy_backward_reference(T* dlogits, const T* dloss, const T* logits, const double* lse, const int64_t* targets, int64_t N, int64_t C);

// embedding.cpp
template <class T>
void embedding_forward(T* out, const T* weight, const int64_t* idx, int64_t N, int64_t C);
template <class W>  // BFloat16 or Float16
void embedding_forward_widened(float* out, const W* weight, const int64_t* idx, int64_t N, int64_t C);
template <class T>
void embedding_backward(T* dweight, const T* dout, const int64_t* idx, int64_t N, int64_t V, int64_t C);

// layer_norm.cpp
template <class T>
void layer_norm_forward_reference(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t R, int64_t C, double eps);
template <class T>
void layer_norm_backward_reference(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* mean, const T* rstd, int64_t R, int64_t C);

// rms_norm.cpp
template <class T>
void rms_norm_forward_reference(T* out, T* rstd, const T* inp, const T* weight, int64_t R, int64_t C, double eps);
template <class T>
void rms_norm_backward_reference(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const T* rstd, int64_t R, int64_t C);

// rope.cpp
template <class T>
void rope_forward_reference(T* out, const T* inp, const T* cos, const T* sin, int64_t R, int64_t Tn, int64_t hs);
template <class T>
void rope_backward_reference(T* dinp, const T* dout, const T* cos, const T* sin, int64_t R, int64_t Tn, int64_t hs);

// dropout.cpp
template <class T>
void dropout_forward(T* out, T* noise, const T* inp, Generator& gen, int64_t N, double p);
template <class T>
void dropout_backward(T* dinp, const T* dout, const T* noise, int64_t N);

}  // namespace tg::nn_loops
