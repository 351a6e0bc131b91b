// tests/examples/notebook_output.h — running a notebook example and reading the numbers it
// printed, cell by cell, to compare them with the notebook's (or PyTorch's).
//
// An example prints a marker line before each cell's output ("In [5]:", or a heading for a text
// without cells). A printed text is split at its marker lines; the numbers of a cell are the
// tokens a Python reader would see as numbers: "1.9269", "-inf", "2.", "1.0000e-05", "True" (1)
// and "False" (0); digits inside names (grad_fn=<MmBackward0>, torch.float64) and a hexadecimal
// address (<torch._C.Generator at 0x10adb0b10>) are not numbers.
#pragma once
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace tg::test {

struct PrintedCell {
  std::string label;                 // the marker line
  std::vector<std::string> numbers;  // as printed
};

// The standard output of the example program `name` (built in TG_EXAMPLES_DIR); throws
// tg::Error naming the program if it cannot be run or does not exit with 0. environment:
// "NAME=value " set for the program only ("TG_FAST_KERNELS=0 "), or "" (it inherits the test's).
std::string run_example(const std::string& name, const std::string& environment = "");
// Whether the example `name` was built (the examples are optional: -DTG_BUILD_EXAMPLES=OFF).
bool example_exists(const std::string& name);

// The marker "In [N]:" of a notebook cell.
const std::regex& cell_marker();

// The cells of a printed text: every line matching marker starts one; lines before the first
// marker are ignored.
std::vector<PrintedCell> split_cells(const std::string& text, const std::regex& marker);
std::vector<std::string> numbers_in(const std::string& text);
// The value of a number token: "True" 1, "False" 0, "-inf", "nan", "2.", "1.0000e-05".
double number_value(const std::string& token);

// Equal counts and |got - want| <= atol + rtol * |want| for every number (infinities equal when
// equal, NaN only to NaN); a failure names `where`, the index and both tokens.
::testing::AssertionResult numbers_match(const std::vector<std::string>& got, const std::vector<std::string>& want,
                                         double atol, double rtol, const std::string& where);

// Cell by cell: the same marker lines in the same order, then numbers_match for each cell.
void expect_same_cells(const std::vector<PrintedCell>& got, const std::vector<PrintedCell>& want, double atol,
                       double rtol);

// Against a notebook's numbers (tests/reference/notebook_NNN_cells.json, written by
// extract_notebook_cells.py): the same cells in the same order ("In [N]:" for each label), and
// numbers_match for each cell the file lists (on its first numbers
// only when the file marks the cell "truncated": the notebook cut its output short).
void expect_notebook_cells(const std::vector<PrintedCell>& got, const std::string& json_file, double atol, double rtol);

// The text of a file under TG_REFERENCE_DIR.
std::string read_reference_text(const std::string& file_name);

}  // namespace tg::test
