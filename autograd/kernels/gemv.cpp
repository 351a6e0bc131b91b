// autograd/kernels/gemv.cpp — the row-by-row matrix-vector product of gemv.h (why it reads the
// matrix this way, and why every copy gives the same bits, are there).
#include "autograd/kernels/gemv.h"

#include <algorithm>
#include <bit>
#include <type_traits>
#include <vector>

#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

#if TG_X86_KERNELS  // the int8 rows' AVX2 and AVX-512 blocks (isa.h)
#include <immintrin.h>
#endif

namespace tg::gemv {

namespace {

// A weight's element as float32: a float is itself; a bfloat16 is its 16 bits with 16 zero bits
// below them, exactly its value (autograd/dtype.h); a float16 is widened exactly too
// (autograd/float16.h). So a 16-bit matrix gives the products, and the sums, that the same matrix
// widened to float32 gives: the same bits, from half the bytes.
[[gnu::always_inline]] inline float widen(float w) { return w; }
[[gnu::always_inline]] inline float widen(BFloat16 w) { return std::bit_cast<float>(static_cast<uint32_t>(w.bits) << 16); }
[[gnu::always_inline]] inline float widen(Float16 w) { return float16_bits_to_float(w.bits); }  // exact too

// Each step reads kLanes elements of a row (128 bytes of floats, 64 of a 16-bit type) and asks for
// the cache lines further on, into every cache level (locality 3; gemv.h says why): a hint only,
// which neither changes a result nor faults past the matrix's end. A float32 row asks 2 KiB ahead;
// a 16-bit row 8 KiB, since it widens every element it reads and so spends more time on a byte.
// Measured on Zen 5, one thread: bfloat16 tokens 7-10% faster than at 2 KiB (Qwen3-0.6B's and
// SmolLM2-135M's shapes), float16 ones 10%; float32 ones were no faster at 4 KiB.
template <class W>
constexpr int64_t kPrefetchAheadBytes = sizeof(W) == sizeof(float) ? 2048 : 8192;
constexpr int64_t kCacheLine = 64;
// An int8 row asks 4 KiB ahead: its loop spends more time on each byte (a widening, a conversion
// and a product with the scale), so the same distance in bytes is less time ahead of the read.
// Measured on Zen 5: 4 KiB read an 8192² int8 matrix at 19.7 GB/s on one thread, against 18.2 at
// 2 KiB (8 KiB: no better than 4), and wrote SmolLM2-135M's and Qwen3-0.6B's tokens 4-5% faster.
constexpr int64_t kInt8PrefetchAheadBytes = 4096;

// The lanes added as a binary tree: lane j += lane j + w for w = kLanes/2, ..., 1.
[[gnu::always_inline]] inline float tree_sum(float (&lanes)[kLanes]) {
#pragma GCC unroll 8  // each step's width a constant: the compiler adds whole registers (the same order)
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  return lanes[0];
}

// out[r] = sum_k row[k] x_r[k] for the kVectors vectors x_r = x + r * ldx: for each vector, lanes
// of sums along the row, then a tree over the lanes. The vectors share each load of the row.
template <int kVectors, class W>
[[gnu::always_inline]] inline void row_dots(float* out, const W* row, const float* x, int64_t ldx, int64_t K) {
  float lanes[kVectors][kLanes] = {};
  const char* bytes = reinterpret_cast<const char*>(row);
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    for (int64_t line = 0; line < kLanes * int64_t{sizeof(W)}; line += kCacheLine)
      __builtin_prefetch(bytes + k * int64_t{sizeof(W)} + kPrefetchAheadBytes<W> + line, 0, 3);
    for (int r = 0; r < kVectors; ++r)
      for (int j = 0; j < kLanes; ++j) lanes[r][j] += widen(row[k + j]) * x[r * ldx + k + j];
  }
  for (int r = 0; r < kVectors; ++r) {
    for (int j = 0; k + j < K; ++j) lanes[r][j] += widen(row[k + j]) * x[r * ldx + k + j];  // the last partial block
    out[r] = tree_sum(lanes[r]);
  }
}

#if TG_X86_KERNELS
// The whole blocks of int8_row_dots below in AVX2 (8 floats a register) and AVX-512 (16): the
// same dequantize (one product of the element and its scale), multiply and add, lane by lane, so
// the same bits. Why they exist: compilers vectorise the plain loop's int8 -> float32 widening in
// two steps (int8 -> int16 -> int32) on 8-float registers, and a token's int8 rows then take as long
// as bfloat16's twice the bytes; one widening instruction a register reads them at memory's rate.
// Each is called once a row (not inlined: a copy compiled for its set, called from the row loop).
template <int kVectors>
[[gnu::target("avx2,fma")]] void int8_blocks_avx2(float (&lanes)[kVectors][kLanes], const int8_t* q,
                                                  const float* scale, int64_t group, const float* x, int64_t ldx,
                                                  int64_t K) {
  __m256 acc[kVectors][4];
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm256_loadu_ps(lanes[r] + 8 * v);
  for (int64_t k = 0, g = 0; k < K; ++g) {
    const __m256 s = _mm256_set1_ps(scale[g]);
    for (const int64_t group_end = k + group; k < group_end; k += kLanes) {
      __builtin_prefetch(q + k + kInt8PrefetchAheadBytes, 0, 3);
      for (int v = 0; v < 4; ++v) {
        const __m128i eight = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + k + 8 * v));
        const __m256 w = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(eight)), s);
        for (int r = 0; r < kVectors; ++r)
          acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_mul_ps(w, _mm256_loadu_ps(x + r * ldx + k + 8 * v)));
      }
    }
  }
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 4; ++v) _mm256_storeu_ps(lanes[r] + 8 * v, acc[r][v]);
}

