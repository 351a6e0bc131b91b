// The pictures (io/plots.h, svg.h): heatmaps and line plots are well-formed SVG with one
// cell per entry showing its value, masked cells empty, files written whole, bad input refused
// with a message naming it; and docs/pictures.md's picture is what the code draws.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "io/plots.h"
#include "io/svg.h"
#include "examples/your_journey.h"
#include "nn/attention.h"
#include "test_util.h"
#include "examples/xml_reader.h"

namespace tg::examples {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::XmlElement;
using test::XmlReader;

std::vector<std::string> texts_of(const std::vector<const XmlElement*>& elements) {
  std::vector<std::string> out;
  for (const XmlElement* e : elements) out.push_back(e->text);
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh empty folder under the system's temporary folder.
fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("tapegrad_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(SvgWriter, EscapesTextAndAttributes) {
  Svg svg(100, 50, "a <title> & more");
  svg.text(1, 2, "<|endoftext|> & 'quotes' \"too\"", {.css_class = "x\"y"});
  const auto root = XmlReader::parse(svg.str());
  EXPECT_EQ(root->name, "svg");
  EXPECT_EQ(root->all("title")[0]->text, "a <title> & more");
  const auto texts = root->all("text");
  ASSERT_EQ(texts.size(), 1u);
  EXPECT_EQ(texts[0]->text, "<|endoftext|> & 'quotes' \"too\"");
  EXPECT_EQ(texts[0]->attr("class"), "x\"y");
  EXPECT_EQ(svg_number(12.5), "12.5");
  EXPECT_EQ(svg_number(3.0), "3");
  EXPECT_EQ(svg_number(-0.001), "0");
}

TEST(Heatmap, IsWellFormedWithOneCellPerEntryShowingItsValue) {
  const Tensor values = tensor({{0.1, 0.25, -1.5, 2.0}, {0.0, 3.14159, 0.5, 1.0}, {9.99999, -0.00001, 0.3333, 7.0}});
  const std::vector<std::string> rows{"<s>", "a&b", "\"q\""}, cols{"w", "x", "y", "z"};
  const auto root = XmlReader::parse(heatmap_svg(values, rows, cols, "scores <raw>"));
  EXPECT_EQ(root->all("title")[0]->text, "scores <raw>");
  const auto cells = root->all("rect", "cell");
  ASSERT_EQ(cells.size(), 12u);
  EXPECT_EQ(root->all("rect", "cell hidden").size(), 0u);
  // Row-major, 4 decimals (|values| < 10), the float32 value rounded; -0.00001 prints as 0.0000.
  const std::vector<std::string> want{"0.1000", "0.2500", "-1.5000", "2.0000", "0.0000", "3.1416",
                                      "0.5000", "1.0000", "10.0000", "0.0000", "0.3333", "7.0000"};
  EXPECT_EQ(texts_of(root->all("text", "value")), want);
  EXPECT_EQ(texts_of(root->all("text", "row-label")), rows);
  EXPECT_EQ(texts_of(root->all("text", "col-label")), cols);
  // Each cell says where it is and what it holds when pointed at.
  EXPECT_EQ(cells[1]->all("title")[0]->text, "<s> \u2192 x: 0.2500");
  // The extremes take the ends of the colour scale (viridis: dark purple, yellow).
  EXPECT_EQ(cells[2]->attr("fill"), "#440154");   // -1.5, the minimum
  EXPECT_EQ(cells[8]->attr("fill"), "#fde725");   // 9.99999, the maximum
}

TEST(Heatmap, MaskedCellsAreEmptyAndDifferFromAWeightOfZero) {
  const Tensor weights = tensor({{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.2, 0.3, 0.5}});  // (1,0) is a real 0
  HeatmapOptions options;
  options.masked = triu(ones({3, 3}), 1) == 1;
  options.vmin = 0.0;
  options.vmax = 1.0;
  const auto root = XmlReader::parse(heatmap_svg(weights, {"a", "b", "c"}, {"a", "b", "c"}, "causal", options));
  const auto hidden = root->all("rect", "cell hidden");
  ASSERT_EQ(hidden.size(), 3u);
  for (const XmlElement* h : hidden) EXPECT_EQ(h->attr("fill"), "url(#hidden)");
  EXPECT_EQ(hidden[0]->all("title")[0]->text, "a \u2192 b: hidden");
  EXPECT_EQ(root->all("pattern").size(), 1u);
  EXPECT_EQ(root->all("pattern")[0]->attr("id"), "hidden");
  // The six shown cells print their values; the weight 0 at (1,0) is coloured and printed.
  EXPECT_EQ(texts_of(root->all("text", "value")),
            (std::vector<std::string>{"1.0000", "0.0000", "1.0000", "0.2000", "0.3000", "0.5000"}));
  const auto cells = root->all("rect", "cell");
  ASSERT_EQ(cells.size(), 6u);
  EXPECT_EQ(cells[1]->attr("fill"), "#440154");
  EXPECT_EQ(cells[1]->all("title")[0]->text, "b \u2192 a: 0.0000");
}

TEST(Heatmap, MinusInfinityIsEmptyAndNanIsShownAsSuch) {
  const Tensor scores = tensor({{2.0, -kInf}, {std::nan(""), -1.0}});
  const auto root = XmlReader::parse(heatmap_svg(scores, {}, {}, "masked scores"));
  EXPECT_EQ(root->all("rect", "cell hidden").size(), 2u);
  EXPECT_EQ(texts_of(root->all("text", "value")), (std::vector<std::string>{"2.0000", "nan", "-1.0000"}));
  EXPECT_EQ(texts_of(root->all("text", "row-label")), (std::vector<std::string>{"0", "1"}));  // no labels: indices
  // The colour scale spans the finite values only.
  const auto cells = root->all("rect", "cell");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0]->attr("fill"), "#fde725");
  EXPECT_EQ(cells[1]->attr("fill"), "#440154");
}

