// io/svg.cpp — the SVG writer: each call appends one element to the document.
#include "io/svg.h"

#include <cmath>
#include <cstdio>

namespace tg {

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

double text_width(const std::string& s, double font_size) {
  // count code points, not bytes: a UTF-8 continuation byte is 10xxxxxx
  double chars = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) chars += 1;
  return chars * 0.62 * font_size;
}

namespace {

std::string attr(const char* name, const std::string& value) { return std::string(" ") + name + "=\"" + xml_escape(value) + "\""; }
std::string attr(const char* name, double value) { return std::string(" ") + name + "=\"" + svg_number(value) + "\""; }

std::string paint_attrs(const Paint& p) {
  std::string s = attr("fill", p.fill);
  if (p.stroke != "none") s += attr("stroke", p.stroke) + attr("stroke-width", p.stroke_width);
  if (!p.dash.empty()) s += attr("stroke-dasharray", p.dash);
  if (!p.css_class.empty()) s += attr("class", p.css_class);
  return s;
}

// "/>" for a plain shape, or "><title>…</title></rect>" when it has a tooltip.
std::string close(const char* element, const Paint& p) {
  if (p.tooltip.empty()) return "/>\n";
  return "><title>" + xml_escape(p.tooltip) + "</title></" + element + ">\n";
}

}  // namespace

Svg::Svg(double width, double height, const std::string& title) : width_(width), height_(height), title_(title) {}

void Svg::rect(double x, double y, double w, double h, const Paint& paint) {
  body_ += "<rect" + attr("x", x) + attr("y", y) + attr("width", w) + attr("height", h) + paint_attrs(paint) +
           close("rect", paint);
}

void Svg::line(double x1, double y1, double x2, double y2, const Paint& paint) {
  body_ += "<line" + attr("x1", x1) + attr("y1", y1) + attr("x2", x2) + attr("y2", y2) + paint_attrs(paint) +
           close("line", paint);
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const Paint& paint) {
  std::string pts;
  for (const auto& [x, y] : points) {
    if (!pts.empty()) pts += ' ';
    pts += svg_number(x) + "," + svg_number(y);
  }
  body_ += "<polyline" + attr("points", pts) + paint_attrs(paint) + " stroke-linejoin=\"round\"" +
           close("polyline", paint);
}

void Svg::circle(double cx, double cy, double r, const Paint& paint) {
  body_ += "<circle" + attr("cx", cx) + attr("cy", cy) + attr("r", r) + paint_attrs(paint) + close("circle", paint);
}

void Svg::text(double x, double y, const std::string& s, const Font& font) {
  std::string e = "<text" + attr("x", x) + attr("y", y) + attr("font-size", font.size) + attr("fill", font.fill);
  if (font.anchor != "start") e += attr("text-anchor", font.anchor);
  if (font.bold) e += " font-weight=\"bold\"";
  if (font.italic) e += " font-style=\"italic\"";
  if (font.rotate != 0) e += attr("transform", "rotate(" + svg_number(font.rotate) + " " + svg_number(x) + " " + svg_number(y) + ")");
  if (!font.css_class.empty()) e += attr("class", font.css_class);
  body_ += e + ">" + xml_escape(s) + "</text>\n";
}

void Svg::text_centred(double x, double y, const std::string& s, Font font) { text(x, y + 0.35 * font.size, s, font); }

void Svg::hatch_pattern(const std::string& id, const std::string& colour, double spacing) {
  defs_ += "<pattern" + attr("id", id) + " patternUnits=\"userSpaceOnUse\"" + attr("width", spacing) +
           attr("height", spacing) + " patternTransform=\"rotate(45)\">" + "<rect" + attr("width", spacing) +
           attr("height", spacing) + " fill=\"white\"/>" + "<line x1=\"0\" y1=\"0\" x2=\"0\"" + attr("y2", spacing) +
           attr("stroke", colour) + " stroke-width=\"1.5\"/></pattern>\n";
}

std::string Svg::str() const {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\"" + attr("width", width_) + attr("height", height_) +
       attr("viewBox", "0 0 " + svg_number(width_) + " " + svg_number(height_)) +
       " font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  s += "<title>" + xml_escape(title_) + "</title>\n";
  if (!defs_.empty()) s += "<defs>\n" + defs_ + "</defs>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += body_;
  s += "</svg>\n";
  return s;
}

}  // namespace tg
