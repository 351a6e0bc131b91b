// autograd/ops/derivatives.h — backward formulas written once, for every op that needs them
// (in the spirit of PyTorch's derivatives.yaml). None of these record anything.
//
// - The elementwise arithmetic formulas, called by both the out-of-place op (add, mul, div in
//   ops/arithmetic.cpp) and its in-place twin (add_, mul_, div_ in tensor.cpp), so the two
//   cannot drift apart.
// - The formulas of matmul and gelu, for a fused op that stands for a composition of them
//   (ops/feed_forward.cpp) and must give the composition's gradients bit for bit: it calls the
//   very code the separate ops' tape entries run, not a copy of it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "autograd/tensor.h"

namespace tg {

// --- elementwise arithmetic (ops/arithmetic.cpp) --------------------------------------------------
// Each is a tape entry's backward: g = ctx.grad_out, and the op saved the tensors named, in that
// order (an in-place op saves self's value from before the write). A gradient nobody needs is
// left undefined; the tape sums a broadcast input's gradient to its shape.
//   add   out = a + alpha*b   da = g     db = alpha*g      saves nothing (sub: alpha negated)
Grads add_backward(const BackwardArgs& ctx, double alpha);
//   mul   out = a * b         da = g*b   db = g*a          saves {a, b}, each only if the other needs grad
Grads mul_backward(const BackwardArgs& ctx);
//   div   out = a / b         da = g/b   db = -g*a/b^2     saves {a (if b needs grad), b}
Grads div_backward(const BackwardArgs& ctx);
//   a tensor times or over a number s:  da = g*s,  da = g/s   saves nothing
Grads mul_scalar_backward(const BackwardArgs& ctx, double s);
Grads div_scalar_backward(const BackwardArgs& ctx, double s);

// matmul (ops/matmul.cpp), out = a @ b with a of a_dim dims and b of b_dim dims, g = dL/dout:
//   da = g @ b^T, shaped (batch.., M, K), or (batch.., K) for a 1-D a; the tape sums it to a's shape
Tensor matmul_backward_a(const Tensor& g, const Tensor& b, int64_t a_dim);
//   db = a^T @ g, shaped like b, or with batch dims the tape sums away. With b_transposed (b is a
//   matrix stored transposed: a linear layer's weight.t()), db is (g^T @ a)^T, the same sums laid
//   out as b is, so the weight's gradient comes back contiguous, not through a transposing copy.
Tensor matmul_backward_b(const Tensor& g, const Tensor& a, int64_t b_dim, bool b_transposed = false);
// Under autocast (autograd/autocast.h), an activation (a float32 non-leaf) kept only for a matrix
// product's backward is kept as its bfloat16 copy: half the memory, and the product rounds it to
// exactly those values anyway. Parameters (leaves), and anything outside autocast, are kept as
// they are. Used by matmul, feed_forward and masked_scaled_attention (ops/matmul_autocast.cpp).
Tensor kept_for_product(const Tensor& t);
// matmul's forward as plain loops, summed in double: the path with fast_kernels() off (and for
// int64), and the test oracle of the fast path (kernels/gemm.h). Records nothing.
Tensor matmul_reference(const Tensor& a, const Tensor& b);

// gelu (ops/activation.cpp): dx = g * gelu'(x), approximate "none" or "tanh"
Tensor gelu_backward(const Tensor& grad_out, const Tensor& x, const std::string& approximate);
// gelu(x, "tanh"), returned, and gelu_backward(grad, x, "tanh") written over grad, in one pass
// (one tanh per element), for contiguous float32 x and grad of one shape with the fast kernels
// on; else nullopt, grad untouched. The bits of those two ops; with value_dtype kBFloat16 the
// value is returned rounded to bfloat16. Records nothing.
std::optional<Tensor> gelu_tanh_value_and_backward_(const Tensor& x, const Tensor& grad,
                                                    ScalarType value_dtype = kFloat32);
// gelu(x, "tanh").to(kBFloat16) in one pass, for a contiguous float32 x with the fast kernels on;
// else nullopt. Records nothing. (Under autocast a product rounds its float32 operand to exactly
// these values: feed_forward hands them to it directly.)
std::optional<Tensor> gelu_tanh_rounded_to_bf16(const Tensor& x);

// masked_scaled_softmax (ops/attention.cpp) and its backward, written into tensors the caller
// made: out = the weights of the scores inp; dinp = the scores' gradient from the weights' dout
// and the weights out. Each is a contiguous (..., T_k), or a 2-D block whose rows are contiguous
// at any row stride; out may be inp and dinp may be dout (masked_scaled_attention turns its
// product buffers into P and dS in place). The ops themselves run these: the same bits. No
// checks, no tape.
void masked_scaled_softmax_into(const Tensor& out, const Tensor& inp, const Tensor& mask, int64_t d_k,
                                const MaskedSoftmaxOptions& options);
void masked_scaled_softmax_backward_into(const Tensor& dinp, const Tensor& dout, const Tensor& out, const Tensor& mask,
                                         int64_t d_k, const MaskedSoftmaxOptions& options);

}  // namespace tg
