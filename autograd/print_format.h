// autograd/print_format.h — tensor printing exactly as PyTorch 1.13's repr() does it.
//
// This is a pure formatting function, independent of tg::Tensor: the caller hands over the shape
// and the row-major values, plus the suffixes it wants shown ("dtype=torch.float64",
// "grad_fn=<SoftmaxBackward0>", "requires_grad=True"), and gets back the string that
// torch/_tensor_str.py would print, character for character:
//
//   tensor([[0.4300, 0.1500],
//           [0.5500, 0.8700]], dtype=torch.float64, requires_grad=True)
//
// Read format_repr first; the formatting rules it follows are listed above it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/error.h"

namespace tg::print {

// What the values are, which decides how each one is written.
enum class Kind {
  Floating,  // float32 / float64 / float16: "0.4300", "2.", "1.0000e-05", "nan", "-inf"
  Integer,   // int64, int32, ...: "12"
  Bool,      // "True" / "False"
};

// The data of a tensor, flattened in row-major order.
struct Values {
  std::vector<int64_t> sizes;  // the shape; empty for a 0-d scalar
  Kind kind = Kind::Floating;
  std::vector<double> floats;  // the values when kind == Floating
                               // (a float32 value passes as its exact double)
  std::vector<int64_t> ints;   // the values when kind == Integer, or 0 / 1 when kind == Bool
  // A summarised tensor (more elements than options.threshold) shows only the first and last
  // edgeitems entries of every dimension longer than 2 * edgeitems. With edges_only, the values
  // hold just those, row-major over summary_sizes(sizes, options), so a huge tensor is printed
  // without gathering every element.
  bool edges_only = false;
};

// torch.set_printoptions; the defaults are PyTorch's.
struct PrintOptions {
  int precision = 4;           // digits after the decimal point (fixed and scientific)
  int64_t threshold = 1000;    // more elements than this are summarised with "..."
                               // (INT64_MAX never summarises, like PyTorch's "full" profile)
  int64_t edgeitems = 3;       // items kept at each end of a summarised dimension; at least 1
  int64_t linewidth = 80;      // where rows wrap and suffixes move to a new line
  std::optional<bool> sci_mode;  // force scientific notation on / off; empty = PyTorch decides
};

// The whole repr: "tensor(" + data + suffixes + ")".
// For an empty tensor that is not 1-d, PyTorch shows the shape, so format_repr puts
// "size=(2, 0, 3)" in front of the caller's suffixes itself. Everything else (the dtype, the
// grad_fn / requires_grad) is the caller's to pass, in PyTorch's order; see shows_dtype.
// Throws tg::Error when the values do not match the shape or kind.
//
// The rules (each is spelled out where it is implemented, in print_format.cpp):
//   * one element format per tensor, chosen from the values that will be shown:
//     integer mode ("2.") when every finite value is a whole number, fixed mode ("0.4300")
//     otherwise, scientific ("1.0000e-05") when the nonzero finite magnitudes span more than
//     1000x, exceed 1e8, or (outside integer mode) go below 1e-4;
//   * every element is right-aligned to the widest one;
//   * nested brackets, one line per row, blank lines between blocks of 3-d and deeper tensors;
//   * more than `threshold` elements: only `edgeitems` at each end of every dimension, with "...";
//   * long rows wrap at `linewidth`;
//   * suffixes go after ", " or, when the line would get too long, on a new indented line.
std::string format_repr(const Values& values, const std::vector<std::string>& suffixes,
                        const PrintOptions& options = {});

// Just the data part, as _tensor_str(tensor, indent) does: "[[0.4300, 0.1500],\n ... ]" or
// "3." for a 0-d tensor. `indent` is the column the opening bracket follows (7 after "tensor(").
std::string format_data(const Values& values, int64_t indent, const PrintOptions& options = {});

// The shape of the values an edges_only caller passes: sizes, with every dimension that the
// summary cuts reduced to 2 * edgeitems (sizes itself when the tensor is not summarised).
std::vector<int64_t> summary_sizes(const std::vector<int64_t>& sizes, const PrintOptions& options = {});

// A shape as Python prints a tuple: "()", "(3,)", "(2, 0, 3)".
std::string shape_string(const std::vector<int64_t>& sizes);

// Whether PyTorch names the dtype in the repr ("dtype=torch.float64"). `dtype_name` is torch's
// spelling ("torch.float32"). A non-empty tensor shows it unless it is float32 (the default
// dtype), int64 or bool, which the values already make clear; an empty tensor has no values to
// hint with, so it shows every dtype except float32.
bool shows_dtype(const std::string& dtype_name, bool is_empty);

}  // namespace tg::print
