// io/plots.cpp — heatmap and line plot layouts on top of the SVG writer.
#include "io/plots.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "autograd/ops.h"
#include "io/atomic_file.h"
#include "io/svg.h"

namespace tg {

namespace {

constexpr double kPad = 16, kTitleFont = 15, kFont = 12;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // "-0.0000"
  return s;
}

// Fixed, then trailing zeros dropped: "0.25", "1", "-3.5".
std::string short_number(double v, int decimals) {
  std::string s = fixed(v, decimals);
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

struct Rgb {
  double r, g, b;
};

// The viridis colour scale at t in [0, 1], interpolated between nine of its colours.
Rgb viridis(double t) {
  static const std::array<Rgb, 9> stops{{{68, 1, 84}, {71, 45, 123}, {59, 82, 139}, {44, 114, 142}, {33, 145, 140},
                                         {40, 174, 128}, {94, 201, 98}, {173, 220, 48}, {253, 231, 37}}};
  t = std::clamp(t, 0.0, 1.0) * (stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(i);
  const Rgb &a = stops[i], &b = stops[i + 1];
  return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

std::string hex(const Rgb& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(c.r)), static_cast<int>(std::lround(c.g)),
                static_cast<int>(std::lround(c.b)));
  return buf;
}

// Dark text on light cells, white on dark ones.
std::string text_colour_on(const Rgb& c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 140 ? "white" : "#1a1a1a"; }

std::vector<std::string> labels_or_indices(const std::vector<std::string>& labels, int64_t n, const char* what) {
  if (labels.empty()) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(std::to_string(i));
    return out;
  }
  if (static_cast<int64_t>(labels.size()) != n) {
    throw Error(std::string("heatmap: ") + std::to_string(labels.size()) + " " + what + " labels for " +
                std::to_string(n) + " " + what + "s");
  }
  return labels;
}

double widest(const std::vector<std::string>& texts, double font) {
  double w = 0;
  for (const std::string& s : texts) w = std::max(w, text_width(s, font));
  return w;
}

}  // namespace

// --- heatmap -------------------------------------------------------------------------------------

