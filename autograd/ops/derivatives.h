// autograd/ops/derivatives.h — the backward formulas of matmul and gelu as plain functions, for
// a fused op that stands for a composition of them (ops/feed_forward.cpp) and must give the
// composition's gradients bit for bit: it calls the very code the separate ops' tape entries
// run, not a copy of it. None of these record anything.
#pragma once
#include <cstdint>
#include <string>

#include "autograd/tensor.h"

namespace tg {

// matmul (ops/matmul.cpp), out = a @ b with a of a_dim dims and b of b_dim dims, g = dL/dout:
//   da = g @ b^T, shaped (batch.., M, K), or (batch.., K) for a 1-D a; the tape sums it to a's shape
Tensor matmul_backward_a(const Tensor& g, const Tensor& b, int64_t a_dim);
//   db = a^T @ g, shaped like b, or with batch dims the tape sums away
Tensor matmul_backward_b(const Tensor& g, const Tensor& a, int64_t b_dim);
// matmul's forward as plain loops, summed in double: the path with fast_kernels() off (and for
// int64), and the test oracle of the fast path (kernels/gemm.h). Records nothing.
Tensor matmul_reference(const Tensor& a, const Tensor& b);

// gelu (ops/activation.cpp): dx = g * gelu'(x), approximate "none" or "tanh"
Tensor gelu_backward(const Tensor& grad_out, const Tensor& x, const std::string& approximate);

}  // namespace tg
