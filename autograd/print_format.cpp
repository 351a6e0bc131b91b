// autograd/print_format.cpp — PyTorch 1.13's tensor repr (torch/_tensor_str.py), rule by rule.
#include "autograd/print_format.h"
#include "autograd/error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

namespace tg::print {
namespace {

// The repr starts with "tensor(", and the data is indented to line up under its first bracket.
constexpr const char* kPrefix = "tensor(";
constexpr int64_t kPrefixLength = 7;

// ------------------------------------------------------------------------------------------
// Checking what the caller passed

int64_t element_count(const std::vector<int64_t>& sizes) {
  int64_t count = 1;  // a 0-d tensor (no sizes) holds one element
  for (int64_t size : sizes) {
    if (size < 0) {
      throw Error("tg::print: negative size " + std::to_string(size) +
                  " in shape " + shape_string(sizes));
    }
    count *= size;
  }
  return count;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::Floating: return "Floating";
    case Kind::Integer: return "Integer";
    case Kind::Bool: return "Bool";
  }
  return "unknown";
}

void check_values(const Values& values, const PrintOptions& options) {
  const int64_t count = element_count(values.edges_only ? summary_sizes(values.sizes, options) : values.sizes);
  const bool floating = values.kind == Kind::Floating;
  const size_t used = floating ? values.floats.size() : values.ints.size();
  const size_t unused = floating ? values.ints.size() : values.floats.size();
  const char* used_name = floating ? "floats" : "ints";
  const char* unused_name = floating ? "ints" : "floats";
  if (static_cast<int64_t>(used) != count) {
    throw Error(std::string("tg::print: shape ") + shape_string(values.sizes) +
                " has " + std::to_string(count) + " elements but " + used_name +
                " holds " + std::to_string(used) + " values (kind " +
                kind_name(values.kind) + ")");
  }
  if (unused != 0) {
    throw Error(std::string("tg::print: kind ") + kind_name(values.kind) +
                " reads " + used_name + ", but " + unused_name + " holds " +
                std::to_string(unused) + " values too");
  }
  if (values.kind == Kind::Bool) {
    for (int64_t v : values.ints) {
      if (v != 0 && v != 1) {
        throw Error("tg::print: a Bool value must be 0 or 1, got " +
                    std::to_string(v));
      }
    }
  }
}

void check_options(const PrintOptions& options) {
  if (options.precision < 0) {
    throw Error("tg::print: precision must be >= 0, got " +
                std::to_string(options.precision));
  }
  // PyTorch accepts edgeitems = 0 but then shows a whole 1-d row after "..." (self[-0:] is the
  // whole row in Python); we do not copy that accident.
  if (options.edgeitems < 1) {
    throw Error("tg::print: edgeitems must be >= 1, got " +
                std::to_string(options.edgeitems));
  }
}

// ------------------------------------------------------------------------------------------
// Writing one number the way Python's str.format does

// Python writes non-finite floats as "nan", "inf", "-inf" in every format (never "-nan").
std::string python_nonfinite(double value) {
  if (std::isnan(value)) return "nan";
  return value < 0 ? "-inf" : "inf";
}

// std::to_chars rounds the exact binary value correctly, as Python does, and ignores the locale.
std::string to_chars_string(double value, std::chars_format format, int precision) {
  std::string text(400 + static_cast<size_t>(precision), '\0');  // 1e308 in fixed is 309 digits
  auto result = std::to_chars(text.data(), text.data() + text.size(), value, format, precision);
  text.resize(static_cast<size_t>(result.ptr - text.data()));
  return text;
}

// "{:.4f}".format(value): fixed point with `precision` decimals, e.g. "0.4300", "-0.0000".
std::string python_fixed(double value, int precision) {
  if (!std::isfinite(value)) return python_nonfinite(value);
  return to_chars_string(value, std::chars_format::fixed, precision);
}

// "{:.4e}".format(value): one digit, `precision` decimals, a signed exponent of at least two
// digits, e.g. "1.0000e-05", "2.5000e+08", "1.0000e+300".
std::string python_scientific(double value, int precision) {
  if (!std::isfinite(value)) return python_nonfinite(value);
  return to_chars_string(value, std::chars_format::scientific, precision);
}

std::string pad_left(const std::string& text, size_t width) {
  if (text.size() >= width) return text;
  return std::string(width - text.size(), ' ') + text;
}

// ------------------------------------------------------------------------------------------
// Which elements are shown

// The shape, the row-major strides of the values as stored, and whether the tensor is summarised.
struct Layout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // over summary_sizes when edges_only, else over sizes
  bool summarise = false;
  bool edges_only = false;
  int64_t edgeitems = 3;
};