std::string heatmap_svg(const Tensor& values, const std::vector<std::string>& row_labels_in,
                        const std::vector<std::string>& col_labels_in, const std::string& title,
                        const HeatmapOptions& options) {
  if (!values.defined() || values.dim() != 2) {
    throw Error("heatmap: expected a 2-d tensor (rows, cols), got " +
                (values.defined() ? "shape " + shape_str(values.sizes()) : std::string("an undefined tensor")));
  }
  const int64_t rows = values.size(0), cols = values.size(1);
  if (rows == 0 || cols == 0) throw Error("heatmap: nothing to draw in a tensor of shape " + shape_str(values.sizes()));
  const std::vector<std::string> row_labels = labels_or_indices(row_labels_in, rows, "row");
  const std::vector<std::string> col_labels = labels_or_indices(col_labels_in, cols, "column");
  std::vector<int64_t> hidden(static_cast<size_t>(rows * cols), 0);
  if (options.masked.defined()) {
    if (options.masked.dtype() != kBool) {
      throw Error(std::string("heatmap: masked must be a bool tensor, got ") + dtype_name(options.masked.dtype()));
    }
    if (options.masked.sizes() != values.sizes()) {
      throw Error("heatmap: masked has shape " + shape_str(options.masked.sizes()) + ", expected " +
                  shape_str(values.sizes()));
    }
    hidden = options.masked.detach().tolist<int64_t>();
  }
  const std::vector<double> v = values.detach().tolist<double>();  // (rows, cols), row-major

  // What each cell shows: a colour and a number, or nothing (hidden, -inf), or a word (nan, inf).
  auto shown = [&](size_t i) { return !hidden[i] && std::isfinite(v[i]); };
  double lo = INFINITY, hi = -INFINITY, max_abs = 0;
  bool any_empty = false;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!shown(i)) { any_empty = true; continue; }
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
    max_abs = std::max(max_abs, std::abs(v[i]));
  }
  if (lo > hi) lo = 0, hi = 1;  // nothing shown: any scale will do
  lo = options.vmin.value_or(lo);
  hi = options.vmax.value_or(hi);
  if (options.vmin && options.vmax && !(lo < hi)) {
    throw Error("heatmap: vmin (" + short_number(lo, 6) + ") must be below vmax (" + short_number(hi, 6) + ")");
  }
  if (!(lo < hi)) lo -= 0.5, hi += 0.5;  // all values equal
  const int decimals = options.decimals >= 0 ? options.decimals : max_abs < 10 ? 4 : max_abs < 1000 ? 2 : 0;
  std::vector<std::string> texts(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (shown(i)) texts[i] = fixed(v[i], decimals);
    else if (!hidden[i] && std::isnan(v[i])) texts[i] = "nan";
    else if (!hidden[i] && v[i] > 0) texts[i] = "inf";
  }

  // Layout, left to right: row axis title, row labels, the grid, the colour scale.
  const double cell_w = std::max(50.0, widest(texts, kFont) + 16), cell_h = 30;
  const double row_label_w = widest(row_labels, kFont), col_label_w = widest(col_labels, kFont);
  const bool rotate_cols = col_label_w > cell_w - 6;
  const double col_labels_h = rotate_cols ? 0.71 * (col_label_w + kFont) + 6 : kFont + 8;
  const double grid_x = kPad + 22 + row_label_w + 8;
  const double col_axis_y = kPad + kTitleFont + 24;
  const double grid_y = col_axis_y + 6 + col_labels_h;
  const double grid_w = cell_w * static_cast<double>(cols), grid_h = cell_h * static_cast<double>(rows);
  const double bar_x = grid_x + grid_w + 28, bar_w = 14, bar_h = std::max(grid_h, 120.0);
  const int kTicks = 5;
  std::vector<std::string> tick_texts;
  for (int k = 0; k < kTicks; ++k) tick_texts.push_back(short_number(lo + (hi - lo) * k / (kTicks - 1), decimals));
  const std::string hidden_text = "hidden (masked)";
  double width = bar_x + bar_w + 6 + widest(tick_texts, kFont) + kPad;
  if (any_empty) width = std::max(width, bar_x + bar_w + 6 + text_width(hidden_text, kFont) + kPad);
  if (rotate_cols) width = std::max(width, grid_x + grid_w - cell_w / 2 + 0.71 * col_label_w + kPad);
  width = std::max(width, kPad * 2 + text_width(title, kTitleFont));
  const double legend_bottom = grid_y + bar_h + (any_empty ? 34 : 0);
  const double height = std::max(grid_y + grid_h, legend_bottom) + kPad;

  Svg svg(width, height, title);
  svg.hatch_pattern("hidden", "#c8c8c8", 6);
  svg.text(kPad, kPad + kTitleFont, title, {.size = kTitleFont, .bold = true});
  svg.text(grid_x + grid_w / 2, col_axis_y, options.col_axis, {.size = kFont, .anchor = "middle", .fill = "#555555", .italic = true});
  svg.text(kPad + 12, grid_y + grid_h / 2, options.row_axis,
           {.size = kFont, .anchor = "middle", .fill = "#555555", .italic = true, .rotate = -90});
  for (int64_t c = 0; c < cols; ++c) {
    const double cx = grid_x + cell_w * (static_cast<double>(c) + 0.5);
    if (rotate_cols) svg.text(cx - 3, grid_y - 8, col_labels[c], {.size = kFont, .rotate = -45, .css_class = "col-label"});
    else svg.text(cx, grid_y - 8, col_labels[c], {.size = kFont, .anchor = "middle", .css_class = "col-label"});
  }
  for (int64_t r = 0; r < rows; ++r) {
    const double y = grid_y + cell_h * static_cast<double>(r);
    svg.text_centred(grid_x - 8, y + cell_h / 2, row_labels[r], {.size = kFont, .anchor = "end", .css_class = "row-label"});
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      const double x = grid_x + cell_w * static_cast<double>(c);
      const std::string where = row_labels[r] + " \u2192 " + col_labels[c] + ": ";
      if (!shown(i)) {
        svg.rect(x + 1, y + 1, cell_w - 2, cell_h - 2,
                 {.fill = "url(#hidden)", .stroke = "#c8c8c8", .css_class = "cell hidden",
                  .tooltip = where + (texts[i].empty() ? "hidden" : texts[i])});
        if (!texts[i].empty()) svg.text_centred(x + cell_w / 2, y + cell_h / 2, texts[i], {.size = kFont, .anchor = "middle", .css_class = "value"});
        continue;
      }
      const Rgb colour = viridis((v[i] - lo) / (hi - lo));
      svg.rect(x, y, cell_w, cell_h, {.fill = hex(colour), .stroke = "white", .css_class = "cell", .tooltip = where + texts[i]});
      svg.text_centred(x + cell_w / 2, y + cell_h / 2, texts[i],
                       {.size = kFont, .anchor = "middle", .fill = text_colour_on(colour), .css_class = "value"});
    }
  }

  // The colour scale: high at the top, as thin bands, with ticks.
  const int kBands = 64;
  for (int k = 0; k < kBands; ++k) {
    const double t = (k + 0.5) / kBands;
    svg.rect(bar_x, grid_y + bar_h * (1 - static_cast<double>(k + 1) / kBands), bar_w, bar_h / kBands + 0.5,
             {.fill = hex(viridis(t))});
  }
  svg.rect(bar_x, grid_y, bar_w, bar_h, {.stroke = "#888888", .css_class = "colour-scale"});
  for (int k = 0; k < kTicks; ++k) {
    const double y = grid_y + bar_h * (1 - static_cast<double>(k) / (kTicks - 1));
    svg.line(bar_x + bar_w, y, bar_x + bar_w + 4, y, {.stroke = "#888888"});
    svg.text_centred(bar_x + bar_w + 7, y, tick_texts[k], {.size = kFont - 1, .fill = "#444444"});
  }
  if (any_empty) {
    const double y = grid_y + bar_h + 16;
    svg.rect(bar_x, y, bar_w, bar_w, {.fill = "url(#hidden)", .stroke = "#c8c8c8"});
    svg.text_centred(bar_x + bar_w + 7, y + bar_w / 2, hidden_text, {.size = kFont - 1, .fill = "#444444"});
  }
  return svg.str();
}