template <int kVectors>
[[gnu::target("avx512f,avx512dq,avx512cd,avx512bw,avx512vl,avx2,fma")]] void int8_blocks_avx512(
    float (&lanes)[kVectors][kLanes], const int8_t* q, const float* scale, int64_t group, const float* x, int64_t ldx,
    int64_t K) {
  __m512 acc[kVectors][2];
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = _mm512_loadu_ps(lanes[r] + 16 * v);
  for (int64_t k = 0, g = 0; k < K; ++g) {
    const __m512 s = _mm512_set1_ps(scale[g]);
    for (const int64_t group_end = k + group; k < group_end; k += kLanes) {
      __builtin_prefetch(q + k + kInt8PrefetchAheadBytes, 0, 3);
      for (int v = 0; v < 2; ++v) {
        const __m128i sixteen = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k + 16 * v));
        // (the zero-masked forms: GCC 12 warns that the unmasked ones read an undefined register)
        const __m512i widened = _mm512_maskz_cvtepi8_epi32(__mmask16(0xFFFF), sixteen);
        const __m512 w = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(__mmask16(0xFFFF), widened), s);
        for (int r = 0; r < kVectors; ++r)
          acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_mul_ps(w, _mm512_loadu_ps(x + r * ldx + k + 16 * v)));
      }
    }
  }
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 2; ++v) _mm512_storeu_ps(lanes[r] + 16 * v, acc[r][v]);
}

// The whole blocks of a float16 row in AVX2 (with F16C) and AVX-512: vcvtph2ps widens 8 or 16 halves
// in one instruction, exactly as float16_bits_to_float does (a subnormal made normal, a nan quieted
// with its payload kept), then the same multiply and add lane by lane as row_dots: the same bits.
// Why they exist: the plain widening (autograd/float16.h) vectorises, but takes a dozen
// instructions a register, and a token's float16 rows then took as long as float32's twice the
// bytes (SmolLM2-135M's shape: 22 ms a token against bfloat16's 12-14).
template <int kVectors>
[[gnu::target("avx2,fma,f16c")]] void f16_blocks_avx2(float (&lanes)[kVectors][kLanes], const Float16* row,
                                                      const float* x, int64_t ldx, int64_t whole) {
  __m256 acc[kVectors][4];
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm256_loadu_ps(lanes[r] + 8 * v);
  const char* bytes = reinterpret_cast<const char*>(row);
  for (int64_t k = 0; k < whole; k += kLanes) {
    __builtin_prefetch(bytes + 2 * k + kPrefetchAheadBytes<Float16>, 0, 3);
    for (int v = 0; v < 4; ++v) {
      const __m256 w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k + 8 * v)));
      for (int r = 0; r < kVectors; ++r)
        acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_mul_ps(w, _mm256_loadu_ps(x + r * ldx + k + 8 * v)));
    }
  }
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 4; ++v) _mm256_storeu_ps(lanes[r] + 8 * v, acc[r][v]);
}

