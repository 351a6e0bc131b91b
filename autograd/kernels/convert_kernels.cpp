// autograd/kernels/convert_kernels.cpp — see convert_kernels.h.
#include "autograd/kernels/convert_kernels.h"

#include <bit>

namespace tg::convert_kernels {

namespace {

// BFloat16::round_to_bits without its branch: the NaN test is a select, so the loop vectorises.
[[gnu::always_inline]] inline void round_body(BFloat16* out, const float* in, int64_t N) {
  for (int64_t i = 0; i < N; ++i) {
    const uint32_t f = std::bit_cast<uint32_t>(in[i]);
    const auto rounded = static_cast<uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
    out[i].bits = in[i] != in[i] ? uint16_t{0xFFFF} : rounded;
  }
}

}  // namespace

void round_to_bf16(BFloat16* out, const float* in, int64_t N, Isa isa) { kernels::run_on<round_body>(isa, out, in, N); }

}  // namespace tg::convert_kernels