TEST(Heatmap, BadInputsAreClearErrors) {
  const Tensor w = ones({2, 3});
  expect_error([&] { heatmap_svg(ones({2, 3, 3}), {}, {}, "t"); },
               {"heatmap: expected a 2-d tensor (rows, cols), got shape (2,3,3)"});
  expect_error([&] { heatmap_svg(Tensor(), {}, {}, "t"); }, {"heatmap: expected a 2-d tensor", "undefined"});
  expect_error([&] { heatmap_svg(w, {"a"}, {}, "t"); }, {"heatmap: 1 row labels for 2 rows"});
  expect_error([&] { heatmap_svg(w, {}, {"a", "b", "c", "d"}, "t"); }, {"heatmap: 4 column labels for 3 columns"});
  expect_error([&] { heatmap_svg(ones({0, 3}), {}, {}, "t"); }, {"heatmap: nothing to draw", "(0,3)"});
  HeatmapOptions bad_mask;
  bad_mask.masked = ones({3, 3}) == 1;
  expect_error([&] { heatmap_svg(w, {}, {}, "t", bad_mask); }, {"heatmap: masked has shape (3,3), expected (2,3)"});
  bad_mask.masked = ones({2, 3});
  expect_error([&] { heatmap_svg(w, {}, {}, "t", bad_mask); }, {"heatmap: masked must be a bool tensor, got float32"});
  HeatmapOptions bad_range;
  bad_range.vmin = 1.0;
  bad_range.vmax = 1.0;
  expect_error([&] { heatmap_svg(w, {}, {}, "t", bad_range); }, {"heatmap: vmin (1) must be below vmax (1)"});
}

TEST(Heatmap, WritesTheWholeFileOrNamesThePath) {
  const fs::path dir = fresh_dir("heatmap");
  const Tensor w = tensor({{0.5, 0.5}, {0.25, 0.75}});
  const std::string path = (dir / "w.svg").string();
  write_heatmap_svg(path, w, {"a", "b"}, {"a", "b"}, "w");
  EXPECT_EQ(read_file(path), heatmap_svg(w, {"a", "b"}, {"a", "b"}, "w"));
  const std::string missing = (dir / "no_such_folder" / "w.svg").string();
  expect_error([&] { write_heatmap_svg(missing, w, {}, {}, "w"); },
               {"write_heatmap_svg: " + missing + ": cannot create a temporary file", "No such file or directory"});
  // Only the finished file is left: no temporary file beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(LinePlot, IsWellFormedWithALinePerSeriesBrokenAtNonFinitePoints) {
  const std::vector<Series> series{{"train", {{0, 4.2}, {10, 3.1}, {20, 2.5}, {30, 2.2}}},
                                   {"val <held out>", {{0, 4.3}, {10, NAN}, {20, 2.9}, {30, 2.8}}}};
  const auto root = XmlReader::parse(line_plot_svg(series, "loss", "step", "cross-entropy"));
  const auto lines = root->all("polyline", "series");
  ASSERT_EQ(lines.size(), 2u);  // train whole; val broken in two by its NaN: a point, then a line
  const std::string train_points = lines[0]->attr("points");
  EXPECT_EQ(std::count(train_points.begin(), train_points.end(), ','), 4);
  EXPECT_EQ(root->all("circle", "series").size(), 1u);  // val's first run is a single point
  EXPECT_EQ(texts_of(root->all("text", "legend")),
            (std::vector<std::string>{"train", "val <held out> (1 point not finite, not drawn)"}));
  const auto texts = texts_of(root->all("text"));
  for (const char* want : {"loss", "step", "cross-entropy", "0", "30"})
    EXPECT_NE(std::find(texts.begin(), texts.end(), want), texts.end()) << want;
}

