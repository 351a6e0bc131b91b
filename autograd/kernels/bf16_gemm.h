// autograd/kernels/bf16_gemm.h — matrix products with bfloat16 operands and float32 sums, for
// autocast's matmul (PyTorch's CPU autocast rounds a matmul's inputs to bfloat16 and accumulates
// in float32). matmul calls it under tg::AutocastGuard (ops/matmul.cpp); its `_reference` there is
// matmul_reference on the inputs rounded to bfloat16.
//
// What it computes, exactly (the order vdpbf16ps sums in, so every copy gives the same bits):
//   a = bf16(A), b = bf16(B)                      each input rounded to nearest even (dtype.h)
//   c[i][j] = 0; for k = 0, 2, 4, ... (k+1 = K counts as a zero when K is odd):
//     c[i][j] += a[i][k+1] * b[k+1][j]            the product of two bfloat16 is exact in float32,
//     c[i][j] += a[i][k]   * b[k][j]              so each step is one float32 rounding
//   with denormal inputs and sums flushed to zero (the instruction's DAZ and FTZ).
// gemm() at the bottom is the entry point; Kernel names the two copies that compute it.
#pragma once
#include <cstdint>

#include "autograd/dtype.h"

namespace tg::kernels::bf16_gemm {

// The two kernels that compute the sums at the top of the file:
//   kAvx512Bf16  AVX512_BF16's vdpbf16ps: 16 lanes, two products and two sums per lane per
//                instruction (Zen 4 and 5, Cooper Lake, Sapphire Rapids)
//   kFma         the same sums on float32 fused multiply-adds (fma(a, b, c) = round(a*b + c), with
//                a*b exact), flushing denormals in plain code as the instruction does, not through
//                a CPU mode: the same bits on any CPU, x86-64 (AVX2 or portable copy) or arm64
enum class Kernel { kAvx512Bf16, kFma };

// True when this CPU runs the kernel (kFma runs everywhere).
bool kernel_available(Kernel kernel);
// kAvx512Bf16 where the CPU has AVX512_BF16, else kFma.
Kernel best_kernel();
// "avx512_bf16" or "fma".
const char* kernel_name(Kernel kernel);

// One operand: element (i, j) at data[i * row_stride + j * col_stride], of type dtype (kFloat32
// or kBFloat16).
struct Operand {
  const void* data;
  ScalarType dtype;
  int64_t row_stride, col_stride;
};

// True when some sum of a (M,K) @ b (K,N) in bfloat16 could be a denormal, read from the smallest
// exponents of a's and b's elements: only then does the FMA kernel flush each of its sums
// (bf16_gemm.cpp says why the answer is exact when false).
bool sums_may_underflow(const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K);

// c = a @ b. With a bias (N floats, or null), c[i][j] = that sum + bias[j]: the float32 add
// linear makes after its product, made on the sums before they are stored (one pass over c
// fewer, the same bits).
//
// Arguments: outputs, inputs, sizes. A (M,K) and B (K,N) are read by strides (a transposed view is
// a stride swap, a broadcast one a stride of 0: no copy), each float32 (rounded as it is packed)
// or already bfloat16 (autocast's saved activations); C (M,N) row-major with leading dim ldc,
// overwritten. Threads split the columns in fixed panels, and each c[i][j] is summed by one thread
// in the order at the top of the file, so any thread count gives the same bits.
void gemm(float* c, int64_t ldc, const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, Kernel kernel,
          const float* bias = nullptr);

}  // namespace tg::kernels::bf16_gemm
