// io/json_writer.cpp — JSON text from values: numbers as Python writes them, the Writer's objects
// and arrays (io/json.h).
#include <charconv>
#include <cmath>
#include <string>

#include "autograd/error.h"
#include "io/json.h"

namespace tg::json {

// ---- writing ------------------------------------------------------------------------------------

namespace {

// What a non-finite double is called in messages, as Python prints it.
std::string non_finite_name(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

// The JSON text of a parsed value in the given layout, numbers as they were written.
std::string text_of(const Value& v, Layout layout) {
  switch (v.kind()) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Bool: return v.as_bool() ? "true" : "false";
    case Value::Kind::Number: return v.number_text();
    case Value::Kind::String: return quote(v.as_string());
    case Value::Kind::Array: {
      Writer w = Writer::array(layout);
      for (const Value& item : v.as_array()) w.item(item);
      return w.str();
    }
    case Value::Kind::Object: {
      Writer w(layout);
      for (const Member& m : v.as_object()) w.field(m.key, m.value);
      return w.str();
    }
  }
  return "null";
}

// text with every line after its first indented by two more spaces (a pretty value put one
// level deeper). JSON strings hold no raw newline (quote() writes \n), so every '\n' starts a line.
std::string indented(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace

std::string number(double v) {
  if (!std::isfinite(v)) throw Error("json: " + non_finite_name(v) + " is not a number JSON can hold");
  // to_chars's scientific form has the fewest digits that read back as v: -1.2345e-05, 5e-324
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string scientific(buf, end);
  const size_t e_at = scientific.find('e');
  const int exponent = std::stoi(scientific.substr(e_at + 1));
  if (exponent < -4 || exponent >= 16) return scientific;  // as Python: 1e-05, 1.5e+16
  // Python writes the others with a point: the same digits, moved
  const bool negative = std::signbit(v);
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e_at; ++i)
    if (scientific[i] != '.') digits += scientific[i];
  std::string out = negative ? "-" : "";
  if (exponent < 0) return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;  // 0.00012
  const size_t whole = static_cast<size_t>(exponent) + 1;  // digits before the point
  if (digits.size() < whole) digits.append(whole - digits.size(), '0');
  return out + digits.substr(0, whole) + "." + (digits.size() > whole ? digits.substr(whole) : "0");  // 3.0, 12.5
}

double round_to(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  const double rounded = std::round(v * scale) / scale;
  return std::isfinite(rounded) ? rounded : v;  // a v so large that v * scale overflows has no decimals
}

Writer::Writer(Layout layout) : Writer(false, layout) {}

Writer Writer::array(Layout layout) { return Writer(true, layout); }

Writer& Writer::add(std::string_view name, std::string value_text) {
  if (is_array_) throw Error("json: field \"" + std::string(name) + "\" given to an array (arrays take item())");
  entries_.emplace_back(quote(name), std::move(value_text));
  return *this;
}

Writer& Writer::add_item(std::string value_text) {
  if (!is_array_) throw Error("json: item given to an object (objects take field())");
  entries_.emplace_back(std::string(), std::move(value_text));
  return *this;
}

Writer& Writer::field(std::string_view name, std::string_view text) { return add(name, quote(text)); }

Writer& Writer::field(std::string_view name, double value) {
  if (!std::isfinite(value))
    throw Error("json: \"" + std::string(name) + "\" is " + non_finite_name(value) +
                ": JSON has no inf or nan, so it cannot be written");
  return add(name, number(value));
}

Writer& Writer::field(std::string_view name, std::optional<double> value) {
  return value ? field(name, *value) : field(name, nullptr);
}

Writer& Writer::field(std::string_view name, std::nullptr_t) { return add(name, "null"); }

Writer& Writer::field(std::string_view name, const Writer& nested) { return add(name, nested.str()); }

Writer& Writer::field(std::string_view name, const Value& value) { return add(name, text_of(value, layout_)); }

Writer& Writer::embed(std::string_view name, std::string_view json_text) {
  parse(json_text, "the JSON text of \"" + std::string(name) + "\"");  // a ParseError naming the field
  return add(name, std::string(json_text));
}

Writer& Writer::item(std::string_view text) { return add_item(quote(text)); }

Writer& Writer::item(double value) {
  if (!std::isfinite(value))
    throw Error("json: item " + std::to_string(entries_.size()) + " is " + non_finite_name(value) +
                ": JSON has no inf or nan, so it cannot be written");
  return add_item(number(value));
}

Writer& Writer::item(std::nullptr_t) { return add_item("null"); }

Writer& Writer::item(const Writer& nested) { return add_item(nested.str()); }

Writer& Writer::item(const Value& value) { return add_item(text_of(value, layout_)); }

std::string Writer::str() const {
  const char open = is_array_ ? '[' : '{', close = is_array_ ? ']' : '}';
  if (entries_.empty()) return {open, close};
  const bool pretty = layout_ == Layout::Pretty, compact = layout_ == Layout::Compact;
  std::string out(1, open);
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& [name, value] = entries_[i];
    if (i > 0) out += pretty || compact ? "," : ", ";
    if (pretty) out += "\n  ";
    if (!is_array_) {
      out += name;
      out += compact ? ":" : ": ";
    }
    out += pretty ? indented(value) : value;
  }
  if (pretty) out += '\n';
  out += close;
  return out;
}

}  // namespace tg::json
