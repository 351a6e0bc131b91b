// tests/examples/test_notebook_002.cpp — examples/notebook_002_multi_head_attention prints every
// cell of the notebook, in its order, and what PyTorch prints running the same cells from the same
// seed. (The notebook never seeds, so its own printed values cannot be reproduced.)
#include <gtest/gtest.h>

#include "examples/notebook_output.h"

namespace tg::test {
namespace {

const char* kExample = "notebook_002_multi_head_attention";

TEST(NotebookExample002, PrintsEveryCellOfTheNotebookInOrder) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  expect_notebook_cells(split_cells(run_example(kExample), cell_marker()), "notebook_002_cells.json", 1e-4, 1e-4);
}

TEST(NotebookExample002, PrintsWhatPyTorchPrintsRunningTheSameCells) {
  if (!example_exists(kExample)) GTEST_SKIP() << kExample << " not built";
  expect_same_cells(split_cells(run_example(kExample), cell_marker()),
                    split_cells(read_reference_text("notebook_002_torch.txt"), cell_marker()), 1e-4, 1e-4);
}

}  // namespace
}  // namespace tg::test
