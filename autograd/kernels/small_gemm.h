// autograd/kernels/small_gemm.h — float32 matrix products too small for BLIS to pay off.
//
// Attention multiplies B*NH pairs of small matrices per layer, forward and backward:
// (T,hs) @ (hs,T) and (T,T) @ (T,hs), e.g. 64x16 @ 16x64 in the tiny GPT. Before BLIS
// multiplies, each call builds its control tree and packs both operands into its own buffers;
// for such a product that costs more than the arithmetic: BLIS runs the tiny GPT's attention
// products at about a tenth of the rate of the model's large ones (docs/performance.md).
//
// It speeds up matmul_reference (autograd/ops/matmul.cpp), its test oracle, through
// kernels/gemm.h, which picks it for the products it wins (worth_it). Read sgemm first: the
// comment above it gives the blocked loops, why their bits are fixed, and the threads.
#pragma once
#include <cstdint>

#include "autograd/kernels/isa.h"

namespace tg::small_gemm {

// The kernels: Isa::kAvx2 runs 6x16 blocks in 8-float registers, Isa::kAvx512 8x32 blocks in
// 16-float ones (isa.h says which this CPU runs). There is no baseline kernel.

// True when a (M,K) @ (K,N) product is better done here than by BLIS (measured crossover),
// on a CPU with AVX2.
bool worth_it(int64_t M, int64_t N, int64_t K);

// The faster kernel this CPU runs for N columns (AVX-512 from 32 columns on): kAvx2 or kAvx512,
// or kPortable when it runs neither.
kernels::Isa best_isa_for(int64_t N);

// c (M,N), row stride ldc = a (M,K) @ b (K,N); a[i][k] = a[i * a_rs + k * a_cs],
// b[k][j] = b[k * b_rs + j * b_cs]. Needs isa kAvx2 or kAvx512, available here; M, N, K > 0.
//
// This kernel is the textbook blocked gemm without the layers that large matrices need:
//   - a is read where it is (one element broadcast at a time, any strides);
//   - b is read where it is when its rows are contiguous, else copied into panels of 16 or 32
//     columns, each (K, panel width) row-major, zero-padded, a band of at most 16 MiB of them
//     at a time (a vocabulary-wide head would otherwise be copied whole);
//   - a block of rows of c lives in vector registers, two per row (6 rows x 16 columns with
//     AVX2, 8 rows x 32 columns with AVX-512) while k runs over a block of 256:
//     c[i][j] = fma(a[i][k], b[k][j], c[i][j]), from c = 0; the next block of k starts from
//     the values stored in c, so each element is still one chain of fmas.
// Every element is that one fma chain in k order, whatever the kernel, the block it falls in
// and the thread that runs it: both kernels give the same bits, and results do not depend on
// the thread count. Up to K = 256 these are also the bits of BLIS's AVX-512 (skx) kernels,
// whose micro-kernel runs the same chain (checked on 63 shapes); for larger K, BLIS adds each
// block's partial sum to c instead, and the two differ in rounding only.
//
// Threads: the rows of c in whole blocks, or, when the blocks are fewer than the threads (a few
// rows times a wide b), the columns in whole panels, each thread copying its own (the 16 MiB of
// panels shared out among them). With the rows split, the copy into panels is split by panels
// first. No split changes a bit.
void sgemm(float* c, int64_t ldc, const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t b_rs,
           int64_t b_cs, int64_t M, int64_t N, int64_t K, kernels::Isa isa);

}  // namespace tg::small_gemm