template <int kVectors>
[[gnu::target("avx512f,avx512dq,avx512cd,avx512bw,avx512vl,avx2,fma")]] void f16_blocks_avx512(
    float (&lanes)[kVectors][kLanes], const Float16* row, const float* x, int64_t ldx, int64_t whole) {
  __m512 acc[kVectors][2];
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 2; ++v) acc[r][v] = _mm512_loadu_ps(lanes[r] + 16 * v);
  const char* bytes = reinterpret_cast<const char*>(row);
  for (int64_t k = 0; k < whole; k += kLanes) {
    __builtin_prefetch(bytes + 2 * k + kPrefetchAheadBytes<Float16>, 0, 3);
    for (int v = 0; v < 2; ++v) {
      const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k + 16 * v));
      const __m512 w = _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), halves);  // (zero-masked: as the int8 blocks)
      for (int r = 0; r < kVectors; ++r)
        acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_mul_ps(w, _mm512_loadu_ps(x + r * ldx + k + 16 * v)));
    }
  }
  for (int r = 0; r < kVectors; ++r)
    for (int v = 0; v < 2; ++v) _mm512_storeu_ps(lanes[r] + 16 * v, acc[r][v]);
}
#endif

// An int8 row with a scale for each `group` elements: element k is float(q[k]) * scale[k / group].
// With whole blocks of kLanes in a group, one scale serves each block, and the block's elements are
// dequantized, multiplied and added in row_dots's order (the bits of the dequantized float32 row):
// the plain loop, or its AVX2 or AVX-512 copy above. Any other group: the row is dequantized into a
// buffer first, then read as a float32 row.
template <int kVectors, Isa kBlocks>
[[gnu::always_inline]] inline void int8_row_dots(float* out, const int8_t* q, const float* scale, int64_t group,
                                                 const float* x, int64_t ldx, int64_t K) {
  if (group % kLanes != 0) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) row[k] = static_cast<float>(q[k]) * scale[k / group];
    return row_dots<kVectors>(out, row.data(), x, ldx, K);
  }
  float lanes[kVectors][kLanes] = {};
#if TG_X86_KERNELS
  if constexpr (kBlocks == Isa::kAvx512) int8_blocks_avx512<kVectors>(lanes, q, scale, group, x, ldx, K);
  if constexpr (kBlocks == Isa::kAvx2) int8_blocks_avx2<kVectors>(lanes, q, scale, group, x, ldx, K);
#endif
  if constexpr (kBlocks == Isa::kPortable) {
    for (int64_t k = 0, g = 0; k < K; ++g) {  // K is a whole number of groups, so of blocks
      const float s = scale[g];
      for (const int64_t group_end = k + group; k < group_end; k += kLanes) {
        __builtin_prefetch(q + k + kInt8PrefetchAheadBytes, 0, 3);
        for (int r = 0; r < kVectors; ++r)
          for (int j = 0; j < kLanes; ++j) lanes[r][j] += static_cast<float>(q[k + j]) * s * x[r * ldx + k + j];
      }
    }
  }
  for (int r = 0; r < kVectors; ++r) out[r] = tree_sum(lanes[r]);
}

