// examples/notebook_cells.h — what the notebook examples share: the cell markers and the few
// Python reprs that tapegrad's tensor printing (already PyTorch's repr) does not cover.
//
// An example prints, for every code cell of its notebook in the notebook's order, the cell's
// label as the notebook shows it, then what the cell printed (a document without cells is
// walked through by its own headings instead):
//
//   In [5]:
//   torch.Size([4, 8, 2])
//
// so its output can be read side by side with the notebook (and compared cell by cell).
#pragma once
#include <cstdint>
#include <iostream>
#include <string>

#include "autograd/random/generator.h"
#include "autograd/tensor.h"

namespace notebook {

// A marker line naming the part of the notebook whose output follows (a blank line before it,
// except at the very top).
inline void marker(const std::string& label) {
  static bool first = true;
  if (!first) std::cout << "\n";
  first = false;
  std::cout << label << "\n";
}

// The marker "In [N]:" of a notebook cell. The label is the notebook's: a number, or "None" for a
// cell that was never run.
inline void cell(const std::string& label) { marker("In [" + label + "]:"); }
inline void cell(int label) { cell(std::to_string(label)); }

// Python's repr of a torch.Size: "torch.Size([4, 8, 2])".
inline std::string torch_size(const tg::Shape& shape) {
  std::string s = "torch.Size([";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "])";
}

// torch.manual_seed returns the default generator, which a notebook shows as
// "<torch._C.Generator at 0x10adb0b10>"; ours prints the same way, with its own address.
inline void print_generator(const tg::Generator& g) {
  std::cout << "<tg::Generator at " << static_cast<const void*>(&g) << ">\n";
}

// Python's repr of a bool.
inline const char* python_bool(bool b) { return b ? "True" : "False"; }

}  // namespace notebook