// PyTorch summarises when the tensor has more elements than the threshold.
bool summarises(const std::vector<int64_t>& sizes, const PrintOptions& options) {
  return element_count(sizes) > options.threshold;
}

Layout make_layout(const Values& values, const PrintOptions& options) {
  Layout layout;
  layout.sizes = values.sizes;
  const std::vector<int64_t> stored = values.edges_only ? summary_sizes(values.sizes, options) : values.sizes;
  layout.strides.assign(stored.size(), 1);
  for (size_t d = stored.size(); d-- > 1;) {
    layout.strides[d - 1] = layout.strides[d] * stored[d];
  }
  layout.summarise = summarises(values.sizes, options);
  layout.edges_only = values.edges_only;
  layout.edgeitems = options.edgeitems;
  return layout;
}

// In a summarised tensor, a dimension is cut only when it is longer than 2 * edgeitems:
// its first and last edgeitems entries are shown with "..." between them.
bool is_cut(const Layout& layout, size_t dim) {
  return layout.summarise && layout.sizes[dim] > 2 * layout.edgeitems;
}

std::vector<int64_t> shown_positions(const Layout& layout, size_t dim) {
  const int64_t size = layout.sizes[dim];
  std::vector<int64_t> positions;
  if (is_cut(layout, dim)) {
    for (int64_t i = 0; i < layout.edgeitems; ++i) positions.push_back(i);
    for (int64_t i = size - layout.edgeitems; i < size; ++i) positions.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) positions.push_back(i);
  }
  return positions;
}

// Where entry `position` of dimension dim sits in the stored values: itself, or for an
// edges_only cut dimension, the last edgeitems entries follow the first ones directly.
int64_t stored_index(const Layout& layout, size_t dim, int64_t position) {
  if (layout.edges_only && is_cut(layout, dim) && position >= layout.edgeitems) {
    return position - (layout.sizes[dim] - 2 * layout.edgeitems);
  }
  return position;
}

// The flat indices of every shown element. PyTorch picks the number format from these only
// (get_summarized_data), so a huge value hidden behind "..." does not widen the columns.
void collect_shown(const Layout& layout, size_t dim, int64_t offset, std::vector<int64_t>& out) {
  if (dim == layout.sizes.size()) {
    out.push_back(offset);
    return;
  }
  for (int64_t i : shown_positions(layout, dim)) {
    collect_shown(layout, dim + 1, offset + stored_index(layout, dim, i) * layout.strides[dim], out);
  }
}

// ------------------------------------------------------------------------------------------
// The element format (PyTorch's _Formatter): one format and one width for the whole tensor

class ElementFormatter {
 public:
  ElementFormatter(const Values& values, const std::vector<int64_t>& shown,
                   const PrintOptions& options)
      : values_(values), precision_(options.precision) {
    if (values.kind == Kind::Floating) {
      choose_float_format(shown, options);
    } else {
      // Integers and bools are written as Python writes them; the width is the longest one.
      for (int64_t index : shown) width_ = std::max(width_, plain_text(index).size());
    }
  }

  size_t width() const { return width_; }

  // The element at `flat_index`, right-aligned to the common width.
  std::string format(int64_t flat_index) const {
    if (values_.kind != Kind::Floating) return pad_left(plain_text(flat_index), width_);
    const double value = values_.floats[static_cast<size_t>(flat_index)];
    if (sci_mode_) return pad_left(python_scientific(value, precision_), width_);
    if (int_mode_) {
      // Integer mode writes "3." so the reader still sees a float; "nan" / "inf" get no dot.
      std::string text = python_fixed(value, 0);
      if (std::isfinite(value)) text += ".";
      return pad_left(text, width_);
    }
    return pad_left(python_fixed(value, precision_), width_);
  }

 private:
  std::string plain_text(int64_t flat_index) const {
    const int64_t value = values_.ints[static_cast<size_t>(flat_index)];
    if (values_.kind == Kind::Bool) return value ? "True" : "False";
    return std::to_string(value);
  }

