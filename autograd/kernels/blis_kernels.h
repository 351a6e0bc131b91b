// autograd/kernels/blis_kernels.h — which of BLIS's kernels run our matrix products: BLIS's own
// pick, kernels tapegrad names where that pick leaves part of the CPU unused, and the check of
// a BLIS_ARCH_TYPE the user set. The rule, and why, is in blis_kernels.cpp (its opening says where).
//
// The decisions are pure functions of a CPU (CpuIdentity) and a BLIS (BlisBuild), so a test can
// ask them about any CPU and any BLIS version; this_cpu() and this_blis() give the real ones.
//
//   kernels_to_name(cpu, blis)     the kernels tapegrad names, or "" to keep BLIS's own pick
//   checked_blis_arch_type(v, ..)  BLIS_ARCH_TYPE=v as BLIS's number, or an Error saying why
//                                  BLIS cannot run it and which numbers it can
//   choose_blis_kernels()          does one of the two before BLIS starts (parallel.cpp calls it)
//   blis_kernels_in_use()          "BLIS 0.9.0 (OpenMP) skx kernels (chosen by tapegrad: BLIS would
//                                  pick generic)" (tg::kernel_info, fast_kernels.h, prints it)
#pragma once
#include <string>
#include <vector>

namespace tg::kernels {

enum class CpuVendor { kIntel, kAmd, kOther };

// What BLIS's choice depends on, and what its kernels need. Family and model as /proc/cpuinfo
// shows them (the extended fields added in), e.g. Zen 5 is AMD family 0x1A, Emerald Rapids Intel
// family 6 model 0xCF. Each flag is true only when the OS also saves the registers it uses.
struct CpuIdentity {
  bool x86_64 = false;  // false on any other processor (arm64): the rest stays unset
  CpuVendor vendor = CpuVendor::kOther;
  unsigned family = 0, model = 0;
  bool ssse3 = false, avx = false, fma3 = false, avx2 = false;
  bool fma4 = false;        // AMD's family 0x15 (Bulldozer to Excavator) only
  bool avx512 = false;      // AVX-512 F, DQ, CD, BW and VL: Skylake-X's set, what skx's kernels use
  bool avx512_phi = false;  // AVX-512 F, CD, ER and PF: Xeon Phi's set, what knl's kernels use
};

// One BLIS as its header and library describe it. Each version numbers its kernels its own way
// (0.9: 26 of them, 3 is haswell; 1.1 and 2.0: 33, and the ARM ones moved), so kernels are known
// by name, and a number is an index into arch_names.
struct BlisBuild {
  std::string version;                  // bli_info_get_version_str(): "0.9.0"
  std::vector<std::string> arch_names;  // bli_arch_string(i) for i in [0, BLIS_NUM_ARCHS)
  std::vector<std::string> configured;  // the kernels built in (its blis.h's BLIS_CONFIG_*)
};

// How wide the arithmetic of a CPU, or of a set of kernels, is.
enum class VectorTier { kBelowAvx2, kAvx2, kAvx512 };

// What BLIS picks by itself on `cpu`, modelled from BLIS's sources (frame/base/bli_cpuid.c):
// BLIS offers no way to ask before it starts, and asking starts it with that pick for good.
struct BlisPick {
  std::string arch;  // its name; "haswell or skx" where BLIS reads the brand string to choose
  VectorTier tier;   // what the pick computes with (see blis_kernels.cpp for the brand-string case)
};
BlisPick blis_own_pick(const CpuIdentity& cpu, const BlisBuild& blis);

// The kernels tapegrad names for `cpu` (skx, zen3 or haswell), or "" to keep BLIS's own pick.
std::string kernels_to_name(const CpuIdentity& cpu, const BlisBuild& blis);

// True when `cpu` can run BLIS's kernels `arch`: kernels of its processor architecture, and on
// x86-64 only where it has the instructions they are built with (needs_of says which, in words).
// Other architectures' kernels are not modelled: on arm64 every ARM kernel counts as runnable.
bool blis_kernels_run_on(const std::string& arch, const CpuIdentity& cpu);
std::string needs_of(const std::string& arch);

// The user's BLIS_ARCH_TYPE=value as BLIS's arch number (-1: BLIS's own pick, as BLIS reads it).
// An Error when BLIS would abort ("Accessed uninitialized context in gks") or crash on an
// illegal instruction: not a number (BLIS reads one as 0, its first kernels), past BLIS's last
// number, kernels of another processor architecture, kernels not built in, or kernels needing
// instructions this CPU lacks. The message names every number this BLIS runs on this CPU:
// "BLIS_ARCH_TYPE=999: BLIS 0.9.0 numbers its kernels 0 to 25; expected 3 (haswell), ... or
// 25 (generic), or -1 for BLIS's own pick (or leave it unset)".
int checked_blis_arch_type(const std::string& value, const CpuIdentity& cpu, const BlisBuild& blis);

CpuIdentity this_cpu();  // read once from cpuid (x86-64 only)
BlisBuild this_blis();   // the BLIS tapegrad is built against

// Checks the user's BLIS_ARCH_TYPE, or names kernels_to_name's pick in it, before BLIS's first
// use (BLIS reads the variable once, as it starts). Throws checked_blis_arch_type's Error.
void choose_blis_kernels();

// "BLIS <version> (<threading>) <kernels> kernels (chosen by <whom>)", from BLIS itself; starts
// BLIS (after choose_blis_kernels) if nothing has yet.
std::string blis_kernels_in_use();

}  // namespace tg::kernels