void write_heatmap_svg(const std::string& path, const Tensor& values, const std::vector<std::string>& row_labels,
                       const std::vector<std::string>& col_labels, const std::string& title,
                       const HeatmapOptions& options) {
  write_file_atomically(path, heatmap_svg(values, row_labels, col_labels, title, options), "write_heatmap_svg");
}

std::vector<std::string> save_attention_heatmaps(const std::string& dir, const std::string& name, const Tensor& weights,
                                                 const std::vector<std::string>& tokens, bool causal) {
  if (!weights.defined() || weights.dim() < 2 || weights.dim() > 4) {
    throw Error("save_attention_heatmaps: expected weights of shape (T,T), (b,T,T) or (b,h,T,T), got " +
                (weights.defined() ? shape_str(weights.sizes()) : std::string("an undefined tensor")));
  }
  const int64_t T = weights.size(-1);
  if (weights.size(-2) != T || static_cast<int64_t>(tokens.size()) != T) {
    throw Error("save_attention_heatmaps: weights of shape " + shape_str(weights.sizes()) + " need " +
                std::to_string(weights.size(-2)) + " x " + std::to_string(T) + " query x key tokens, got " +
                std::to_string(tokens.size()) + " tokens");
  }
  if (name.empty() || name.find('/') != std::string::npos) {
    throw Error("save_attention_heatmaps: name '" + name + "' must be a plain file name (no '/')");
  }
  HeatmapOptions options;
  options.vmin = 0.0;
  options.vmax = 1.0;
  options.row_axis = "query token";
  options.col_axis = "key token";
  if (causal) options.masked = triu(ones({T, T}), 1) == 1;
  const Tensor w = weights.detach().reshape({-1, T, T});  // (matrices, T, T)
  const int64_t heads = weights.dim() == 4 ? weights.size(1) : 1;
  std::vector<std::string> paths;
  for (int64_t m = 0; m < w.size(0); ++m) {
    std::string file = name, title = name;
    std::replace(title.begin(), title.end(), '_', ' ');  // "causal attention weights"
    if (weights.dim() >= 3) file += "_b" + std::to_string(m / heads), title += ", batch " + std::to_string(m / heads);
    if (weights.dim() == 4) file += "_h" + std::to_string(m % heads), title += ", head " + std::to_string(m % heads);
    const std::string path = (std::filesystem::path(dir) / (file + ".svg")).string();
    write_heatmap_svg(path, w[m], tokens, tokens, title, options);
    paths.push_back(path);
  }
  return paths;
}

// --- line plot -----------------------------------------------------------------------------------

namespace {

// Ticks at round numbers (1, 2 or 5 times a power of ten) covering [lo, hi].
struct Axis {
  double lo, hi, step;
  int decimals;
};

Axis nice_axis(double lo, double hi) {
  if (!(lo < hi)) {
    const double half = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= half, hi += half;
  }
  const double raw = (hi - lo) / 5, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step, decimals};
}

const char* const kLineColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

}  // namespace

