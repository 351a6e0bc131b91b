// autograd/kernels/transpose16x16.h — a 16 x 16 block of 32-bit words transposed in AVX-512
// registers, for the kernels that pack an operand whose layout is the other way round
// (bf16_gemm.cpp's pairs along k, small_gemm.cpp's panels of a transposed b).
#pragma once
#include <immintrin.h>

// GCC 12's AVX-512 unpacks start from an "undefined" register that they never read, and -Wall
// warns that it may be uninitialized once they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tg::kernels {

// Transposes 16 rows of 16 words in place: r[i] lane j <- r[j] lane i.
[[gnu::target("avx512f"), gnu::always_inline]] inline void transpose16x16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {  // pairs of rows interleaved, within each 128-bit lane
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + j], lane L: column 4L + j of rows 4i..4i+3
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {  // gather lane L of r[j], r[4 + j], r[8 + j], r[12 + j]
    const __m512i v = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44), w = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xEE);
    const __m512i v2 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44);
    const __m512i w2 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xEE);
    t[j] = _mm512_shuffle_i32x4(v, v2, 0x88);
    t[4 + j] = _mm512_shuffle_i32x4(v, v2, 0xDD);
    t[8 + j] = _mm512_shuffle_i32x4(w, w2, 0x88);
    t[12 + j] = _mm512_shuffle_i32x4(w, w2, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

}  // namespace tg::kernels

#pragma GCC diagnostic pop
