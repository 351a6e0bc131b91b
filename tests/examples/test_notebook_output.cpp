// tests/examples/test_notebook_output.cpp — how a printed text is read: cells at their markers,
// and only what a Python reader would call numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "examples/notebook_output.h"
#include "test_util.h"

namespace tg::test {
namespace {

using Tokens = std::vector<std::string>;

TEST(NotebookOutput, NumbersAreWhatAPythonReaderSeesAsNumbers) {
  EXPECT_EQ(numbers_in("tensor([[ 1.9269, -inf],\n        [2., 1.0000e-05]], grad_fn=<SelectBackward0>)"),
            (Tokens{"1.9269", "-inf", "2.", "1.0000e-05"}));
  EXPECT_EQ(numbers_in("(torch.Size([2, 10, 8]), torch.float64, x1, 3.5.1)"), (Tokens{"2", "10", "8"}));
  EXPECT_EQ(numbers_in("<torch._C.Generator at 0x10adb0b10>"), Tokens{});
  EXPECT_EQ(numbers_in("tensor([[False,  True]]) nan 22-24"), (Tokens{"False", "True", "nan", "22", "24"}));
}

TEST(NotebookOutput, NumberValuesReadBoolsInfinitiesAndTrailingDots) {
  EXPECT_EQ(number_value("True"), 1.0);
  EXPECT_EQ(number_value("False"), 0.0);
  EXPECT_EQ(number_value("2."), 2.0);
  EXPECT_EQ(number_value("-1.0734e+00"), -1.0734);
  EXPECT_TRUE(std::isinf(number_value("-inf")) && number_value("-inf") < 0);
  EXPECT_TRUE(std::isnan(number_value("nan")));
}

TEST(NotebookOutput, CellsStartAtTheirMarkersInOrder) {
  const std::vector<PrintedCell> cells =
      split_cells("ignored 7\nIn [5]:\ntorch.Size([4, 8, 2])\n\nIn [None]:\nIn [5]:\nTrue\n", cell_marker());
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].label, "In [5]:");
  EXPECT_EQ(cells[0].numbers, (Tokens{"4", "8", "2"}));
  EXPECT_EQ(cells[1].label, "In [None]:");
  EXPECT_TRUE(cells[1].numbers.empty());
  EXPECT_EQ(cells[2].numbers, Tokens{"True"});
}

TEST(NotebookOutput, MismatchesNameTheCellTheIndexAndBothNumbers) {
  EXPECT_TRUE(numbers_match({"0.60381", "-inf"}, {"0.6038", "-inf"}, 1e-4, 1e-4, "cell 3"));
  const std::string message = numbers_match({"0.6038", "1."}, {"0.6038", "1.0003"}, 1e-4, 1e-4, "cell 3").message();
  EXPECT_TRUE(has_part(message, "cell 3: number 1 is 1., expected 1.0003"));
  EXPECT_TRUE(has_part(numbers_match({"1"}, {"1", "2"}, 0, 0, "cell 4").message(), "cell 4: printed 1 numbers, expected 2"));
  EXPECT_FALSE(numbers_match({"inf"}, {"-inf"}, 1, 1, "cell 5"));
  EXPECT_FALSE(numbers_match({"0.5"}, {"nan"}, 1, 1, "cell 6"));
}

TEST(NotebookOutput, AMissingExampleIsAnErrorNamingIt) {
  EXPECT_FALSE(example_exists("no_such_example"));
  expect_error([] { run_example("no_such_example"); }, {"run_example:", "no_such_example: no such program"});
}

}  // namespace
}  // namespace tg::test