std::string line_plot_svg(const std::vector<Series>& series, const std::string& title, const std::string& x_label,
                          const std::string& y_label) {
  if (series.empty()) throw Error("line_plot: no series");
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  std::vector<std::string> legend;
  for (const Series& s : series) {
    int64_t skipped = 0;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) { skipped++; continue; }
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x), y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
    legend.push_back(s.name + (skipped == 0   ? ""
                               : skipped == 1 ? " (1 point not finite, not drawn)"
                                              : " (" + std::to_string(skipped) + " points not finite, not drawn)"));
  }
  if (x_lo > x_hi) throw Error("line_plot: no finite point to draw in " + std::to_string(series.size()) + " series");
  const Axis xa = nice_axis(x_lo, x_hi), ya = nice_axis(y_lo, y_hi);
  auto ticks = [](const Axis& a) {
    std::vector<double> t;
    for (double v = a.lo; v <= a.hi + a.step * 1e-6; v += a.step) t.push_back(v);
    return t;
  };
  const std::vector<double> x_ticks = ticks(xa), y_ticks = ticks(ya);
  std::vector<std::string> y_tick_texts;
  for (double v : y_ticks) y_tick_texts.push_back(fixed(v, ya.decimals));

  const double legend_w = widest(legend, kFont) + 30;
  const double left = kPad + 20 + widest(y_tick_texts, kFont - 1) + 8, top = kPad + kTitleFont + 16;
  const double plot_w = 480, plot_h = 300, right = left + plot_w, bottom = top + plot_h;
  const double width = std::max(right + 20 + legend_w + kPad, kPad * 2 + text_width(title, kTitleFont));
  const double height = bottom + 18 + 22 + kPad;
  auto px = [&](double x) { return left + (x - xa.lo) / (xa.hi - xa.lo) * plot_w; };
  auto py = [&](double y) { return bottom - (y - ya.lo) / (ya.hi - ya.lo) * plot_h; };

  Svg svg(width, height, title);
  svg.text(kPad, kPad + kTitleFont, title, {.size = kTitleFont, .bold = true});
  for (size_t k = 0; k < x_ticks.size(); ++k) {
    const double x = px(x_ticks[k]);
    svg.line(x, top, x, bottom, {.stroke = "#e6e6e6"});
    svg.text(x, bottom + 16, fixed(x_ticks[k], xa.decimals), {.size = kFont - 1, .anchor = "middle", .fill = "#444444"});
  }
  for (size_t k = 0; k < y_ticks.size(); ++k) {
    const double y = py(y_ticks[k]);
    svg.line(left, y, right, y, {.stroke = "#e6e6e6"});
    svg.text_centred(left - 6, y, y_tick_texts[k], {.size = kFont - 1, .anchor = "end", .fill = "#444444"});
  }
  svg.rect(left, top, plot_w, plot_h, {.stroke = "#888888"});
  svg.text(left + plot_w / 2, bottom + 38, x_label, {.size = kFont, .anchor = "middle", .fill = "#555555", .italic = true});
  svg.text(kPad + 10, top + plot_h / 2, y_label, {.size = kFont, .anchor = "middle", .fill = "#555555", .italic = true, .rotate = -90});

  for (size_t s = 0; s < series.size(); ++s) {
    const std::string colour = kLineColours[s % std::size(kLineColours)];
    const Paint paint{.stroke = colour, .stroke_width = 2, .css_class = "series"};
    std::vector<std::pair<double, double>> run;  // finite points in a row
    auto draw = [&] {
      if (run.size() == 1) svg.circle(run[0].first, run[0].second, 2.5, {.fill = colour, .css_class = "series"});
      if (run.size() > 1) svg.polyline(run, paint);
      run.clear();
    };
    for (const auto& [x, y] : series[s].points) {
      if (std::isfinite(x) && std::isfinite(y)) run.push_back({px(x), py(y)});
      else draw();
    }
    draw();
    const double ly = top + 8 + 20 * static_cast<double>(s);
    svg.line(right + 20, ly, right + 40, ly, {.stroke = colour, .stroke_width = 2});
    svg.text_centred(right + 46, ly, legend[s], {.size = kFont, .css_class = "legend"});
  }
  return svg.str();
}

void write_line_plot_svg(const std::string& path, const std::vector<Series>& series, const std::string& title,
                         const std::string& x_label, const std::string& y_label) {
  write_file_atomically(path, line_plot_svg(series, title, x_label, y_label), "write_line_plot_svg");
}

std::vector<std::string> position_labels(int64_t n) {
  std::vector<std::string> labels;
  for (int64_t t = 0; t < n; ++t) labels.push_back(std::string("t").append(std::to_string(t)));
  return labels;
}

}  // namespace tg
