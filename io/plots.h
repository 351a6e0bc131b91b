// io/plots.h — the examples' pictures as SVG: a heatmap of a matrix (attention
// weights: query tokens down, key tokens across, the value in each cell) and a line plot (loss
// curves). Each has a *_svg function returning the document and a write_*_svg that saves it
// atomically (tg::write_file_atomically, io/atomic_file.h).
//
// Heatmap colours follow the viridis scale (dark purple = low, yellow = high). A cell the mask
// hides is drawn empty: white with grey hatching and no number, so a hidden cell never looks
// like a weight of 0 (which is dark purple and prints 0.0000). Cells holding -inf (masked
// scores) are drawn empty too; NaN and +inf cells are empty but say "nan" / "inf".
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace tg {

struct HeatmapOptions {
  Tensor masked;                     // optional bool (rows, cols): true = hidden, drawn empty
  std::optional<double> vmin, vmax;  // the colour scale's ends; default: the shown values' min, max
  int decimals = -1;                 // digits after the point; -1: 4 for |values| < 10, else 2 (0 from 1000)
  std::string row_axis = "row", col_axis = "column";  // axis titles
};

// values (rows, cols), any dtype; row_labels / col_labels: one per row / column, or empty for
// 0, 1, 2, ... Errors: "heatmap: expected a 2-d tensor (rows, cols), got shape (2,6,6)",
// "heatmap: 5 row labels for 6 rows", "heatmap: masked has shape (5,5), expected (6,6)".
std::string heatmap_svg(const Tensor& values, const std::vector<std::string>& row_labels,
                        const std::vector<std::string>& col_labels, const std::string& title,
                        const HeatmapOptions& options = {});
void write_heatmap_svg(const std::string& path, const Tensor& values, const std::vector<std::string>& row_labels,
                       const std::vector<std::string>& col_labels, const std::string& title,
                       const HeatmapOptions& options = {});

// One line of a line plot: (x, y) points in order. Points that are not finite (a loss that
// became NaN) are not drawn: the line breaks there and the legend says how many were left out.
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

// Errors: "line_plot: no series", "line_plot: no finite point to draw".
std::string line_plot_svg(const std::vector<Series>& series, const std::string& title, const std::string& x_label,
                          const std::string& y_label);
void write_line_plot_svg(const std::string& path, const std::vector<Series>& series, const std::string& title,
                         const std::string& x_label, const std::string& y_label);

// Attention weights as heatmaps in dir, one file per matrix, tokens on both axes, the colour
// scale fixed to [0, 1]:
//   (T, T)        dir/name.svg
//   (b, T, T)     dir/name_b0.svg, dir/name_b1.svg, ...
//   (b, h, T, T)  dir/name_b0_h0.svg, dir/name_b0_h1.svg, ...
// causal = true hides the cells above the diagonal (a token does not see later tokens).
// Returns the paths written, in that order.
// Labels "t0", "t1", ... for n positions, where the tokens are random vectors with no text.
std::vector<std::string> position_labels(int64_t n);

std::vector<std::string> save_attention_heatmaps(const std::string& dir, const std::string& name, const Tensor& weights,
                                                 const std::vector<std::string>& tokens, bool causal);

}  // namespace tg
