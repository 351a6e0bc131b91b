// autograd/kernels/blis_kernels.cpp — which of BLIS's kernels run our matrix products.
//
// BLIS picks its kernels once, as it starts, from the CPU's identity, and that pick can leave much
// of the CPU unused; where it does, and the user has not set BLIS_ARCH_TYPE, tapegrad names the
// kernels that use the whole CPU in BLIS_ARCH_TYPE before BLIS starts. Read in this order: why
// BLIS's own pick falls short (the section "BLIS's own pick" below), the rule, by case (above
// kernels_to_name), what a user's BLIS_ARCH_TYPE may be (above checked_blis_arch_type), and
// choose_blis_kernels at the bottom, which applies them.
#include "autograd/kernels/blis_kernels.h"

#include <blis.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/kernels/isa.h"
#include "autograd/runtime/parallel.h"

#if TG_X86_KERNELS
#include <cpuid.h>
#endif

namespace tg::kernels {

namespace {

// ---- What each of BLIS's x86 kernels needs --------------------------------------------------
// As their builds ask for it (config/<name>/make_defs.mk: skx's -march=skylake-avx512, knl's
// -mavx512pf, ...). The bulldozer kin are built for AMD's family 0x15 (-march=bdver1..4), so
// they are offered only on a CPU with its FMA4. An arch not in this table is another processor
// architecture's (ARM, POWER, RISC-V).
struct KernelNeeds {
  const char* arch;
  VectorTier tier;  // the bulldozer kin count as AVX2-wide: written for CPUs with nothing wider
  const char* needs;
  bool (*runs_on)(const CpuIdentity& cpu);
};

bool has_avx512(const CpuIdentity& c) { return c.avx512; }
bool has_avx2_fma(const CpuIdentity& c) { return c.avx2 && c.fma3; }
bool has_fma_fma4(const CpuIdentity& c) { return c.avx && c.fma3 && c.fma4; }

const KernelNeeds kX86Kernels[] = {
    {"skx", VectorTier::kAvx512, "AVX-512 (F, DQ, CD, BW and VL)", has_avx512},
    {"zen5", VectorTier::kAvx512, "AVX-512 (F, DQ, CD, BW and VL)", has_avx512},
    {"zen4", VectorTier::kAvx512, "AVX-512 (F, DQ, CD, BW and VL)", has_avx512},
    {"knl", VectorTier::kAvx512, "Xeon Phi's AVX-512 (F, CD, ER and PF)",
     [](const CpuIdentity& c) { return c.avx512_phi; }},
    {"knc", VectorTier::kAvx512, "a Xeon Phi coprocessor (Knights Corner)", [](const CpuIdentity&) { return false; }},
    {"haswell", VectorTier::kAvx2, "AVX2 and FMA", has_avx2_fma},
    {"zen3", VectorTier::kAvx2, "AVX2 and FMA", has_avx2_fma},
    {"zen2", VectorTier::kAvx2, "AVX2 and FMA", has_avx2_fma},
    {"zen", VectorTier::kAvx2, "AVX2 and FMA", has_avx2_fma},
    {"excavator", VectorTier::kAvx2, "AVX2, FMA and FMA4 (AMD family 0x15)",
     [](const CpuIdentity& c) { return has_avx2_fma(c) && c.fma4; }},
    {"steamroller", VectorTier::kAvx2, "AVX, FMA and FMA4 (AMD family 0x15)", has_fma_fma4},
    {"piledriver", VectorTier::kAvx2, "AVX, FMA and FMA4 (AMD family 0x15)", has_fma_fma4},
    {"bulldozer", VectorTier::kAvx2, "AVX and FMA4 (AMD family 0x15)",
     [](const CpuIdentity& c) { return c.avx && c.fma4; }},
    {"sandybridge", VectorTier::kBelowAvx2, "AVX", [](const CpuIdentity& c) { return c.avx; }},
    {"penryn", VectorTier::kBelowAvx2, "SSSE3", [](const CpuIdentity& c) { return c.ssse3; }},
    {"generic", VectorTier::kBelowAvx2, "nothing", [](const CpuIdentity&) { return true; }},
};

const KernelNeeds* x86_kernels(const std::string& arch) {
  for (const KernelNeeds& k : kX86Kernels)
    if (arch == k.arch) return &k;
  return nullptr;
}

VectorTier tier_of(const std::string& arch) {
  const KernelNeeds* k = x86_kernels(arch);
  return k ? k->tier : VectorTier::kBelowAvx2;
}

VectorTier cpu_tier(const CpuIdentity& cpu) {
  if (cpu.avx512) return VectorTier::kAvx512;
  return has_avx2_fma(cpu) ? VectorTier::kAvx2 : VectorTier::kBelowAvx2;
}

// Kernels built for this processor architecture (generic's C code is built for every one).
bool same_architecture(const std::string& arch, const CpuIdentity& cpu) {
  return arch == "generic" || (x86_kernels(arch) != nullptr) == cpu.x86_64;
}

bool is_configured(const BlisBuild& blis, const std::string& arch) {
  for (const std::string& c : blis.configured)
    if (c == arch) return true;
  return false;
}

// ---- BLIS's own pick, as its sources make it --------------------------------------------------

// BLIS picks its kernels once, as it starts, from the CPU's identity (frame/base/bli_cpuid.c in
// its sources), unless BLIS_ARCH_TYPE names them. Every BLIS release up to 2.1 (0.9 is Debian
// 12's, 1.1 Debian 13's, 2.0 Homebrew's) makes the same x86 pick, and it can leave much of the
// CPU unused:
//   - AMD: BLIS knows families 0x15 to 0x19 and gives family 0x19 (Zen 3 and Zen 4) its zen3
//     kernels (AVX2), so Zen 4's AVX-512 goes unused; a later family (Zen 5 is 0x1A) gets its
//     generic C kernels, about 6 times slower than the AVX-512 kernels the same CPU runs fine
//     (docs/performance.md).
//   - Intel: an AVX-512 CPU gets skx's kernels only when BLIS counts two AVX-512 FMA units, which
//     it reads from the brand string, with a table of models that ends at Cascade Lake (and an
//     "Intel(R) Xeon(R)" it must find spelled so: Emerald Rapids' brand string is in capitals).
//     Later AVX-512 CPUs, which have two units, mostly get haswell's AVX2 kernels, half the
//     arithmetic.
//   - Any other vendor (Hygon, Zhaoxin, a VM's made-up one) gets the generic kernels.
// AMD's own BLIS (AOCL, built with zen4 and zen5 kernels) gives every AVX-512 CPU zen4 or zen5
// and every AVX2 CPU zen3 or an older Zen's kernels: it leaves nothing unused.

BlisPick pick(const std::string& arch) { return {arch, tier_of(arch)}; }

// The first of `candidates` built into this BLIS (BLIS checks its configured kernels in turn).
BlisPick first_configured(const BlisBuild& blis, const std::vector<std::string>& candidates) {
  for (const std::string& arch : candidates)
    if (is_configured(blis, arch)) return pick(arch);
  return pick("generic");
}

// AMD's family 0x15 by model: Bulldozer, Piledriver, Steamroller, Excavator.
std::string bulldozer_kin(unsigned model) {
  if (model >= 0x60 && model <= 0x7F) return "excavator";
  if (model >= 0x30 && model <= 0x3F) return "steamroller";
  if (model == 0x02 || (model >= 0x10 && model <= 0x1F)) return "piledriver";
  if (model <= 0x01) return "bulldozer";
  return "generic";
}

BlisPick amd_pick(const CpuIdentity& cpu, const BlisBuild& blis) {
  if (has_avx2_fma(cpu) && cpu.family == 0x19) return first_configured(blis, {"zen3"});
  if (has_avx2_fma(cpu) && cpu.family == 0x17) return first_configured(blis, {cpu.model >= 0x30 ? "zen2" : "zen"});
  if (cpu.family == 0x15) return first_configured(blis, {bulldozer_kin(cpu.model)});
  return pick("generic");
}

// An AVX-512 CPU gets skx or haswell by the count of FMA units BLIS reads from its brand string.
// On Skylake-SP/X and Cascade Lake (family 6 model 0x55) the count is right: skx where there are
// two units, haswell where there is one, on which AVX-512 computes no wider than AVX2, so the pick
// counts as AVX-512 wide. On later models the table mostly fails, and haswell is half the CPU.
BlisPick intel_avx512_pick(const CpuIdentity& cpu) {
  if (cpu.family == 6 && cpu.model == 0x55) return {"skx or haswell", VectorTier::kAvx512};
  return {"haswell or skx", VectorTier::kAvx2};
}

BlisPick intel_pick(const CpuIdentity& cpu, const BlisBuild& blis) {
  if (cpu.avx512 && is_configured(blis, "skx")) return intel_avx512_pick(cpu);
  std::vector<std::string> candidates;  // BLIS's checks, most recent first
  if (cpu.avx512_phi) candidates.push_back("knl");
  if (has_avx2_fma(cpu)) candidates.push_back("haswell");
  if (cpu.avx) candidates.push_back("sandybridge");
  if (cpu.ssse3) candidates.push_back("penryn");
  return first_configured(blis, candidates);
}

BlisPick upstream_pick(const CpuIdentity& cpu, const BlisBuild& blis) {
  switch (cpu.vendor) {
    case CpuVendor::kIntel: return intel_pick(cpu, blis);
    case CpuVendor::kAmd: return amd_pick(cpu, blis);
    case CpuVendor::kOther: break;
  }
  return pick("generic");
}

// AOCL: zen4 for AMD's family 0x19 with AVX-512, zen5 (or zen4) for any other AVX-512 CPU, zen3
// for any AVX2 one it does not know by family.
BlisPick aocl_pick(const CpuIdentity& cpu, const BlisBuild& blis) {
  const bool zen4 = cpu.vendor == CpuVendor::kAmd && cpu.family == 0x19;
  if (cpu.avx512 && zen4) return first_configured(blis, {"zen4", "zen5"});
  if (cpu.avx512) return first_configured(blis, {"zen5", "zen4"});
  const BlisPick known = upstream_pick(cpu, blis);
  if (known.tier < VectorTier::kAvx2 && has_avx2_fma(cpu) && is_configured(blis, "zen3")) return pick("zen3");
  return known;
}

bool has_zen4_or_zen5(const BlisBuild& blis) { return is_configured(blis, "zen4") || is_configured(blis, "zen5"); }

// ---- Reading BLIS_ARCH_TYPE ---------------------------------------------------------------------

// BLIS 2.0 and later also take a kernel's name, in any case.
bool reads_names(const BlisBuild& blis) { return std::atoi(blis.version.c_str()) >= 2; }

bool same_name(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The arch number `value` names, or -1 when it names none (a number past the end stays past it).
int arch_number(const std::string& value, const BlisBuild& blis) {
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  if (digits) return value.size() > 6 ? 1000000 : std::stoi(value);
  for (size_t i = 0; reads_names(blis) && i < blis.arch_names.size(); ++i)
    if (same_name(value, blis.arch_names[i])) return static_cast<int>(i);
  return -1;
}

std::string numbered(const BlisBuild& blis, size_t id) { return std::to_string(id) + " (" + blis.arch_names[id] + ")"; }

// "3 (haswell), 6 (zen3) or 25 (generic)": every number this BLIS runs on this CPU.
std::string runnable_numbers(const CpuIdentity& cpu, const BlisBuild& blis) {
  std::vector<std::string> runnable;
  for (size_t id = 0; id < blis.arch_names.size(); ++id) {
    const std::string& arch = blis.arch_names[id];
    if (is_configured(blis, arch) && blis_kernels_run_on(arch, cpu)) runnable.push_back(numbered(blis, id));
  }
  std::string text;
  for (size_t i = 0; i < runnable.size(); ++i) {
    if (i > 0) text += i + 1 == runnable.size() ? " or " : ", ";
    text += runnable[i];
  }
  return text;
}

// Why BLIS cannot run its kernels number `id` (-1: the value named none) on `cpu`, or "".
std::string why_blis_cannot_run(int id, const CpuIdentity& cpu, const BlisBuild& blis) {
  if (id < 0) return reads_names(blis) ? "not a number, nor a name of BLIS's kernels" : "not a number";
  if (static_cast<size_t>(id) >= blis.arch_names.size()) {
    return "BLIS " + blis.version + " numbers its kernels 0 to " + std::to_string(blis.arch_names.size() - 1);
  }
  const std::string& arch = blis.arch_names[static_cast<size_t>(id)];
  const std::string label = numbered(blis, static_cast<size_t>(id));
  if (!same_architecture(arch, cpu)) return label + " is for another processor architecture";
  if (!is_configured(blis, arch)) return label + " is not built into this BLIS";
  if (!blis_kernels_run_on(arch, cpu)) return label + " needs " + needs_of(arch) + ", which this CPU lacks";
  return "";
}

}  // namespace

bool blis_kernels_run_on(const std::string& arch, const CpuIdentity& cpu) {
  if (!same_architecture(arch, cpu)) return false;
  const KernelNeeds* k = x86_kernels(arch);
  return k == nullptr || k->runs_on(cpu);  // another architecture's kernels: their needs are not modelled
}

std::string needs_of(const std::string& arch) {
  const KernelNeeds* k = x86_kernels(arch);
  return k ? k->needs : "a processor of its own architecture";
}

BlisPick blis_own_pick(const CpuIdentity& cpu, const BlisBuild& blis) {
  if (!cpu.x86_64) return {"its own", VectorTier::kBelowAvx2};  // not modelled: nothing is named there
  return has_zen4_or_zen5(blis) ? aocl_pick(cpu, blis) : upstream_pick(cpu, blis);
}

// The rule. When the user has not set BLIS_ARCH_TYPE, and BLIS's own pick (modelled in
// blis_own_pick above: BLIS cannot be asked without starting it) computes with narrower vectors
// than the CPU has, tapegrad names, in BLIS_ARCH_TYPE before BLIS starts, the kernels that use
// the whole CPU: skx for AVX-512 (F, DQ, CD, BW, VL), zen3 (or haswell, in a BLIS without zen3)
// for AVX2 with FMA. By case:
//   CPU                                      BLIS's own pick          tapegrad names
//   Intel with AVX2 (Haswell .. Alder Lake)  haswell                  - (it fits)
//   Intel Skylake-SP/X, Cascade Lake (6/55)  skx or haswell           - (BLIS's table covers these:
//                                                                       haswell on one-unit parts,
//                                                                       where AVX-512 is no wider)
//   Intel AVX-512 after those (Ice Lake,     haswell or skx           skx (on a one-unit part,
//     Sapphire/Emerald Rapids, Xeon 6 ...)                              Xeon E-2300 say, skx is as
//                                                                       wide as haswell)
//   AMD Zen, Zen 2, Zen 3 (0x17, 0x19)       zen, zen2, zen3          -
//   AMD Zen 4 (0x19 with AVX-512)            zen3                     skx (as AOCL's zen4 kernels
//                                                                       are AVX-512; not measured)
//   AMD Zen 5 and later (0x1A on)            generic                  skx (zen3 without AVX-512)
//   another vendor with AVX2 or AVX-512      generic                  zen3 or skx
//   a CPU without AVX2                       penryn, sandybridge,     - (nothing wider to give)
//                                            a bulldozer kin, generic
//   any CPU, with a BLIS built with zen4/5   zen5, zen4, zen3 ...     -
//   not x86-64 (arm64)                       its own                  - (nothing is named)
// The kernels agree to float rounding (each has its own order of multiply-adds), which the
// PyTorch parity tests' tolerances cover. (PyTorch on the same BLIS reads the same variable:
// give it the same value to compare them.)
std::string kernels_to_name(const CpuIdentity& cpu, const BlisBuild& blis) {
  if (!cpu.x86_64) return "";
  const BlisPick own = blis_own_pick(cpu, blis);
  if (own.tier >= cpu_tier(cpu)) return "";  // BLIS's pick computes as wide as the CPU can
  for (const char* arch : {"skx", "zen3", "haswell"}) {
    if (tier_of(arch) > own.tier && is_configured(blis, arch) && blis_kernels_run_on(arch, cpu)) return arch;
  }
  return "";
}

// A user's BLIS_ARCH_TYPE always wins; "-1" asks for BLIS's own pick, and an empty one is unset
// (BLIS would read it as 0). But BLIS aborts on a number it has no kernels for and crashes with
// an illegal instruction on kernels the CPU cannot run, so the value is checked first and a bad
// one is a tg::Error (checked_blis_arch_type) at the first op, as other bad settings are.
int checked_blis_arch_type(const std::string& value, const CpuIdentity& cpu, const BlisBuild& blis) {
  if (value == "-1") return -1;
  const int id = arch_number(value, blis);
  const std::string why = why_blis_cannot_run(id, cpu, blis);
  if (!why.empty()) {
    throw Error("BLIS_ARCH_TYPE=" + value + ": " + why + "; expected " + runnable_numbers(cpu, blis) +
                (reads_names(blis) ? " (or their names)" : "") + ", or -1 for BLIS's own pick (or leave it unset)");
  }
  return id;
}

// ---- This machine -------------------------------------------------------------------------------

namespace {

#if TG_X86_KERNELS
CpuVendor vendor_of(unsigned ebx, unsigned ecx, unsigned edx) {
  char name[13] = {};
  for (int i = 0; i < 4; ++i) {  // the vendor string is spelled in ebx, edx, ecx
    name[i] = static_cast<char>(ebx >> (8 * i));
    name[4 + i] = static_cast<char>(edx >> (8 * i));
    name[8 + i] = static_cast<char>(ecx >> (8 * i));
  }
  const std::string vendor(name);
  if (vendor == "GenuineIntel") return CpuVendor::kIntel;
  if (vendor == "AuthenticAMD") return CpuVendor::kAmd;
  return CpuVendor::kOther;
}

// The one reading of cpuid for BLIS's choice. The instruction sets come from
// __builtin_cpu_supports, which also checks that the OS saves the wider registers; Xeon Phi's
// ER and PF from cpuid's leaf 7 (compilers are dropping their names), behind its check of F.
// (Not kernels::isa_available: that is the ISA tapegrad's own kernels may use, which a setting
// can narrow; BLIS's kernels need the CPU's.)
CpuIdentity read_cpu() {
  CpuIdentity cpu;
  cpu.x86_64 = true;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) cpu.vendor = vendor_of(ebx, ecx, edx);
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    const unsigned base_family = (eax >> 8) & 0xF, base_model = (eax >> 4) & 0xF;
    const unsigned extended_family = (eax >> 20) & 0xFF, extended_model = (eax >> 16) & 0xF;
    cpu.family = base_family == 0xF ? base_family + extended_family : base_family;
    cpu.model = base_family == 0x6 || base_family == 0xF ? (extended_model << 4) + base_model : base_model;
  }
  __builtin_cpu_init();
  cpu.ssse3 = __builtin_cpu_supports("ssse3");
  cpu.avx = __builtin_cpu_supports("avx");
  cpu.fma3 = __builtin_cpu_supports("fma");
  cpu.avx2 = __builtin_cpu_supports("avx2");
  cpu.fma4 = __builtin_cpu_supports("fma4");
  const bool f = __builtin_cpu_supports("avx512f"), cd = __builtin_cpu_supports("avx512cd");
  cpu.avx512 = f && cd && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
  const bool leaf7 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx);
  const bool pf = leaf7 && ((ebx >> 26) & 1), er = leaf7 && ((ebx >> 27) & 1);
  cpu.avx512_phi = f && cd && pf && er;
  return cpu;
}
#else
CpuIdentity read_cpu() { return CpuIdentity{}; }  // not x86-64: BLIS picks its own kernels
#endif

