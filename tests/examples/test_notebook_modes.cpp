// tests/examples/test_notebook_modes.cpp — every notebook example prints the same numbers with
// the fast kernels off (TG_FAST_KERNELS=0: the notebook's steps, the reference code) as on.
// The numbers are printed with 4 decimals: two runs that agree to float rounding may differ by
// one unit in the last one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/notebook_output.h"

namespace tg::test {
namespace {

const char* const kNotebooks[] = {"notebook_000_attention_step_by_step", "notebook_001_self_attention",
                                  "notebook_002_multi_head_attention", "notebook_003_mha_line_by_line",
                                  "notebook_004_multi_headed_attention"};

TEST(NotebookExamples, PrintTheSameNumbersWithTheFastKernelsOffAndOn) {
  for (const std::string name : kNotebooks) {
    if (!example_exists(name)) GTEST_SKIP() << name << " not built";
    SCOPED_TRACE(name);
    const std::string off = run_example(name, "TG_FAST_KERNELS=0 "), on = run_example(name, "TG_FAST_KERNELS=1 ");
    const std::vector<std::string> numbers = numbers_in(on);
    EXPECT_GT(numbers.size(), 20u) << on;
    EXPECT_TRUE(numbers_match(numbers_in(off), numbers, 1e-4, 1e-5, "TG_FAST_KERNELS=0 vs 1"));
  }
}

}  // namespace
}  // namespace tg::test
