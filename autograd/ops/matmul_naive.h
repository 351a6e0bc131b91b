// autograd/ops/matmul_naive.h — the plain twin of ops/matmul.cpp, and a peek at its BLIS calls.
//
// matmul_naive is the test oracle: the same PyTorch semantics as tg::matmul (1-D operands
// promoted, batch dims broadcast) on a triple loop over contiguous copies, accumulating in
// double. Slow on purpose; it shares nothing with the BLIS path but the shape rules.
#pragma once
#include <cstdint>
#include <type_traits>

#include "autograd/tensor.h"

namespace tg {

// out (M,N) = a (M,K) @ b (K,N); all three contiguous row-major. Sums in double.
template <class T>
void matmul_naive_kernel(T* out, const T* a, const T* b, int64_t M, int64_t N, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      if constexpr (std::is_integral_v<T>) {  // int64: wraps on overflow as PyTorch's (unsigned, no UB)
        uint64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<uint64_t>(a[m * K + k]) * static_cast<uint64_t>(b[k * N + n]);
        out[m * N + n] = static_cast<T>(acc);
      } else {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(a[m * K + k]) * static_cast<double>(b[k * N + n]);
        out[m * N + n] = static_cast<T>(acc);
      }
    }
  }
}

// tg::matmul computed with matmul_naive_kernel, one batch at a time. Records nothing.
Tensor matmul_naive(const Tensor& a, const Tensor& b);

// What the last BLIS gemm call on this thread was given (for tests that prove a view was
// passed to BLIS as it is, not copied). a and b point at element [0,0] of each operand.
struct GemmCall {
  const void* a = nullptr;
  const void* b = nullptr;
  int64_t rsa = 0, csa = 0, rsb = 0, csb = 0;
  int64_t m = 0, n = 0, k = 0;
};
const GemmCall& last_gemm_call();

}  // namespace tg
