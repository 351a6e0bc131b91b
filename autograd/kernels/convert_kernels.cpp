// autograd/kernels/convert_kernels.cpp — see convert_kernels.h.
#include "autograd/kernels/convert_kernels.h"

namespace tg::convert_kernels {

namespace {

[[gnu::always_inline]] inline void round_body(BFloat16* out, const float* in, int64_t N) {
  for (int64_t i = 0; i < N; ++i) out[i].bits = BFloat16::round_to_bits(in[i]);
}

}  // namespace

void round_to_bf16(BFloat16* out, const float* in, int64_t N, Isa isa) { kernels::run_on<round_body>(isa, out, in, N); }

}  // namespace tg::convert_kernels
