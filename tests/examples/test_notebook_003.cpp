// tests/examples/test_notebook_003.cpp — examples/notebook_003_mha_line_by_line walks through
// tg::nn::MultiHeadAttention under the text's headings; every heading and number is the one
// PyTorch prints for the same walk through the book's class (make_notebook_003_reference.py).
#include <gtest/gtest.h>

#include <regex>

#include "examples/notebook_output.h"

namespace tg::test {
namespace {

const char* kExample = "notebook_003_mha_line_by_line";

TEST(NotebookExample003, EveryStepPrintsWhatPyTorchPrints) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  // The text's headings ("Lines 22-24, Query/Key/Value Projections:") and the example's own
  // ("The module's forward, in one call:").
  const std::regex heading(R"((Lines? [0-9-]+, .+|The .+):)");
  const std::vector<PrintedCell> want = split_cells(read_reference_text("notebook_003_torch.txt"), heading);
  ASSERT_EQ(want.size(), 19u);  // 17 of the text's headings and two of the example's
  expect_same_cells(split_cells(run_example(kExample), heading), want, 1e-4, 1e-4);
}

}  // namespace
}  // namespace tg::test