// row_dots for a float16 row: its whole blocks in intrinsics (above) in the AVX2 and AVX-512
// copies, the plain loop otherwise; the last partial block as row_dots does it.
template <int kVectors, Isa kBlocks>
[[gnu::always_inline]] inline void f16_row_dots(float* out, const Float16* row, const float* x, int64_t ldx,
                                                int64_t K) {
  if constexpr (kBlocks == Isa::kPortable) {
    row_dots<kVectors>(out, row, x, ldx, K);
  } else {
    float lanes[kVectors][kLanes] = {};
    const int64_t whole = K - K % kLanes;
#if TG_X86_KERNELS
    if constexpr (kBlocks == Isa::kAvx512) f16_blocks_avx512<kVectors>(lanes, row, x, ldx, whole);
    if constexpr (kBlocks == Isa::kAvx2) f16_blocks_avx2<kVectors>(lanes, row, x, ldx, whole);
#endif
    for (int r = 0; r < kVectors; ++r) {
      for (int j = 0; whole + j < K; ++j) lanes[r][j] += widen(row[whole + j]) * x[r * ldx + whole + j];
      out[r] = tree_sum(lanes[r]);
    }
  }
}

// One row's dots with kVectors vectors: a float16 row's through f16_row_dots (its blocks in the
// copy kBlocks names), any other row's through row_dots (the same loop in every copy).
template <int kVectors, Isa kBlocks, class W>
[[gnu::always_inline]] inline void dots_of_row(float* out, const W* row, const float* x, int64_t ldx, int64_t K) {
  if constexpr (std::is_same_v<W, Float16>) f16_row_dots<kVectors, kBlocks>(out, row, x, ldx, K);
  else row_dots<kVectors>(out, row, x, ldx, K);
}

// y[r * ldy + i * incy] for rows i in [0, M) and vectors r in [0, R): each row of a is read from
// memory once, for the first vectors, and from the L1 cache for the others, up to 4 at a time.
// kBlocks: the copy this runs in, for a float16 row's blocks (dots_of_row).
template <class W, Isa kBlocks = Isa::kPortable>
[[gnu::always_inline]] inline void rows_body(float* y, int64_t ldy, int64_t incy, const W* a, int64_t lda,
                                             const float* x, int64_t ldx, int64_t R, int64_t M, int64_t K) {
  for (int64_t i = 0; i < M; ++i) {
    const W* row = a + i * lda;  // row (K)
    for (int64_t r = 0; r < R; r += 4) {
      float out[4];
      const float* xr = x + r * ldx;
      const int64_t n = std::min<int64_t>(4, R - r);
      if (n == 4) dots_of_row<4, kBlocks>(out, row, xr, ldx, K);
      else if (n == 3) dots_of_row<3, kBlocks>(out, row, xr, ldx, K);
      else if (n == 2) dots_of_row<2, kBlocks>(out, row, xr, ldx, K);
      else dots_of_row<1, kBlocks>(out, row, xr, ldx, K);
      for (int64_t q = 0; q < n; ++q) y[(r + q) * ldy + i * incy] = out[q];
    }
  }
}

// rows_body for an int8 matrix: row i's values and its scales.
template <Isa kBlocks>
[[gnu::always_inline]] inline void int8_rows_body(float* y, int64_t ldy, int64_t incy, Int8Matrix a, const float* x,
                                                  int64_t ldx, int64_t R, int64_t M, int64_t K) {
  const int64_t groups = K / a.group;
  for (int64_t i = 0; i < M; ++i) {
    const int8_t* q = a.values + i * K;
    const float* scale = a.scales + i * groups;
    for (int64_t r = 0; r < R; r += 4) {
      float out[4];
      const float* xr = x + r * ldx;
      const int64_t n = std::min<int64_t>(4, R - r);
      if (n == 4) int8_row_dots<4, kBlocks>(out, q, scale, a.group, xr, ldx, K);
      else if (n == 3) int8_row_dots<3, kBlocks>(out, q, scale, a.group, xr, ldx, K);
      else if (n == 2) int8_row_dots<2, kBlocks>(out, q, scale, a.group, xr, ldx, K);
      else int8_row_dots<1, kBlocks>(out, q, scale, a.group, xr, ldx, K);
      for (int64_t v = 0; v < n; ++v) y[(r + v) * ldy + i * incy] = out[v];
    }
  }
}