TEST(LinePlot, BadInputsAreClearErrors) {
  expect_error([] { line_plot_svg({}, "t", "x", "y"); }, {"line_plot: no series"});
  expect_error([] { line_plot_svg({{"a", {{0, NAN}}}, {"b", {}}}, "t", "x", "y"); },
               {"line_plot: no finite point to draw in 2 series"});
  const fs::path dir = fresh_dir("lineplot");
  const std::string missing = (dir / "nope" / "loss.svg").string();
  expect_error([&] { write_line_plot_svg(missing, {{"a", {{0, 1}, {1, 0.5}}}}, "t", "x", "y"); },
               {"write_line_plot_svg: " + missing + ": cannot create a temporary file"});
  fs::remove_all(dir);
}

TEST(AttentionHeatmaps, WritesOneFilePerBatchElementAndHead) {
  const fs::path dir = fresh_dir("heads");
  const Tensor w = softmax(test::normal_tensor({1, 2, 3, 3}, 7, kFloat32), -1);  // (b, h, T, T)
  const auto paths = save_attention_heatmaps(dir.string(), "mha_weights", w, {"a", "b", "c"}, false);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], (dir / "mha_weights_b0_h0.svg").string());
  EXPECT_EQ(paths[1], (dir / "mha_weights_b0_h1.svg").string());
  const auto head1 = XmlReader::parse(read_file(paths[1]));
  EXPECT_EQ(head1->all("title")[0]->text, "mha weights, batch 0, head 1");
  std::vector<std::string> want;
  for (double v : w[0][1].tolist<double>()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    want.push_back(buf);
  }
  EXPECT_EQ(texts_of(head1->all("text", "value")), want);
  expect_error([&] { save_attention_heatmaps(dir.string(), "w", w, {"a", "b"}, false); },
               {"save_attention_heatmaps: weights of shape (1,2,3,3) need 3 x 3 query x key tokens, got 2 tokens"});
  expect_error([&] { save_attention_heatmaps(dir.string(), "w", ones({3}), {"a"}, false); },
               {"save_attention_heatmaps: expected weights of shape (T,T), (b,T,T) or (b,h,T,T), got (3)"});
  fs::remove_all(dir);
}

// docs/causal_attention_weights.svg, shown in docs/pictures.md, is the book's CausalAttention (seed
// 123) on "Your journey starts with one step" as examples/attention_pictures draws it.
TEST(AttentionHeatmaps, TheReadmePictureIsWhatTheCodeDraws) {
  const Tensor inputs = your_journey_inputs();
  manual_seed(123);
  nn::CausalAttention ca(3, 2, 6, 0.0);
  ca.keep_attention_weights = true;
  ca(stack({inputs, inputs}));
  const fs::path dir = fresh_dir("readme");
  const auto paths = save_attention_heatmaps(dir.string(), "causal_attention_weights", ca.attention_weights[0],
                                             your_journey_tokens(), true);
  ASSERT_EQ(paths.size(), 1u);
  const std::string drawn = read_file(paths[0]);
  EXPECT_EQ(read_file(fs::path(TG_DOCS_DIR) / "causal_attention_weights.svg"), drawn)
      << "regenerate it: ./build/examples/attention_pictures --svg docs";
  const auto root = XmlReader::parse(drawn);
  EXPECT_EQ(root->all("rect", "cell hidden").size(), 15u);  // the 15 cells above the diagonal
  EXPECT_EQ(root->all("text", "value")[1]->text, "0.4833");  // the book's second row: 0.4833, 0.5167
  EXPECT_EQ(root->all("text", "value")[2]->text, "0.5167");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tg::examples
