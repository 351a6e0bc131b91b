// autograd/kernels/isa.cpp — the one CPU feature check, capped by TG_MAX_ISA (see isa.h).
#include "autograd/kernels/isa.h"

#include <cstdio>
#include <optional>
#include <string>

#include "autograd/runtime/environment.h"

#if TG_X86_KERNELS
#include <cpuid.h>
#endif

namespace tg::kernels {

namespace {

struct CpuSets {
  bool avx2 = false, avx512 = false, avx512_bf16 = false;
};

// What the CPU runs. __builtin_cpu_supports reads cpuid and also checks that the OS saves the
// wider registers.
CpuSets check_cpu() {
  CpuSets sets;
#if TG_X86_KERNELS
  __builtin_cpu_init();
  // F16C (float16 <-> float32, gemv.cpp's float16 rows) came before AVX2 on every CPU that has
  // both; it is asked of cpuid itself (Clang's __builtin_cpu_supports does not know its name)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  sets.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  sets.avx512 = sets.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl");
  sets.avx512_bf16 = sets.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
  return sets;
}

// The widest set the CPU runs.
Isa widest_of(const CpuSets& sets) {
  return sets.avx512 ? Isa::kAvx512 : sets.avx2 ? Isa::kAvx2 : Isa::kPortable;
}

// The CPU's sets with everything above TG_MAX_ISA taken away.
CpuSets capped(CpuSets sets) {
  const std::optional<std::string> cap = environment_choice("TG_MAX_ISA", {"avx512", "avx2", "portable"});
  if (!cap) return sets;
  const Isa asked = *cap == "avx512" ? Isa::kAvx512 : *cap == "avx2" ? Isa::kAvx2 : Isa::kPortable;
  if (asked > widest_of(sets)) {
    std::fprintf(stderr, "tapegrad: note: TG_MAX_ISA=%s, but this CPU runs at most %s; it caps nothing\n",
                 cap->c_str(), isa_name(widest_of(sets)));
  }
  if (asked < Isa::kAvx512) sets.avx512 = sets.avx512_bf16 = false;
  if (asked < Isa::kAvx2) sets.avx2 = false;
  return sets;
}

const CpuSets& cpu_sets() {
  static const CpuSets sets = capped(check_cpu());  // a bad TG_MAX_ISA throws, and is read again next call
  return sets;
}

}  // namespace

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return cpu_sets().avx512;
    case Isa::kAvx2: return cpu_sets().avx2;
    case Isa::kPortable: break;
  }
  return true;
}

bool cpu_has_avx512_bf16() { return cpu_sets().avx512_bf16; }

Isa best_isa(Isa widest) {
  if (widest == Isa::kAvx512 && isa_available(Isa::kAvx512)) return Isa::kAvx512;
  if (widest != Isa::kPortable && isa_available(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kPortable;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kPortable: break;
  }
  return "portable";
}

}  // namespace tg::kernels
