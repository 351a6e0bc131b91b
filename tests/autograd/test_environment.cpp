// autograd/runtime/environment.h: tapegrad's environment variables, each a value it knows or an
// Error naming the variable and what it takes. The parsing is checked here on a variable of the
// test's own; tests/CMakeLists.txt runs the *.WithBadEnv tests with a bad value in each real one
// (the switches read the environment once, so that needs a process of its own), and a program is
// run with one to see the user's one-line error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "autograd/fast_kernels.h"
#include "autograd/gradcheck.h"
#include "autograd/kernels/blis_kernels.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/isa.h"
#include "autograd/ops.h"
#include "autograd/runtime/environment.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg::test {
namespace {

constexpr const char* kName = "TG_TEST_ENVIRONMENT_VALUE";

// Sets kName to `value` (nullptr: unset) for the test's scope.
class ScopedVariable {
 public:
  explicit ScopedVariable(const char* value) {
    if (value) setenv(kName, value, 1);
    else unsetenv(kName);
  }
  ~ScopedVariable() { unsetenv(kName); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;
};

TEST(Environment, AChoiceIsOneOfItsValuesOrUnset) {
  {
    ScopedVariable v(nullptr);
    EXPECT_EQ(environment_choice(kName, {"0", "1"}), std::nullopt);
  }
  {
    ScopedVariable v("");  // empty is unset
    EXPECT_EQ(environment_choice(kName, {"0", "1"}), std::nullopt);
  }
  {
    ScopedVariable v("1");
    EXPECT_EQ(environment_choice(kName, {"0", "1"}), std::optional<std::string>("1"));
  }
  for (const char* bad : {"off", "true", "1 ", " 1", "01", "FMA"}) {
    ScopedVariable v(bad);
    EXPECT_TRUE(has_part(error_of([] { environment_choice(kName, {"0", "1"}); }),
                         std::string(kName) + "=" + bad + ": expected 0 or 1 (or leave it unset)"));
  }
  ScopedVariable v("avx");
  EXPECT_TRUE(has_part(error_of([] { environment_choice(kName, {"a", "b", "c"}); }), "expected a, b or c"));
}

TEST(Environment, ANumberIsDecimalDigitsUpToItsLargest) {
  const uint64_t max = UINT32_MAX;
  {
    ScopedVariable v(nullptr);
    EXPECT_EQ(environment_number(kName, max), std::nullopt);
  }
  for (const auto& [text, value] :
       {std::pair{"0", 0ull}, {"42", 42ull}, {"007", 7ull}, {"4294967295", 4294967295ull}}) {
    ScopedVariable v(text);
    EXPECT_EQ(environment_number(kName, max), std::optional<uint64_t>(value)) << text;
  }
  for (const char* bad : {"4294967296", "99999999999999999999999", "-1", "+1", "12a", "0x10", "1e3", " 7"}) {
    ScopedVariable v(bad);
    EXPECT_TRUE(has_part(error_of([] { environment_number(kName, UINT32_MAX); }),
                         std::string(kName) + "=" + bad + ": expected a decimal number from 0 to 4294967295"))
        << bad;
  }
  ScopedVariable v("9");  // a digit past a small largest
  EXPECT_TRUE(has_part(error_of([] { environment_number(kName, 5); }), "from 0 to 5"));
}

// The switches with a bad value in their variable (tests/CMakeLists.txt sets one per run; run
// without it, as in the plain suite, each of these is skipped).
bool set_to_a_bad_value(const char* name, std::initializer_list<const char*> good) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  for (const char* g : good)
    if (std::string(v) == g) return false;
  return true;
}

TEST(Environment, BadFastKernelsIsAnErrorAtTheFirstOp) {
  if (!set_to_a_bad_value("TG_FAST_KERNELS", {"0", "1"})) GTEST_SKIP() << "not set to a bad value";
  const std::string expected = std::string("TG_FAST_KERNELS=") + std::getenv("TG_FAST_KERNELS") + ": expected 0 or 1";
  EXPECT_TRUE(has_part(error_of([] { fast_kernels(); }), expected));
  EXPECT_TRUE(has_part(error_of([] { ones({2, 2}).matmul(ones({2, 2})); }), expected));  // an op: still an error
}

TEST(Environment, BadBf16KernelIsAnErrorAtTheFirstBf16Product) {
  if (!set_to_a_bad_value("TG_BF16_KERNEL", {"fma", "avx512_bf16"})) GTEST_SKIP() << "not set to a bad value";
  const std::string expected =
      std::string("TG_BF16_KERNEL=") + std::getenv("TG_BF16_KERNEL") + ": expected avx512_bf16 or fma";
  EXPECT_EQ(ones({2, 3}).matmul(ones({3, 2})).sum().item<float>(), 12.0f);  // float32 products never ask
  EXPECT_TRUE(has_part(error_of([] { kernels::bf16_kernel(); }), expected));  // what train_gpt's start line asks
  if (!fast_kernels()) return;  // the reference path runs no bfloat16 kernel
  AutocastGuard autocast(kBFloat16);
  EXPECT_TRUE(has_part(error_of([] { ones({2, 3}).matmul(ones({3, 2})); }), expected));
}

TEST(Environment, BadMaxIsaIsAnErrorAtTheFirstFastKernel) {
  if (!set_to_a_bad_value("TG_MAX_ISA", {"avx512", "avx2", "portable"})) GTEST_SKIP() << "not set to a bad value";
  const std::string expected =
      std::string("TG_MAX_ISA=") + std::getenv("TG_MAX_ISA") + ": expected avx512, avx2 or portable";
  EXPECT_TRUE(has_part(error_of([] { kernels::best_isa(); }), expected));
  if (!fast_kernels()) return;  // the reference path asks no instruction set
  EXPECT_TRUE(has_part(error_of([] { softmax(ones({2, 3}), -1); }), expected));  // an op: still an error
}

TEST(Environment, MaxIsaCapsTheInstructionSets) {
  const char* cap = std::getenv("TG_MAX_ISA");
  if (cap == nullptr || (std::string(cap) != "avx2" && std::string(cap) != "portable")) {
    GTEST_SKIP() << "TG_MAX_ISA is not set to avx2 or portable";
  }
  using kernels::Isa;
  EXPECT_FALSE(kernels::isa_available(Isa::kAvx512));
  EXPECT_FALSE(kernels::cpu_has_avx512_bf16());
  EXPECT_EQ(kernels::bf16_kernel(), kernels::bf16_gemm::Kernel::kFma);
  if (std::string(cap) == "portable") {
    EXPECT_FALSE(kernels::isa_available(Isa::kAvx2));
    EXPECT_EQ(kernels::best_isa(), Isa::kPortable);
  }
  EXPECT_TRUE(kernels::isa_available(Isa::kPortable));
}

TEST(Environment, BadDetectAnomalyIsAnErrorAtTheFirstRecordedOp) {
  if (!set_to_a_bad_value("TG_DETECT_ANOMALY", {"0", "1"})) GTEST_SKIP() << "not set to a bad value";
  const std::string expected =
      std::string("TG_DETECT_ANOMALY=") + std::getenv("TG_DETECT_ANOMALY") + ": expected 0 or 1";
  EXPECT_TRUE(has_part(error_of([] { anomaly_mode_enabled(); }), expected));
}

// BLIS's own variable, checked before BLIS starts: BLIS itself would abort or crash.
TEST(Environment, BadBlisArchTypeIsAnErrorAtTheFirstOp) {
  const char* v = std::getenv("BLIS_ARCH_TYPE");
  if (v == nullptr || *v == '\0' ||
      error_of([&] { kernels::checked_blis_arch_type(v, kernels::this_cpu(), kernels::this_blis()); }).empty()) {
    GTEST_SKIP() << "BLIS_ARCH_TYPE is not set to a value BLIS cannot run";
  }
  const std::string expected = std::string("BLIS_ARCH_TYPE=") + v + ": ";
  EXPECT_TRUE(has_part(error_of([] { get_num_threads(); }), expected));  // what starts BLIS
  EXPECT_TRUE(has_part(error_of([] { kernel_info(); }), expected));      // and again: BLIS never started
  if (!fast_kernels()) return;  // the reference path runs no BLIS
  EXPECT_TRUE(has_part(error_of([] { ones({2, 2}).matmul(ones({2, 2})); }), expected));
}

TEST(Environment, BadGradcheckSeedIsAnErrorOfAFuzzedGradcheck) {
  const char* v = std::getenv("TG_GRADCHECK_SEED");
  if (v == nullptr || *v == '\0' || std::string(v).find_first_not_of("0123456789") == std::string::npos) {
    GTEST_SKIP() << "TG_GRADCHECK_SEED is not set to a bad value";
  }
  GradcheckOptions options;
  options.fuzz = 1;
  const Tensor x = randn({3}, nullptr, kFloat64).requires_grad_();
  auto square = [](const std::vector<Tensor>& in) { return in[0] * in[0]; };
  EXPECT_TRUE(has_part(error_of([&] { gradcheck(square, {x}, options); }),
                       std::string("TG_GRADCHECK_SEED=") + v + ": expected a decimal number"));
}

}  // namespace
}  // namespace tg::test