// The rows split into bands over the threads (gemv.h), each band on this CPU's widest copy.
template <class W>
void rows_many(float* y, int64_t ldy, int64_t incy, const W* a, int64_t lda, const float* x, int64_t ldx, int64_t R,
               int64_t M, int64_t K, Isa isa) {
  // bands of whole rows, each at least work_split's bytes a thread (gemv.h)
  parallel_for(0, M, work_split::grain_for(K * int64_t{sizeof(W)}), [&](int64_t r0, int64_t r1) {
    kernels::run_on<rows_body<W>>(isa, y + r0 * incy, ldy, incy, a + r0 * lda, lda, x, ldx, R, r1 - r0, K);
  });
}

}  // namespace

void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const float* a, int64_t lda, const float* x, int64_t ldx,
                     int64_t R, int64_t M, int64_t K, Isa isa) {
  rows_many(y, ldy, incy, a, lda, x, ldx, R, M, K, isa);
}

void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const BFloat16* a, int64_t lda, const float* x,
                     int64_t ldx, int64_t R, int64_t M, int64_t K, Isa isa) {
  rows_many(y, ldy, incy, a, lda, x, ldx, R, M, K, isa);
}

void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const Float16* a, int64_t lda, const float* x,
                     int64_t ldx, int64_t R, int64_t M, int64_t K, Isa isa) {
  parallel_for(0, M, work_split::grain_for(K * int64_t{sizeof(Float16)}), [&](int64_t r0, int64_t r1) {
    float* const y_band = y + r0 * incy;
    const Float16* const band = a + r0 * lda;
#if TG_X86_KERNELS  // the blocks in intrinsics: AVX-512's in the AVX-512 copy, AVX2's in the AVX2 one
    if (isa == Isa::kAvx512)
      return kernels::run_on_avx512<rows_body<Float16, Isa::kAvx512>>(y_band, ldy, incy, band, lda, x, ldx, R, r1 - r0,
                                                                      K);
    if (isa == Isa::kAvx2)
      return kernels::run_on_avx2<rows_body<Float16, Isa::kAvx2>>(y_band, ldy, incy, band, lda, x, ldx, R, r1 - r0, K);
#endif
    kernels::run_on_portable<rows_body<Float16, Isa::kPortable>>(y_band, ldy, incy, band, lda, x, ldx, R, r1 - r0, K);
  });
}

void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const Int8Matrix& a, const float* x, int64_t ldx, int64_t R,
                     int64_t M, int64_t K, Isa isa) {
  const int64_t groups = a.group > 0 ? K / a.group : 0;
  parallel_for(0, M, work_split::grain_for(K + 4 * groups), [&](int64_t r0, int64_t r1) {
    const Int8Matrix band{a.values + r0 * K, a.scales + r0 * groups, a.group};
    float* const y_band = y + r0 * incy;
#if TG_X86_KERNELS  // the blocks in intrinsics: AVX-512's in the AVX-512 copy, AVX2's in the AVX2 one
    if (isa == Isa::kAvx512)
      return kernels::run_on_avx512<int8_rows_body<Isa::kAvx512>>(y_band, ldy, incy, band, x, ldx, R, r1 - r0, K);
    if (isa == Isa::kAvx2)
      return kernels::run_on_avx2<int8_rows_body<Isa::kAvx2>>(y_band, ldy, incy, band, x, ldx, R, r1 - r0, K);
#endif
    kernels::run_on_portable<int8_rows_body<Isa::kPortable>>(y_band, ldy, incy, band, x, ldx, R, r1 - r0, K);
  });
}

void sgemv_rows(float* y, int64_t incy, const float* a, int64_t lda, const float* x, int64_t M, int64_t K, Isa isa) {
  rows_many(y, 0, incy, a, lda, x, 0, 1, M, K, isa);
}

void sgemv_rows(float* y, int64_t incy, const BFloat16* a, int64_t lda, const float* x, int64_t M, int64_t K, Isa isa) {
  rows_many(y, 0, incy, a, lda, x, 0, 1, M, K, isa);
}

void sgemv_rows(float* y, int64_t incy, const Float16* a, int64_t lda, const float* x, int64_t M, int64_t K, Isa isa) {
  sgemv_rows_many(y, 0, incy, a, lda, x, 0, 1, M, K, isa);
}

}  // namespace tg::gemv
