// autograd/kernels/gemm.h — matmul's fast path: BLIS's gemm and gemv, gemv.h's and small_gemm's
// kernels, on the operands' own memory.
//
// It speeds up matmul_reference (autograd/ops/matmul.cpp), its test oracle: the same batched
// product out = a @ b, float32 and float64, summed in the operand type in each kernel's blocked
// order instead of in double, so the two agree to float rounding.
//
// Why views cost nothing here: BLIS reads each matrix through a row stride and a column stride,
// so a transposed view (x.t(), k.transpose(-2, -1)) is the same memory with the two strides
// swapped, and a batch dim of stride 0 (broadcast) just hands the same pointer to every gemm.
// An operand is copied only when BLIS cannot read its layout (see blis_can_read in gemm.cpp).
//
// Read batched_gemm first: the comment above it says which kernel runs which product. Under
// autocast (autograd/autocast.h), batched_gemm_bf16 runs the same batches on bf16_gemm.h's
// kernels instead: bfloat16 inputs, float32 sums.
#pragma once
#include <cstdint>
#include <optional>

#include "autograd/kernels/bf16_gemm.h"
#include "autograd/tensor.h"

namespace tg::kernels {

// out (batch.., M, N) contiguous = a (batch_a.., M, K) @ b (batch_b.., K, N), where the batch
// dims of a and b broadcast to `batch`. a and b are matrices (1-D operands already promoted),
// float32 or float64 like out.
//
// Which kernel runs one (M,K) @ (K,N) product (gemm.cpp: gemm):
//   M = 1 or N = 1           a matrix-vector product, the matrix read in place (no packing):
//                            gemv.h's row-by-row kernel when its rows are contiguous, else BLIS's
//   float32, M <= 4 rows     gemv.h's kernel for several vectors: a batch's decode step, x @ w^T
//   times a weight of 1 MiB  with w (N, K) of contiguous rows, reads the weight once, in place
//   or more, read as w^T
//   float32, small enough    small_gemm.h's register blocks (BLIS's fixed cost per call is more
//                            than the arithmetic: attention's per-head products)
//   anything else            BLIS's gemm, threaded for large products
void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Shape& batch, int64_t M, int64_t N,
                  int64_t K);

// The same product with the inputs rounded to bfloat16 and float32 sums (kernels/bf16_gemm.h):
// out float32; a and b float32 or bfloat16, any strides.
void batched_gemm_bf16(const Tensor& out, const Tensor& a, const Tensor& b, const Shape& batch, int64_t M,
                       int64_t N, int64_t K);
// out (R, N) = x (R, K) @ w^T for an int8 weight w (N, K) with its scales (N, K / group)
// (ops/quantize.cpp): the bits batched_gemm gives x times the dequantized weight's transpose, the
// weight dequantized as it is read (gemm.cpp: gemm_widened). x and out contiguous float32.
void gemm_int8_weight(const Tensor& out, const Tensor& x, const Tensor& values, const Tensor& scales);

// One product written into a block of a larger matrix: out (M, N) = a (M, K) @ b (K, N), all
// 2-D, out's rows contiguous (stride(1) == 1) at any row stride. The same kernel and the same sums
// as batched_gemm (gemm_bf16_into: batched_gemm_bf16) on one matrix, without a result to copy.
// gemm_bf16_into also takes a bias (N), float32 and contiguous, or undefined: out = a @ b + bias,
// the bits of the product and then linear's add (bf16_gemm.h adds it before the store).
void gemm_into(const Tensor& out, const Tensor& a, const Tensor& b);
void gemm_bf16_into(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias = Tensor());

// Which bfloat16 kernel batched_gemm_bf16 runs: bf16_gemm::best_kernel(), or the one
// TG_BF16_KERNEL names (avx512_bf16 or fma; anything else is an Error at the first bfloat16
// product, see runtime/environment.h). set_bf16_kernel changes it for the whole
// process (an Error if the CPU cannot run it).
bf16_gemm::Kernel bf16_kernel();
void set_bf16_kernel(bf16_gemm::Kernel kernel);

// How fast this machine's float32 and bfloat16 products run, in GFLOP/s: one (512, 512) @
// (512, 512) product each, as matmul runs it (gemm_into, gemm_bf16_into on bf16_kernel()), the
// best of 3 at the current thread count. Measured on the first call (a few tens of
// milliseconds), then remembered for the process. train_gpt --precision bf16 says when
// bfloat16 is the slower one (a CPU whose bfloat16 instruction runs at half the float32 rate, or
// one without it, where the FMA kernel emulates it).
struct ProductSpeeds {
  double float32_gflops = 0, bfloat16_gflops = 0;
};
const ProductSpeeds& product_speeds();

// t (d0, ..., dn-2, C) seen as one matrix (R, C), R = d0*...*dn-2, when memory allows it without
// a copy: the leading dims must step through memory as one dim would. A view with no autograd
// state. (A batch of products with one shared matrix is then one product: BLIS runs one large
// gemm faster than many small ones.)
std::optional<Tensor> fold_leading_dims(const Tensor& t);

// What the last gemm call on this thread was given (for tests that prove a view was passed to
// BLIS as it is, not copied). a and b point at element [0,0] of each operand. (One layout is
// still copied after this point: a b stored by columns with at most 64 rows, which BLIS reads
// slowly; gemm.cpp says why.)
struct GemmCall {
  const void* a = nullptr;
  const void* b = nullptr;
  int64_t rsa = 0, csa = 0, rsb = 0, csb = 0;
  int64_t m = 0, n = 0, k = 0;
};
const GemmCall& last_gemm_call();

}  // namespace tg::kernels
