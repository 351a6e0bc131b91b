// tests/examples/test_notebook_000.cpp — examples/notebook_000_attention_step_by_step against the
// notebook (cells 3 to 25, 28 to 36, 45 and 131, the reproducible ones; cell 24's output is cut
// short in the notebook and compared as far as it goes) and against PyTorch running the same cells
// (all of them, the dropout masks of cells 26 and 27 included).
#include <gtest/gtest.h>

#include "examples/notebook_output.h"

namespace tg::test {
namespace {

const char* kExample = "notebook_000_attention_step_by_step";

TEST(NotebookExample000, PrintsTheNotebooksNumbersInItsReproducibleCells) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  expect_notebook_cells(split_cells(run_example(kExample), cell_marker()), "notebook_000_cells.json", 1e-4, 1e-4);
}

TEST(NotebookExample000, PrintsWhatPyTorchPrintsRunningTheSameCells) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  expect_same_cells(split_cells(run_example(kExample), cell_marker()),
                    split_cells(read_reference_text("notebook_000_torch.txt"), cell_marker()), 1e-4, 1e-4);
}

}  // namespace
}  // namespace tg::test
