// autograd/kernels/isa.h — which instruction sets this CPU runs, checked once, and the one way a
// kernel runs its copy compiled for one of them.
//
// A portable build assumes baseline x86-64 only (SSE2). A fast loop that wants wider vectors is
// compiled again for AVX2 or AVX-512 with a target attribute, and the copy to run is picked at
// run time from best_isa(). Every copy of a kernel gives the same bits (each kernel's header says
// why), so a test can run all the copies this CPU has and compare them.
//
// Two ways a kernel uses this file:
//   * a loop written once as an always-inline body, compiled for each set by run_on below:
//       return kernels::run_on<softmax_row_body>(isa, y, x, n);
//   * a kernel written with intrinsics for one set (small_gemm's register blocks) checks
//     isa_available / best_isa and calls its copy itself.
#pragma once
#include <cstdint>

namespace tg::kernels {

// The instruction sets, narrowest first.
//   kBaseline  x86-64 (SSE2): every x86-64 CPU; 4 floats a step
//   kAvx2      AVX2 and FMA: 8 floats a step
//   kAvx512    AVX-512 F, DQ, CD, BW and VL (Skylake-X's set): 16 floats a step
enum class Isa { kBaseline, kAvx2, kAvx512 };

// True when this CPU runs the set and its OS saves the wider registers (the one CPU check,
// made once).
bool isa_available(Isa isa);

// The widest set this CPU runs, up to `widest` (a kernel with no AVX-512 copy asks up to kAvx2).
Isa best_isa(Isa widest = Isa::kAvx512);

// "baseline", "avx2", "avx512".
const char* isa_name(Isa isa);

// AVX512_BF16 (vdpbf16ps, bfloat16 pairs into float32 sums), beside kAvx512: only the bfloat16
// gemm uses it (kernels/bf16_gemm.h).
bool cpu_has_avx512_bf16();

// body(args...) compiled for each set: the body, and everything it calls, is inlined into each
// copy ([[gnu::always_inline]]), so each copy is one loop vectorised for its set.
template <auto body, class... Args>
auto run_on_baseline(Args... args) {
  return body(args...);
}
template <auto body, class... Args>
[[gnu::target("avx2,fma")]] auto run_on_avx2(Args... args) {
  return body(args...);
}
template <auto body, class... Args>
[[gnu::target("avx512f,avx512dq,avx512cd,avx512bw,avx512vl,avx2,fma")]] auto run_on_avx512(Args... args) {
  return body(args...);
}

// The dispatcher: body(args...) on the copy for `isa` (which must be available).
template <auto body, class... Args>
auto run_on(Isa isa, Args... args) {
  switch (isa) {
    case Isa::kAvx512: return run_on_avx512<body>(args...);
    case Isa::kAvx2: return run_on_avx2<body>(args...);
    case Isa::kBaseline: break;
  }
  return run_on_baseline<body>(args...);
}

}  // namespace tg::kernels
