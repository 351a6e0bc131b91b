// tests/examples/test_notebook_001.cpp — examples/notebook_001_self_attention against the notebook
// (cells 5 to 44, the reproducible ones) and against PyTorch running the same cells (all of them).
#include <gtest/gtest.h>

#include "examples/notebook_output.h"

namespace tg::test {
namespace {

const char* kExample = "notebook_001_self_attention";

TEST(NotebookExample001, PrintsTheNotebooksNumbersInCells5To44) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  expect_notebook_cells(split_cells(run_example(kExample), cell_marker()), "notebook_001_cells.json", 1e-4, 1e-4);
}

TEST(NotebookExample001, PrintsWhatPyTorchPrintsRunningTheSameCells) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  expect_same_cells(split_cells(run_example(kExample), cell_marker()),
                    split_cells(read_reference_text("notebook_001_torch.txt"), cell_marker()), 1e-4, 1e-4);
}

}  // namespace
}  // namespace tg::test
