// autograd/kernels/isa.cpp — the one CPU feature check (see isa.h).
#include "autograd/kernels/isa.h"

namespace tg::kernels {

namespace {

struct CpuSets {
  bool avx2 = false, avx512 = false, avx512_bf16 = false;
};

// __builtin_cpu_supports reads cpuid and also checks that the OS saves the wider registers.
CpuSets check_cpu() {
  CpuSets sets;
#if defined(__x86_64__)
  __builtin_cpu_init();
  sets.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  sets.avx512 = sets.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl");
  sets.avx512_bf16 = sets.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
  return sets;
}

const CpuSets& cpu_sets() {
  static const CpuSets sets = check_cpu();
  return sets;
}

}  // namespace

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return cpu_sets().avx512;
    case Isa::kAvx2: return cpu_sets().avx2;
    case Isa::kBaseline: break;
  }
  return true;
}

bool cpu_has_avx512_bf16() { return cpu_sets().avx512_bf16; }

Isa best_isa(Isa widest) {
  if (widest == Isa::kAvx512 && isa_available(Isa::kAvx512)) return Isa::kAvx512;
  if (widest != Isa::kBaseline && isa_available(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kBaseline;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kBaseline: break;
  }
  return "baseline";
}

}  // namespace tg::kernels