// The kernels built into this BLIS: its blis.h defines BLIS_CONFIG_<NAME> for each. (The x86-64
// and arm64 ones, the processors tapegrad builds on; one missing here is only refused in
// BLIS_ARCH_TYPE.)
std::vector<std::string> configured_kernels() {
  std::vector<std::string> names;
  auto add = [&](arch_t id) { names.emplace_back(bli_arch_string(id)); };
#ifdef BLIS_CONFIG_SKX
  add(BLIS_ARCH_SKX);
#endif
#ifdef BLIS_CONFIG_KNL
  add(BLIS_ARCH_KNL);
#endif
#ifdef BLIS_CONFIG_KNC
  add(BLIS_ARCH_KNC);
#endif
#ifdef BLIS_CONFIG_HASWELL
  add(BLIS_ARCH_HASWELL);
#endif
#ifdef BLIS_CONFIG_SANDYBRIDGE
  add(BLIS_ARCH_SANDYBRIDGE);
#endif
#ifdef BLIS_CONFIG_PENRYN
  add(BLIS_ARCH_PENRYN);
#endif
#ifdef BLIS_CONFIG_ZEN5
  add(BLIS_ARCH_ZEN5);
#endif
#ifdef BLIS_CONFIG_ZEN4
  add(BLIS_ARCH_ZEN4);
#endif
#ifdef BLIS_CONFIG_ZEN3
  add(BLIS_ARCH_ZEN3);
#endif
#ifdef BLIS_CONFIG_ZEN2
  add(BLIS_ARCH_ZEN2);
#endif
#ifdef BLIS_CONFIG_ZEN
  add(BLIS_ARCH_ZEN);
#endif
#ifdef BLIS_CONFIG_EXCAVATOR
  add(BLIS_ARCH_EXCAVATOR);
#endif
#ifdef BLIS_CONFIG_STEAMROLLER
  add(BLIS_ARCH_STEAMROLLER);
#endif
#ifdef BLIS_CONFIG_PILEDRIVER
  add(BLIS_ARCH_PILEDRIVER);
#endif
#ifdef BLIS_CONFIG_BULLDOZER
  add(BLIS_ARCH_BULLDOZER);
#endif
#ifdef BLIS_CONFIG_ARMSVE
  add(BLIS_ARCH_ARMSVE);
#endif
#ifdef BLIS_CONFIG_A64FX
  add(BLIS_ARCH_A64FX);
#endif
#ifdef BLIS_CONFIG_ALTRAMAX
  add(BLIS_ARCH_ALTRAMAX);
#endif
#ifdef BLIS_CONFIG_ALTRA
  add(BLIS_ARCH_ALTRA);
#endif
#ifdef BLIS_CONFIG_FIRESTORM
  add(BLIS_ARCH_FIRESTORM);
#endif
#ifdef BLIS_CONFIG_THUNDERX2
  add(BLIS_ARCH_THUNDERX2);
#endif
#ifdef BLIS_CONFIG_CORTEXA57
  add(BLIS_ARCH_CORTEXA57);
#endif
#ifdef BLIS_CONFIG_CORTEXA53
  add(BLIS_ARCH_CORTEXA53);
#endif
#ifdef BLIS_CONFIG_GENERIC
  add(BLIS_ARCH_GENERIC);
#endif
  return names;
}

