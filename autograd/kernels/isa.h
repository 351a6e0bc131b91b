// autograd/kernels/isa.h — which instruction sets this CPU runs, checked once, and the one way a
// kernel runs its copy compiled for one of them.
//
// Every kernel has a portable copy: plain C++ that any compiler vectorises for the architecture
// it builds for (SSE2 on x86-64, NEON on arm64). On x86-64 a fast loop is compiled again for AVX2
// or AVX-512 with a target attribute, and the copy to run is picked at run time from best_isa().
// Every copy of a kernel gives the same bits (each kernel's header says why), so a test can run
// all the copies this CPU has and compare them.
//
// Two ways a kernel uses this file:
//   * a loop written once as an always-inline body, compiled for each set by run_on below:
//       return kernels::run_on<softmax_row_body>(isa, y, x, n);
//   * a kernel written with intrinsics for one set (small_gemm's register blocks) checks
//     isa_available / best_isa and calls its copy itself.
#pragma once
#include <cstdint>

// The x86 copies exist only in an x86-64 build: code with x86 intrinsics or target attributes
// sits inside `#if TG_X86_KERNELS`, and elsewhere best_isa() is always kPortable.
#if defined(__x86_64__) || defined(_M_X64)
#define TG_X86_KERNELS 1
#else
#define TG_X86_KERNELS 0
#endif

namespace tg::kernels {

// The instruction sets, narrowest first.
//   kPortable  the build's own target: SSE2 on x86-64 (4 floats a step), NEON on arm64 (4)
//   kAvx2      x86-64 AVX2 and FMA: 8 floats a step
//   kAvx512    x86-64 AVX-512 F, DQ, CD, BW and VL (Skylake-X's set): 16 floats a step
enum class Isa { kPortable, kAvx2, kAvx512 };

// True when this CPU runs the set, its OS saves the wider registers, and TG_MAX_ISA allows it
// (tapegrad's kernels' CPU check, made once; a bad TG_MAX_ISA throws from the first call. BLIS's
// own choice of kernels is modelled apart, in kernels/blis_kernels.h).
//
// TG_MAX_ISA=avx512|avx2|portable caps the sets tapegrad picks (as oneDNN's ONEDNN_MAX_CPU_ISA
// does), so any x86-64 machine can run the code paths of an older CPU. A cap above what the CPU
// has caps nothing (one note on stderr says so); any other value is an Error naming the variable.
bool isa_available(Isa isa);

// The widest set available, up to `widest` (a kernel with no AVX-512 copy asks up to kAvx2).
Isa best_isa(Isa widest = Isa::kAvx512);

// "portable", "avx2", "avx512".
const char* isa_name(Isa isa);

// AVX512_BF16 (vdpbf16ps, bfloat16 pairs into float32 sums), beside kAvx512 and capped with it:
// only the bfloat16 gemm uses it (kernels/bf16_gemm.h).
bool cpu_has_avx512_bf16();

// body(args...) compiled for each set: the body, and everything it calls, is inlined into each
// copy ([[gnu::always_inline]]), so each copy is one loop vectorised for its set.
template <auto body, class... Args>
auto run_on_portable(Args... args) {
  return body(args...);
}
#if TG_X86_KERNELS
template <auto body, class... Args>
[[gnu::target("avx2,fma")]] auto run_on_avx2(Args... args) {
  return body(args...);
}
template <auto body, class... Args>
[[gnu::target("avx512f,avx512dq,avx512cd,avx512bw,avx512vl,avx2,fma")]] auto run_on_avx512(Args... args) {
  return body(args...);
}
#endif

// The dispatcher: body(args...) on the copy for `isa` (which must be available).
template <auto body, class... Args>
auto run_on(Isa isa, Args... args) {
#if TG_X86_KERNELS
  switch (isa) {
    case Isa::kAvx512: return run_on_avx512<body>(args...);
    case Isa::kAvx2: return run_on_avx2<body>(args...);
    case Isa::kPortable: break;
  }
#else
  (void)isa;  // one copy only
#endif
  return run_on_portable<body>(args...);
}

}  // namespace tg::kernels
