// tests/examples/test_notebook_004.cpp — examples/notebook_004_multi_headed_attention against the
// notebook: every cell in order, and the numbers of cells 17 to 34 (seed 42).
#include <gtest/gtest.h>

#include "examples/notebook_output.h"

namespace tg::test {
namespace {

const char* kExample = "notebook_004_multi_headed_attention";

TEST(NotebookExample004, PrintsTheNotebooksNumbersInCells17To34) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  expect_notebook_cells(split_cells(run_example(kExample), cell_marker()), "notebook_004_cells.json", 1e-4, 1e-4);
}

}  // namespace
}  // namespace tg::test