  void choose_float_format(const std::vector<int64_t>& shown, const PrintOptions& options) {
    // Only nonzero finite values decide the format: zeros, nan and inf fit any of them.
    std::vector<double> deciding;
    for (int64_t index : shown) {
      const double value = values_.floats[static_cast<size_t>(index)];
      if (std::isfinite(value) && value != 0.0) deciding.push_back(value);
    }
    // None at all: PyTorch keeps integer mode with width 1 and stops here, before it even looks
    // at options.sci_mode.
    if (deciding.empty()) return;

    double max_abs = 0.0;
    double min_abs = std::abs(deciding.front());
    for (double value : deciding) {
      max_abs = std::max(max_abs, std::abs(value));
      min_abs = std::min(min_abs, std::abs(value));
      // Integer mode holds only while every value is a whole number.
      if (value != std::ceil(value)) int_mode_ = false;
    }
    const bool wide_range = max_abs / min_abs > 1000.0 || max_abs > 1.0e8;
    if (int_mode_) {
      // Whole numbers switch to scientific only when they span more than 1000x or pass 1e8.
      sci_mode_ = wide_range;
      for (double value : deciding) {
        // Width of "123." (the +1 is the dot), or of the scientific form.
        const size_t length = sci_mode_ ? python_scientific(value, precision_).size()
                                        : python_fixed(value, 0).size() + 1;
        width_ = std::max(width_, length);
      }
    } else {
      // Fractions also switch to scientific when the smallest one is below 1e-4.
      sci_mode_ = wide_range || min_abs < 1.0e-4;
      for (double value : deciding) {
        const size_t length = sci_mode_ ? python_scientific(value, precision_).size()
                                        : python_fixed(value, precision_).size();
        width_ = std::max(width_, length);
      }
    }
    // torch.set_printoptions(sci_mode=...) overrides the choice, but not the width.
    if (options.sci_mode.has_value()) sci_mode_ = *options.sci_mode;
  }

  const Values& values_;
  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t width_ = 1;
};

// ------------------------------------------------------------------------------------------
// Brackets, rows and blocks (PyTorch's _tensor_str_with_formatter and _vector_str)

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) joined += separator;
    joined += parts[i];
  }
  return joined;
}

class DataWriter {
 public:
  DataWriter(const Layout& layout, const ElementFormatter& formatter, int64_t linewidth)
      : layout_(layout), formatter_(formatter), linewidth_(linewidth) {}

  // The sub-tensor that starts at `offset` and spans dimensions dim.., whose opening bracket
  // follows column `indent`.
  std::string block(size_t dim, int64_t offset, int64_t indent) const {
    if (dim == layout_.sizes.size()) return formatter_.format(offset);  // 0-d: the bare value
    if (dim + 1 == layout_.sizes.size()) return row(dim, offset, indent);
    return stacked_blocks(dim, offset, indent);
  }

 private:
  // A 1-d row: "[a, b, c]". A summarised row keeps " ..." as one more item. Rows wrap after as
  // many items as fit in linewidth - indent, counting each as width + 2 for its ", ", and at
  // least one per line; continuation lines line up under the first item.
  // "[" + inner + "]", built by appending (g++ 12 warns falsely about `"[" + s + "]"` here).
  static std::string bracketed(const std::string& inner) {
    std::string s;
    s.reserve(inner.size() + 2);
    s += '[';
    s += inner;
    s += ']';
    return s;
  }

  std::string row(size_t dim, int64_t offset, int64_t indent) const {
    std::vector<std::string> items;
    const std::vector<int64_t> positions = shown_positions(layout_, dim);
    for (size_t i = 0; i < positions.size(); ++i) {
      if (is_cut(layout_, dim) && i == static_cast<size_t>(layout_.edgeitems)) {
        items.push_back(" ...");
      }
      items.push_back(formatter_.format(offset + stored_index(layout_, dim, positions[i]) * layout_.strides[dim]));
    }
    const int64_t item_length = static_cast<int64_t>(formatter_.width()) + 2;
    // Python floors the quotient; when it is negative or zero the max makes it 1 either way.
    const int64_t items_per_line = std::max<int64_t>(1, (linewidth_ - indent) / item_length);

    std::vector<std::string> lines;
    for (size_t first = 0; first < items.size(); first += static_cast<size_t>(items_per_line)) {
      const size_t last = std::min(items.size(), first + static_cast<size_t>(items_per_line));
      const std::vector<std::string> line_items(items.begin() + static_cast<std::ptrdiff_t>(first),
                                                items.begin() + static_cast<std::ptrdiff_t>(last));
      lines.push_back(join(line_items, ", "));
    }
    std::string separator = ",\n";
    separator.append(static_cast<size_t>(indent + 1), ' ');
    return bracketed(join(lines, separator));
  }

