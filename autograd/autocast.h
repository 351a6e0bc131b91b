// autograd/autocast.h — mixed precision: matrix products in bfloat16, everything else in float32.
//
//   {
//     tg::AutocastGuard autocast(tg::kBFloat16);   // as torch.autocast("cpu", dtype=torch.bfloat16)
//     Tensor loss = cross_entropy(model.forward(x), y);
//   }
//   loss.backward();                                // each op's backward uses its forward's mode
//
// Read AutocastGuard below for what is rounded and what stays float32; the bfloat16 products
// themselves are in kernels/bf16_gemm.h.
#pragma once
#include "autograd/dtype.h"

namespace tg {

// kBFloat16 under an AutocastGuard(kBFloat16) on this thread, else kFloat32.
ScalarType autocast_dtype();

// While alive, this thread's matrix products run in `dtype`: kBFloat16 turns autocast on,
// kFloat32 turns it off (inside an outer guard). Any other dtype is an Error.
//
// Under kBFloat16, matmul and the ops made of it (linear, feed_forward,
// masked_scaled_attention) round their float32 inputs to bfloat16 and sum the products in float32
// (kernels/bf16_gemm.h), in forward and in backward, as PyTorch's CPU autocast runs its matmuls.
// Their gradients round the incoming gradient to bfloat16 too: da = bf16(g) @ bf16(b)^T.
// Everything else stays float32: the results of those products, softmax, layer_norm, gelu,
// cross_entropy, the residual adds, the parameters and their gradients, and the optimizer.
// float64 operands are never rounded (PyTorch's autocast leaves them alone as well).
//
// Where tapegrad differs from PyTorch: PyTorch's autocast returns a matmul's result in bfloat16,
// so the ops after it (a bias add, gelu, a residual add) see bfloat16 values and the next matmul
// reads them as they are. tapegrad keeps every result float32 and rounds only a product's
// inputs. Fewer roundings, so tapegrad's bf16 run is slightly closer to float32 than PyTorch's.
//
// Memory: an input that is not a leaf (an activation) is kept for backward as its bfloat16 copy,
// half the bytes of float32; parameters are kept as they are.
//
// The mode is per thread, like NoGradGuard. Ops that run their work on several threads carry the
// caller's mode into them.
class AutocastGuard {
 public:
  explicit AutocastGuard(ScalarType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  ScalarType previous_;
};

}  // namespace tg