// Who chose the kernels BLIS runs: set by choose_blis_kernels, read by blis_kernels_in_use.
std::string& chosen_by() {
  static std::string whom = "BLIS";
  return whom;
}

}  // namespace

CpuIdentity this_cpu() {
  static const CpuIdentity cpu = read_cpu();
  return cpu;
}

BlisBuild this_blis() {
  std::vector<std::string> arch_names;
  for (int id = 0; id < BLIS_NUM_ARCHS; ++id) arch_names.emplace_back(bli_arch_string(static_cast<arch_t>(id)));
  return {bli_info_get_version_str(), arch_names, configured_kernels()};
}

void choose_blis_kernels() {
  const char* set = std::getenv("BLIS_ARCH_TYPE");
  if (set && *set == '\0') unsetenv("BLIS_ARCH_TYPE");  // empty is unset, as for tapegrad's variables
  const CpuIdentity cpu = this_cpu();
  const BlisBuild blis = this_blis();
  if (set && *set != '\0') {  // the user's choice
    const bool own = checked_blis_arch_type(set, cpu, blis) < 0;
    chosen_by() = own ? "BLIS: BLIS_ARCH_TYPE=-1" : std::string("BLIS_ARCH_TYPE=") + set;
    return;
  }
  const std::string name = kernels_to_name(cpu, blis);
  if (name.empty()) return;  // BLIS's own pick
  for (size_t id = 0; id < blis.arch_names.size(); ++id) {
    if (blis.arch_names[id] != name) continue;
    setenv("BLIS_ARCH_TYPE", std::to_string(id).c_str(), 1);
    chosen_by() = "tapegrad: BLIS would pick " + blis_own_pick(cpu, blis).arch;
  }
}

std::string blis_kernels_in_use() {
  get_num_threads();  // BLIS starts after choose_blis_kernels (parallel.cpp), whoever asks first
  bli_init();         // idempotent; without it the query below aborts when BLIS_ARCH_TYPE is set
  std::string threading = "single-threaded";
  if (bli_info_get_enable_openmp()) threading = "OpenMP";
  else if (bli_info_get_enable_pthreads()) threading = "pthreads";
  return std::string("BLIS ") + bli_info_get_version_str() + " (" + threading + ") " +
         bli_arch_string(bli_arch_query_id()) + " kernels (chosen by " + chosen_by() + ")";
}

}  // namespace tg::kernels