  // Two or more dimensions: the sub-blocks, each on its own line, with one blank line between
  // them for every dimension beyond 2 (a 3-d tensor's matrices are separated by one empty line,
  // a 4-d tensor's 3-d blocks by two). A cut dimension shows "..." as one more sub-block.
  std::string stacked_blocks(size_t dim, int64_t offset, int64_t indent) const {
    std::vector<std::string> slices;
    const std::vector<int64_t> positions = shown_positions(layout_, dim);
    for (size_t i = 0; i < positions.size(); ++i) {
      if (is_cut(layout_, dim) && i == static_cast<size_t>(layout_.edgeitems)) {
        slices.push_back("...");
      }
      slices.push_back(block(dim + 1, offset + stored_index(layout_, dim, positions[i]) * layout_.strides[dim],
                             indent + 1));
    }
    const size_t dims_here = layout_.sizes.size() - dim;
    // ",", then one newline per dim below this one, then the indent of the next block
    std::string separator = ",";
    separator.append(dims_here - 1, '\n');
    separator.append(static_cast<size_t>(indent + 1), ' ');
    return bracketed(join(slices, separator));
  }

  const Layout& layout_;
  const ElementFormatter& formatter_;
  int64_t linewidth_;
};

// ------------------------------------------------------------------------------------------
// Suffixes (PyTorch's _add_suffixes)

// Each suffix goes after ", " on the current line, unless that would pass the line width; then
// it starts a new line indented under the data. PyTorch measures the last line as
// len(text) - text.rfind("\n") + 1, which is 2 more than its real length, so a suffix moves down
// a little earlier than the width alone would require; we measure the same way to match.
std::string add_suffixes(const std::string& text, const std::vector<std::string>& suffixes,
                         int64_t indent, int64_t linewidth) {
  const size_t last_newline = text.rfind('\n');
  const int64_t real_last_line =
      static_cast<int64_t>(last_newline == std::string::npos ? text.size()
                                                             : text.size() - last_newline - 1);
  int64_t last_line_length = real_last_line + 2;  // PyTorch's over-count, see above

  std::string result = text;
  for (const std::string& suffix : suffixes) {
    const int64_t suffix_length = static_cast<int64_t>(suffix.size());
    if (last_line_length + suffix_length + 2 > linewidth) {
      result += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suffix;
      last_line_length = indent + suffix_length;  // measured exactly after a line break
    } else {
      result += ", " + suffix;
      last_line_length += suffix_length + 2;
    }
  }
  return result + ")";
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& sizes) {
  // Python tuples: "()", "(3,)" (a one-element tuple keeps its comma), "(2, 0, 3)".
  std::string text = "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(sizes[i]);
  }
  if (sizes.size() == 1) text += ",";
  return text + ")";
}

bool shows_dtype(const std::string& dtype_name, bool is_empty) {
  if (dtype_name == "torch.float32") return false;  // the default dtype is never named
  if (is_empty) return true;                        // no values to tell int64 / bool apart
  return dtype_name != "torch.int64" && dtype_name != "torch.bool";
}

std::vector<int64_t> summary_sizes(const std::vector<int64_t>& sizes, const PrintOptions& options) {
  std::vector<int64_t> kept = sizes;
  if (!summarises(sizes, options)) return kept;
  for (int64_t& size : kept) size = std::min(size, 2 * options.edgeitems);
  return kept;
}

std::string format_data(const Values& values, int64_t indent, const PrintOptions& options) {
  check_options(options);
  check_values(values, options);
  // An empty tensor prints as "[]" whatever its shape.
  if (element_count(values.sizes) == 0) return "[]";

  const Layout layout = make_layout(values, options);
  std::vector<int64_t> shown;
  collect_shown(layout, 0, 0, shown);
  const ElementFormatter formatter(values, shown, options);
  return DataWriter(layout, formatter, options.linewidth).block(0, 0, indent);
}

std::string format_repr(const Values& values, const std::vector<std::string>& suffixes,
                        const PrintOptions& options) {
  const std::string data = format_data(values, kPrefixLength, options);

  // An empty tensor that is not 1-d shows its shape first, as NumPy does: "size=(0, 3)".
  std::vector<std::string> all_suffixes;
  if (element_count(values.sizes) == 0 && values.sizes.size() != 1) {
    all_suffixes.push_back("size=" + shape_string(values.sizes));
  }
  all_suffixes.insert(all_suffixes.end(), suffixes.begin(), suffixes.end());

  return add_suffixes(kPrefix + data, all_suffixes, kPrefixLength, options.linewidth);
}

}  // namespace tg::print
