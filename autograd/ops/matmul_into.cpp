// autograd/ops/matmul_into.cpp — a 2-D product written where its result belongs: into a tensor
// an op has just made, or a block of one (autograd/internal.h). The fused ops (feed_forward,
// masked_scaled_attention) write their products in place this way, with no result to allocate
// and copy. On the fast path it hands the destination to kernels/gemm.h (kernels/bf16_gemm.h
// under autocast); on the plain path it is matmul's own result copied in, so its bits are
// matmul's either way. A frozen bfloat16 weight times float32 (ops/matmul.cpp: widens_16bit) is
// matmul's result copied in on either path. It records nothing.
#include "autograd/fast_kernels.h"
#include "autograd/internal.h"
#include "autograd/kernels/gemm.h"
#include "autograd/loops.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg {

namespace {

// dst (M, N) with contiguous rows, of the product's dtype.
void check_into(const Tensor& dst, const Tensor& a, const Tensor& b, bool bf16) {
  const bool fits = a.dim() == 2 && b.dim() == 2 && dst.dim() == 2 && a.size(1) == b.size(0) &&
                    dst.size(0) == a.size(0) && dst.size(1) == b.size(1) &&
                    (dst.size(1) <= 1 || dst.stride(1) == 1);  // rows contiguous
  const bool float32_product = bf16 || a.dtype() == kBFloat16 || b.dtype() == kBFloat16 || a.dtype() == kFloat16 ||
                               b.dtype() == kFloat16;  // autocast's, or widened
  if (!fits || dst.dtype() != (float32_product ? kFloat32 : a.dtype())) {
    throw Error("matmul_into: expected dst (M, N) with contiguous rows, of the product's dtype, for a (M, K) @ b (K, N); "
                "got dst " + shape_str(dst.sizes()) + " " + dtype_name(dst.dtype()) + ", a " + shape_str(a.sizes()) +
                ", b " + shape_str(b.sizes()));
  }
}

}  // namespace

void matmul_into(const Tensor& dst, const Tensor& a, const Tensor& b) {
  check_matmul_operands(a, b);
  const bool bf16 = autocast_applies(a, b);
  check_into(dst, a, b, bf16);
  if (bf16 && fast_kernels()) {
    kernels::gemm_bf16_into(dst, a, b);
  } else if (!bf16 && fast_kernels() && a.dtype() == b.dtype() && a.dtype() != kInt64) {
    kernels::gemm_into(dst, a, b);  // (a frozen 16-bit weight, widened, takes matmul's own path below)
  } else {
    NoGradGuard no_grad;
    copy_values(dst, matmul(a, b), "matmul_into");  // the reference path: matmul's own result
  }
}

void matmul_into(const Tensor& dst, const Tensor& a, const Tensor& b, const Tensor& bias) {
  check_matmul_operands(a, b);
  const bool bf16 = autocast_applies(a, b);
  check_into(dst, a, b, bf16);
  const bool in_store = bf16 && fast_kernels() && bias.dtype() == kFloat32 && bias.dim() == 1 &&
                        bias.size(0) == dst.size(1) && bias.is_contiguous();
  if (in_store) {
    kernels::gemm_bf16_into(dst, a, b, bias);
  } else {
    NoGradGuard no_grad;
    copy_values(dst, add(matmul(a, b), bias), "matmul_into");  // the composition (its checks too)
  }
}

}  // namespace tg
