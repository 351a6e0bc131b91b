// autograd/kernels/blis_kernels.cpp — which of BLIS's kernels run our matrix products.
//
// BLIS picks its kernels from the CPU's identity when it starts. BLIS 0.9 (Debian 12's) knows
// AMD's CPUs up to Zen 4 (family 0x19); on a later AMD CPU it falls back to its generic C
// kernels, about 6 times slower (measured on a Zen 5: 18 GFLOP/s on one core, against 110-140
// with the AVX-512 kernels the same CPU runs fine). So, before BLIS starts, and only when
//   - the user has not chosen (no BLIS_ARCH_TYPE in the environment),
//   - BLIS is a 0.x version, and
//   - the CPU is an AMD one newer than BLIS knows,
// we name the kernels it can run, the way BLIS itself reads the choice: BLIS_ARCH_TYPE, set to
// BLIS's number for "skx" (AVX-512) or, without AVX-512, "zen3" (AVX2 + FMA). Any other CPU
// keeps BLIS's own pick. The kernels agree to float rounding (each has its own order of
// multiply-adds), which the PyTorch parity tests' tolerances cover.
// (PyTorch on the same BLIS reads the same variable: give it the same value to compare them.)
#include <blis.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "autograd/internal.h"
#include "autograd/kernels/isa.h"

#if TG_X86_KERNELS
#include <cpuid.h>
#endif

namespace tg {

#if TG_X86_KERNELS
namespace {

bool is_amd_newer_than_zen4() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  if (std::strcmp(vendor, "AuthenticAMD") != 0) return false;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned base_family = (eax >> 8) & 0xF, extended_family = (eax >> 20) & 0xFF;
  const unsigned family = base_family == 0xF ? base_family + extended_family : base_family;
  return family > 0x19;
}

}  // namespace

#endif

void choose_blis_kernels() {
#if TG_X86_KERNELS
  if (std::getenv("BLIS_ARCH_TYPE")) return;  // the user's choice
  if (!is_amd_newer_than_zen4()) return;
  if (std::strncmp(bli_info_get_version_str(), "0.", 2) != 0) return;  // a BLIS that may know the CPU
  const bool avx512 = kernels::isa_available(kernels::Isa::kAvx512);
  const bool avx2 = kernels::isa_available(kernels::Isa::kAvx2);
  if (avx512) {
    setenv("BLIS_ARCH_TYPE", std::to_string(static_cast<int>(BLIS_ARCH_SKX)).c_str(), 0);
  } else if (avx2) {
    setenv("BLIS_ARCH_TYPE", std::to_string(static_cast<int>(BLIS_ARCH_ZEN3)).c_str(), 0);
  }
#endif
}

}  // namespace tg
