// io/svg.h — a tiny SVG writer for the examples' pictures (heatmaps, loss curves).
//
// Shapes and text are appended in drawing order (later ones on top); every attribute value and
// every text is XML-escaped, so a token such as "<|endoftext|>" or "a&b" is drawn as written.
// Coordinates are in pixels, y pointing down, as in SVG itself.
//
//   Svg svg(200, 80, "two cells");
//   svg.rect(10, 10, 60, 30, {.fill = "#21918c", .stroke = "white"});
//   svg.text(40, 25, "0.25", {.size = 12, .anchor = "middle", .fill = "white"});
//   std::string document = svg.str();
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace tg {

// How a shape is filled and outlined. Colours are SVG colours ("#21918c", "white",
// "url(#hatch)" for a pattern made by Svg::hatch_pattern).
struct Paint {
  std::string fill = "none";
  std::string stroke = "none";
  double stroke_width = 1;
  std::string dash;       // stroke-dasharray, e.g. "4 3"; empty = solid
  std::string css_class;  // the class attribute (lets a reader or a test find shapes)
  std::string tooltip;    // a <title> child, shown when the pointer rests on the shape
};

struct Font {
  double size = 12;
  std::string anchor = "start";  // start | middle | end (of the text, at x)
  std::string fill = "#222222";
  bool bold = false;
  bool italic = false;
  double rotate = 0;  // degrees, clockwise, about (x, y)
  std::string css_class;
};

class Svg {
 public:
  // title becomes the document's <title> (what a viewer shows as its name).
  Svg(double width, double height, const std::string& title);

  void rect(double x, double y, double w, double h, const Paint& paint);
  void line(double x1, double y1, double x2, double y2, const Paint& paint);
  void polyline(const std::vector<std::pair<double, double>>& points, const Paint& paint);
  void circle(double cx, double cy, double r, const Paint& paint);
  // Text whose baseline starts (or is centred, or ends) at (x, y).
  void text(double x, double y, const std::string& s, const Font& font);
  // Text centred vertically on y (baseline moved down by about a third of the font size).
  void text_centred(double x, double y, const std::string& s, Font font);
  // A pattern of thin diagonal lines on white, for fill = "url(#id)".
  void hatch_pattern(const std::string& id, const std::string& colour, double spacing);

  double width() const { return width_; }
  double height() const { return height_; }
  std::string str() const;  // the whole document

 private:
  double width_, height_;
  std::string title_;
  std::string defs_, body_;
};

// "&lt;|endoftext|&gt;": & < > " ' replaced by entities.
std::string xml_escape(const std::string& s);
// A coordinate as SVG text: at most 2 decimals, no trailing zeros ("12.5", "3", "-0.25").
std::string svg_number(double v);
// About how wide a text is drawn in the examples' sans-serif font (for layout only).
double text_width(const std::string& s, double font_size);

}  // namespace tg
