// autograd/kernels/blis_kernels.h: which BLIS kernels tapegrad names for a CPU (the rule above
// kernels_to_name in blis_kernels.cpp, asked about CPUs and BLIS versions this machine is not), the check of a
// user's BLIS_ARCH_TYPE, and what this machine's BLIS reports. The program-level checks (train_gpt
// with a bad BLIS_ARCH_TYPE) are in tests/examples/test_train_gpt_program.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/blis_kernels.h"
#include "autograd/kernels/isa.h"
#include "test_util.h"

namespace tg::test {
namespace {

using kernels::BlisBuild;
using kernels::CpuIdentity;
using kernels::CpuVendor;
using kernels::kernels_to_name;

// ---- BLIS versions, as their headers and sources number and build their kernels ----------------

// BLIS 0.9.0's arch_t order (Debian 12), and 1.x/2.x's (Debian 13's 1.1, Homebrew's 2.0): the ARM
// ones moved, generic went from 25 to 32.
const std::vector<std::string> kArchs09 = {
    "skx",     "knl",       "knc",       "haswell",     "sandybridge", "penryn",    "zen3",
    "zen2",    "zen",       "excavator", "steamroller", "piledriver",  "bulldozer", "armsve",
    "a64fx",   "firestorm", "thunderx2", "cortexa57",   "cortexa53",   "cortexa15", "cortexa9",
    "power10", "power9",    "power7",    "bgq",         "generic"};
const std::vector<std::string> kArchs2x = {
    "skx",       "knl",         "knc",        "haswell",   "sandybridge", "penryn",  "zen3",     "zen2",   "zen",
    "excavator", "steamroller", "piledriver", "bulldozer", "armsve",      "a64fx",   "altramax", "altra",  "firestorm",
    "thunderx2", "cortexa57",   "cortexa53",  "cortexa15", "cortexa9",    "power10", "power9",   "power7", "bgq",
    "rv32i",     "rv64i",       "rv32iv",     "rv64iv",    "sifive_x280", "generic"};
// AMD's AOCL 5.x: its own order, and kernels for Zen 4 and Zen 5.
const std::vector<std::string> kArchsAocl = {
    "error",     "generic", "skx",    "knl",       "knc",       "haswell",   "sandybridge", "penryn",
    "zen5",      "zen4",    "zen3",   "zen2",      "zen",       "excavator", "steamroller", "piledriver",
    "bulldozer", "armsve",  "a64fx",  "firestorm", "thunderx2", "cortexa57", "cortexa53",   "cortexa15",
    "cortexa9",  "power10", "power9", "power7",    "bgq"};
// Debian's x86_64 build: Intel's and AMD's kernels, no Knights Corner.
const std::vector<std::string> kDebianX86 = {"skx",        "knl",       "haswell", "sandybridge", "penryn",
                                             "zen3",       "zen2",      "zen",     "excavator",   "steamroller",
                                             "piledriver", "bulldozer", "generic"};

BlisBuild blis_0_9() { return {"0.9.0", kArchs09, kDebianX86}; }
BlisBuild blis_1_1() { return {"1.1", kArchs2x, kDebianX86}; }
BlisBuild blis_2_0() { return {"2.0", kArchs2x, kDebianX86}; }
BlisBuild aocl_5() { return {"5.2.2", kArchsAocl, {"zen5", "zen4", "zen3", "zen2", "zen", "generic"}}; }
BlisBuild arm64_0_9() {
  return {"0.9.0", kArchs09, {"armsve", "firestorm", "thunderx2", "cortexa57", "cortexa53", "generic"}};
}

// ---- CPUs ---------------------------------------------------------------------------------------

enum class Sets { kSse42, kAvx2, kAvx512 };

CpuIdentity x86(CpuVendor vendor, unsigned family, unsigned model, Sets sets) {
  CpuIdentity cpu;
  cpu.x86_64 = true;
  cpu.vendor = vendor;
  cpu.family = family;
  cpu.model = model;
  cpu.ssse3 = true;
  cpu.avx = cpu.fma3 = cpu.avx2 = sets != Sets::kSse42;
  cpu.avx512 = sets == Sets::kAvx512;
  return cpu;
}
CpuIdentity intel(unsigned model, Sets sets) { return x86(CpuVendor::kIntel, 6, model, sets); }
CpuIdentity amd(unsigned family, unsigned model, Sets sets) { return x86(CpuVendor::kAmd, family, model, sets); }

const CpuIdentity kZen3 = amd(0x19, 0x21, Sets::kAvx2);
const CpuIdentity kZen4 = amd(0x19, 0x61, Sets::kAvx512);
const CpuIdentity kZen5 = amd(0x1A, 0x02, Sets::kAvx512);
const CpuIdentity kZen4NoAvx512 = amd(0x19, 0x11, Sets::kAvx2);  // a VM that hides AVX-512 (Genoa)
const CpuIdentity kZen5NoAvx512 = amd(0x1A, 0x02, Sets::kAvx2);
const CpuIdentity kSkylakeX = intel(0x55, Sets::kAvx512);
const CpuIdentity kIceLakeServer = intel(0x6A, Sets::kAvx512);
const CpuIdentity kIceLakeClient = intel(0x7E, Sets::kAvx512);
const CpuIdentity kSapphireRapids = intel(0x8F, Sets::kAvx512);
const CpuIdentity kEmeraldRapids = intel(0xCF, Sets::kAvx512);
const CpuIdentity kKabyLake = intel(0x8E, Sets::kAvx2);
const CpuIdentity kAlderLake = intel(0x97, Sets::kAvx2);
const CpuIdentity kNehalem = intel(0x1A, Sets::kSse42);  // SSE4.2, no AVX
const CpuIdentity kHygon = x86(CpuVendor::kOther, 0x18, 0x01, Sets::kAvx2);
const CpuIdentity kArm64 = CpuIdentity{};

// ---- The rule -----------------------------------------------------------------------------------

struct Case {
  const char* cpu_name;
  CpuIdentity cpu;
  const char* named;  // what tapegrad names: the same for every upstream release, 0.9 to 2.x
};

TEST(BlisKernels, TapegradNamesWiderKernelsWhereBlisLeavesPartOfTheCpuUnused) {
  const Case cases[] = {
      {"Zen 3", kZen3, ""},                          // zen3: written for it
      {"Zen 4", kZen4, "skx"},                       // zen3 leaves its AVX-512 unused
      {"Zen 4, AVX-512 hidden", kZen4NoAvx512, ""},  // zen3 is all it can run
      {"Zen 5", kZen5, "skx"},                       // generic: BLIS does not know family 0x1A
      {"Zen 5, AVX-512 hidden", kZen5NoAvx512, "zen3"},
      {"Skylake-X", kSkylakeX, ""},                // BLIS's brand-string table covers model 0x55
      {"Ice Lake server", kIceLakeServer, "skx"},  // the table ends before it: haswell
      {"Ice Lake client", kIceLakeClient, "skx"},
      {"Sapphire Rapids", kSapphireRapids, "skx"},
      {"Emerald Rapids", kEmeraldRapids, "skx"},  // its brand string is in capitals: haswell
      {"Kaby Lake", kKabyLake, ""},               // haswell, from every version
      {"Alder Lake", kAlderLake, ""},
      {"Nehalem (SSE4.2)", kNehalem, ""},          // penryn: nothing wider to give
      {"Hygon (another vendor)", kHygon, "zen3"},  // generic
      {"arm64", kArm64, ""},                       // BLIS picks its own ARM kernels
  };
  for (const BlisBuild& blis : {blis_0_9(), blis_1_1(), blis_2_0()}) {
    for (const Case& c : cases) {
      EXPECT_EQ(kernels_to_name(c.cpu, blis), c.named) << c.cpu_name << " with BLIS " << blis.version;
    }
  }
}

TEST(BlisKernels, BlisOwnPickIsModelledFromItsSources) {
  const BlisBuild blis = blis_0_9();
  EXPECT_EQ(kernels::blis_own_pick(kZen3, blis).arch, "zen3");
  EXPECT_EQ(kernels::blis_own_pick(kZen4, blis).arch, "zen3");
  EXPECT_EQ(kernels::blis_own_pick(kZen5, blis).arch, "generic");
  EXPECT_EQ(kernels::blis_own_pick(kEmeraldRapids, blis).arch, "haswell or skx");
  EXPECT_EQ(kernels::blis_own_pick(kSkylakeX, blis).arch, "skx or haswell");
  EXPECT_EQ(kernels::blis_own_pick(kKabyLake, blis).arch, "haswell");
  EXPECT_EQ(kernels::blis_own_pick(kNehalem, blis).arch, "penryn");
  EXPECT_EQ(kernels::blis_own_pick(kHygon, blis).arch, "generic");
  EXPECT_EQ(kernels::blis_own_pick(amd(0x17, 0x31, Sets::kAvx2), blis).arch, "zen2");
  EXPECT_EQ(kernels::blis_own_pick(amd(0x17, 0x08, Sets::kAvx2), blis).arch, "zen");
}

// AMD's own BLIS has kernels for Zen 4 and Zen 5, and gives them to every AVX-512 CPU: nothing to name.
TEST(BlisKernels, ABlisWithZen4AndZen5KernelsKeepsItsOwnPick) {
  const BlisBuild aocl = aocl_5();
  for (const CpuIdentity& cpu : {kZen3, kZen4, kZen5, kZen5NoAvx512, kSkylakeX, kEmeraldRapids, kAlderLake, kHygon})
    EXPECT_EQ(kernels_to_name(cpu, aocl), "") << cpu.family << "/" << cpu.model;
  EXPECT_EQ(kernels::blis_own_pick(kZen4, aocl).arch, "zen4");
  EXPECT_EQ(kernels::blis_own_pick(kZen5, aocl).arch, "zen5");
  EXPECT_EQ(kernels::blis_own_pick(kEmeraldRapids, aocl).arch, "zen5");
  EXPECT_EQ(kernels::blis_own_pick(kZen5NoAvx512, aocl).arch, "zen3");  // its fallback for AVX2
}

// Only kernels the build has are named: without skx an AVX-512 CPU gets zen3, without zen3 haswell.
TEST(BlisKernels, OnlyKernelsBuiltIntoThisBlisAreNamed) {
  const BlisBuild amd64_only = {"0.9.0", kArchs09, {"zen3", "zen2", "zen", "generic"}};
  EXPECT_EQ(kernels_to_name(kZen5, amd64_only), "zen3");
  EXPECT_EQ(kernels_to_name(kZen4, amd64_only), "");  // zen3 already
  const BlisBuild intel64_only = {"0.9.0", kArchs09, {"skx", "knl", "haswell", "sandybridge", "penryn", "generic"}};
  EXPECT_EQ(kernels_to_name(kZen5NoAvx512, intel64_only), "haswell");
  EXPECT_EQ(kernels_to_name(kZen3, intel64_only), "haswell");  // its BLIS has no zen3: generic
  EXPECT_EQ(kernels_to_name(kZen5, intel64_only), "skx");
}

// ---- The user's BLIS_ARCH_TYPE ------------------------------------------------------------------

std::string error_for(const std::string& value, const CpuIdentity& cpu, const BlisBuild& blis) {
  return error_of([&] { kernels::checked_blis_arch_type(value, cpu, blis); });
}

TEST(BlisKernels, AnArchTypeBlisRunsOnThisCpuIsItsNumber) {
  EXPECT_EQ(kernels::checked_blis_arch_type("0", kZen5, blis_0_9()), 0);        // skx
  EXPECT_EQ(kernels::checked_blis_arch_type("3", kZen3, blis_0_9()), 3);        // haswell
  EXPECT_EQ(kernels::checked_blis_arch_type("25", kZen3, blis_0_9()), 25);      // generic
  EXPECT_EQ(kernels::checked_blis_arch_type("32", kZen3, blis_2_0()), 32);      // generic, in 1.x and 2.x
  EXPECT_EQ(kernels::checked_blis_arch_type("007", kZen3, blis_0_9()), 7);      // zen2
  EXPECT_EQ(kernels::checked_blis_arch_type("-1", kNehalem, blis_0_9()), -1);   // BLIS's own pick
  EXPECT_EQ(kernels::checked_blis_arch_type("SKX", kSkylakeX, blis_2_0()), 0);  // 2.0 reads names
  EXPECT_EQ(kernels::checked_blis_arch_type("zen3", kZen3, blis_2_0()), 6);
  CpuIdentity excavator = amd(0x15, 0x60, Sets::kAvx2);
  excavator.fma4 = true;
  EXPECT_EQ(kernels::checked_blis_arch_type("9", excavator, blis_0_9()), 9);
}

TEST(BlisKernels, AnArchTypeBlisCannotRunIsAnErrorListingTheOnesItCan) {
  const BlisBuild blis = blis_0_9();
  EXPECT_EQ(error_for("abc", kZen5, blis),
            "BLIS_ARCH_TYPE=abc: not a number; expected 0 (skx), 3 (haswell), 4 (sandybridge), 5 (penryn), 6 (zen3), "
            "7 (zen2), 8 (zen) or 25 (generic), or -1 for BLIS's own pick (or leave it unset)");
  // Without AVX-512, skx is not offered; BLIS would crash on an illegal instruction.
  EXPECT_EQ(error_for("0", kZen3, blis),
            "BLIS_ARCH_TYPE=0: 0 (skx) needs AVX-512 (F, DQ, CD, BW and VL), which this CPU lacks; expected "
            "3 (haswell), 4 (sandybridge), 5 (penryn), 6 (zen3), 7 (zen2), 8 (zen) or 25 (generic), or -1 for "
            "BLIS's own pick (or leave it unset)");
  EXPECT_TRUE(has_part(error_for("999", kZen5, blis), "BLIS_ARCH_TYPE=999: BLIS 0.9.0 numbers its kernels 0 to 25;"));
  EXPECT_TRUE(has_part(error_for("99999999999", kZen5, blis), "numbers its kernels 0 to 25"));
  EXPECT_TRUE(has_part(error_for("13", kZen5, blis), "13 (armsve) is for another processor architecture;"));
  EXPECT_TRUE(has_part(error_for("21", kZen5, blis), "21 (power10) is for another processor architecture;"));
  EXPECT_TRUE(has_part(error_for("2", kZen5, blis), "2 (knc) is not built into this BLIS;"));
  EXPECT_TRUE(has_part(error_for("1", kZen5, blis), "1 (knl) needs Xeon Phi's AVX-512 (F, CD, ER and PF)"));
  EXPECT_TRUE(has_part(error_for("12", kZen5, blis), "12 (bulldozer) needs AVX and FMA4 (AMD family 0x15)"));
  EXPECT_TRUE(has_part(error_for("3", kNehalem, blis), "3 (haswell) needs AVX2 and FMA, which this CPU lacks;"));
  EXPECT_TRUE(has_part(error_for("3", kNehalem, blis), "expected 5 (penryn) or 25 (generic), or -1"));
  for (const char* bad : {"", " 3", "3 ", "3x", "+3", "-2", "0x3", "skx", "haswell"})
    EXPECT_TRUE(has_part(error_for(bad, kZen5, blis), std::string("BLIS_ARCH_TYPE=") + bad + ": not a number;")) << bad;
}

// The numbers moved between versions: a number is checked against the BLIS at hand.
TEST(BlisKernels, EachVersionIsCheckedWithItsOwnNumbers) {
  EXPECT_TRUE(has_part(error_for("32", kZen3, blis_0_9()), "numbers its kernels 0 to 25"));
  EXPECT_TRUE(has_part(error_for("15", kZen3, blis_0_9()), "15 (firestorm) is for another processor architecture"));
  EXPECT_TRUE(has_part(error_for("15", kZen3, blis_1_1()), "15 (altramax) is for another processor architecture"));
  EXPECT_TRUE(has_part(error_for("abc", kZen3, blis_1_1()), "not a number; expected 3 (haswell)"));
  EXPECT_TRUE(has_part(error_for("skx", kZen3, blis_1_1()), "not a number;"));  // 1.x reads numbers only
  EXPECT_TRUE(has_part(error_for("skx", kZen3, blis_2_0()), "0 (skx) needs AVX-512"));
  EXPECT_TRUE(has_part(error_for("skylake", kZen3, blis_2_0()), "not a number, nor a name of BLIS's kernels"));
  EXPECT_TRUE(has_part(error_for("skylake", kZen3, blis_2_0()), "or 32 (generic) (or their names), or -1"));
  EXPECT_TRUE(has_part(error_for("6", kZen3, aocl_5()), "6 (sandybridge) is not built into this BLIS"));
  EXPECT_EQ(kernels::checked_blis_arch_type("10", kZen3, aocl_5()), 10);  // zen3 is 10 in AOCL
}

// On arm64 x86 kernels are another architecture's; the ARM ones are taken as built (not modelled).
TEST(BlisKernels, OnArm64OnlyItsOwnKernelsAreTaken) {
  const BlisBuild blis = arm64_0_9();
  EXPECT_TRUE(has_part(error_for("0", kArm64, blis), "0 (skx) is for another processor architecture"));
  EXPECT_EQ(kernels::checked_blis_arch_type("13", kArm64, blis), 13);  // armsve
  EXPECT_TRUE(has_part(error_for("14", kArm64, blis), "14 (a64fx) is not built into this BLIS"));
  EXPECT_TRUE(has_part(error_for("abc", kArm64, blis),
                       "expected 13 (armsve), 15 (firestorm), 16 (thunderx2), 17 (cortexa57), 18 (cortexa53) or "
                       "25 (generic), or -1"));
}

// ---- This machine -------------------------------------------------------------------------------

TEST(BlisKernels, ThisBlisNamesItsKernelsAndListsTheOnesBuiltIn) {
  const BlisBuild blis = kernels::this_blis();
  EXPECT_FALSE(blis.version.empty());
  ASSERT_FALSE(blis.configured.empty());
  for (const std::string& arch : blis.configured)
    EXPECT_NE(std::find(blis.arch_names.begin(), blis.arch_names.end(), arch), blis.arch_names.end()) << arch;
#if defined(__x86_64__)
  // Debian's and Homebrew's x86-64 BLIS is a family build with generic kernels among the others
  // (an arm64 build may hold one configuration only: Debian's holds cortexa57)
  EXPECT_NE(std::find(blis.configured.begin(), blis.configured.end(), "generic"), blis.configured.end());
#endif
  EXPECT_EQ(std::find(blis.configured.begin(), blis.configured.end(), "knc"), blis.configured.end());
}

TEST(BlisKernels, ThisCpuHasAtLeastWhatTapegradsOwnKernelsUse) {
  const CpuIdentity cpu = kernels::this_cpu();
#if defined(__x86_64__)
  EXPECT_TRUE(cpu.x86_64);
  EXPECT_NE(cpu.family, 0u);
  // tapegrad's own kernels may be held narrower than the CPU, never wider
  EXPECT_TRUE(!kernels::isa_available(kernels::Isa::kAvx512) || cpu.avx512);
  EXPECT_TRUE(!kernels::isa_available(kernels::Isa::kAvx2) || (cpu.avx2 && cpu.fma3));
#else
  EXPECT_FALSE(cpu.x86_64);
  EXPECT_EQ(kernels_to_name(cpu, kernels::this_blis()), "");
#endif
}

// kernel_info says which kernels run and who chose them, as the rule decides for this machine.
TEST(BlisKernels, KernelInfoSaysWhichKernelsRunAndWhoChoseThem) {
  const std::string info = kernel_info();
  EXPECT_TRUE(has_part(info, "BLIS " + kernels::this_blis().version + " ("));
  EXPECT_TRUE(has_part(info, std::string(" | tapegrad ") + kernels::isa_name(kernels::best_isa()) + " kernels, bf16 "));
  if (has_part(info, "(chosen by BLIS_ARCH_TYPE=") || has_part(info, "(chosen by BLIS: BLIS_ARCH_TYPE=-1)")) {
    GTEST_SKIP() << "the user chose: " << info;
  }
  const CpuIdentity cpu = kernels::this_cpu();
  const BlisBuild blis = kernels::this_blis();
  const std::string named = kernels_to_name(cpu, blis);
  if (named.empty()) {
    EXPECT_TRUE(has_part(info, " kernels (chosen by BLIS) | "));
  } else {
    EXPECT_TRUE(has_part(info, " " + named + " kernels (chosen by tapegrad: BLIS would pick " +
                                   kernels::blis_own_pick(cpu, blis).arch + ") | "));
  }
}

}  // namespace
}  // namespace tg::test
