// autograd/kernels/convert_kernels.h — float32 to bfloat16, many elements at a time.
//
// Why: under autocast every activation a product keeps, and every gradient a product reads, is
// rounded to bfloat16 once (ops/matmul.cpp, ops/matmul_autocast.cpp). The loop is
// BFloat16::round_to_bits (autograd/dtype.h, the definition) over a row, compiled for the widest
// vectors the CPU has: 16 floats a step on AVX-512, the same bits:
//   out[i] = (f + 0x7FFF + bit 16 of f) >> 16,  f = in[i]'s bits   (round to nearest, ties to even)
//   out[i] = 0xFFFF                              where in[i] is NaN (kept a NaN)
// copy_values (autograd/tensor.cpp) calls it for float32 rows copied into bfloat16 ones.
#pragma once
#include <cstdint>

#include "autograd/dtype.h"
#include "autograd/kernels/isa.h"

namespace tg::convert_kernels {

using kernels::Isa;
inline Isa best_isa() { return kernels::best_isa(Isa::kAvx512); }

// out (N) = in (N) rounded to bfloat16; every copy (isa.h) gives the same bits.
void round_to_bf16(BFloat16* out, const float* in, int64_t N, Isa isa = best_isa());

}  // namespace tg::convert_kernels
