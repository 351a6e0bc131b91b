// autograd/kernels/convert_kernels.h — float32 to bfloat16, many elements at a time.
//
// Why: under autocast every activation a product keeps, and every gradient a product reads, is
// rounded to bfloat16 once (ops/matmul.cpp). Element by element (BFloat16's constructor in
// autograd/dtype.h: the definition, and this loop's test oracle) that is a branch per element;
// this loop has none, so g++ vectorises it, 16 floats a step on AVX-512. The same bits:
//   out[i] = (f + 0x7FFF + bit 16 of f) >> 16,  f = in[i]'s bits   (round to nearest, ties to even)
//   out[i] = 0xFFFF                              where in[i] is NaN (kept a NaN)
// copy_values (autograd/tensor.cpp) calls it for float32 rows copied into bfloat16 ones.
#pragma once
#include <bit>
#include <cstdint>

#include "autograd/dtype.h"
#include "autograd/kernels/isa.h"

namespace tg::convert_kernels {

using kernels::Isa;
inline Isa best_isa() { return kernels::best_isa(Isa::kAvx512); }

// BFloat16::round_to_bits without its branch (the NaN test is a select), for loops to vectorise.
inline uint16_t bf16_bits_of(float v) {
  const uint32_t f = std::bit_cast<uint32_t>(v);
  const auto rounded = static_cast<uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
  return v != v ? uint16_t{0xFFFF} : rounded;
}

// out (N) = in (N) rounded to bfloat16; every copy (isa.h) gives the same bits.
void round_to_bf16(BFloat16* out, const float* in, int64_t N, Isa isa = best_isa());

}  // namespace tg::convert_kernels
