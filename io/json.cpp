// io/json.cpp — a parsed value's accessors, UTF-8 and quoting, and a recursive-descent JSON
// parser (the Writer: io/json_writer.cpp).
//
// Grammar (RFC 8259), whitespace = space, tab, newline, carriage return:
//   value  = object | array | string | number | true | false | null
//   object = '{' [ string ':' value { ',' string ':' value } ] '}'
//   array  = '[' [ value { ',' value } ] ']'
//   number = [ '-' ] ( '0' | digit1-9 digit* ) [ '.' digit+ ] [ ( 'e' | 'E' ) [ '+' | '-' ] digit+ ]
//   string = '"' { unescaped char >= 0x20 | '\' ( '"' '\' '/' 'b' 'f' 'n' 'r' 't' | 'u' hex4 ) } '"'
// One function per rule; each reads from pos_ and leaves pos_ just after what it read. Bytes
// >= 0x80 inside strings are copied as they are once they are checked to be UTF-8.
#include "io/json.h"
#include "autograd/error.h"
#include "io/user_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <locale>
#include <sstream>
#include <unordered_set>

namespace tg::json {

// ---- Value accessors ----------------------------------------------------------------------------

const char* Value::kind_name(Kind kind) {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return "a bool";
    case Kind::Number: return "a number";
    case Kind::String: return "a string";
    case Kind::Array: return "an array";
    case Kind::Object: return "an object";
  }
  return "?";
}

void Value::wrong_kind(Kind wanted) const {
  throw Error("json: " + where_ + ": expected " + kind_name(wanted) + ", got " +
              kind_name(kind_));
}

bool Value::as_bool() const {
  if (kind_ != Kind::Bool) wrong_kind(Kind::Bool);
  return bool_;
}

double Value::as_double() const {
  if (kind_ != Kind::Number) wrong_kind(Kind::Number);
  return number_;
}

const std::string& Value::number_text() const {
  if (kind_ != Kind::Number) wrong_kind(Kind::Number);
  return text_;
}

namespace {

// Integer text: an optional '-' and digits only (the number grammar already forbids '+' and
// leading zeros).
// The double nearest to a number's text (valid JSON grammar), correctly rounded whatever the
// locale: std::from_chars, where the standard library has it for double. libc++ before LLVM 20
// (macOS's, and Clang's -stdlib=libc++) has it for integers only; there a stream in the classic
// locale converts the text, with strtod's correct rounding.
struct NumberValue {
  double value = 0.0;
  bool converted = false;     // the whole text was read
  bool out_of_range = false;  // its magnitude is too large, or too small, for a double
};
NumberValue number_value(const std::string& text) {
  NumberValue number;
#if defined(__cpp_lib_to_chars)
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number.value);
  number.out_of_range = error == std::errc::result_out_of_range;
  number.converted = number.out_of_range || (error == std::errc() && end == text.data() + text.size());
#else
  std::istringstream in(text);
  in.imbue(std::locale::classic());
  in >> number.value;
  number.converted = in.eof();  // read to its end (a value out of range fails, but is read whole)
  // out of range: +-HUGE_VAL when too large, a zero when too small (a denormal is a value as any other)
  number.out_of_range = in.fail() && (std::isinf(number.value) || number.value == 0.0);
#endif
  return number;
}

bool is_integer_text(const std::string& text) {
  return text.find_first_of(".eE") == std::string::npos;
}

template <typename Int>
Int parse_integer_text(const Value& v, const char* type_name) {
  const std::string& text = v.number_text();
  if (!is_integer_text(text)) {
    throw Error("json: " + v.where() + ": expected an integer, got " + text);
  }
  Int result = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), result);
  if (error == std::errc::result_out_of_range) {
    throw Error("json: " + v.where() + ": " + text + " is out of range for " +
                type_name);
  }
  if (error != std::errc() || end != text.data() + text.size()) {
    // Only reachable for a '-' given to an unsigned type.
    throw Error("json: " + v.where() + ": " + text + " is not a valid " + type_name);
  }
  return result;
}

}  // namespace

int64_t Value::as_int64() const { return parse_integer_text<int64_t>(*this, "int64"); }

uint64_t Value::as_uint64() const {
  if (kind_ == Kind::Number && !text_.empty() && text_[0] == '-' && is_integer_text(text_)) {
    throw Error("json: " + where_ + ": " + text_ + " is negative, expected a uint64");
  }
  return parse_integer_text<uint64_t>(*this, "uint64");
}

const std::string& Value::as_string() const {
  if (kind_ != Kind::String) wrong_kind(Kind::String);
  return text_;
}

const std::vector<Value>& Value::as_array() const {
  if (kind_ != Kind::Array) wrong_kind(Kind::Array);
  return items_;
}

const std::vector<Member>& Value::as_object() const {
  if (kind_ != Kind::Object) wrong_kind(Kind::Object);
  return members_;
}

size_t Value::size() const {
  if (kind_ == Kind::Array) return items_.size();
  if (kind_ == Kind::Object) return members_.size();
  throw Error("json: " + where_ + ": size() needs an array or an object, got " +
              kind_name(kind_));
}

const Value& Value::operator[](size_t index) const {
  const std::vector<Value>& items = as_array();
  if (index >= items.size()) {
    throw Error("json: " + where_ + ": index " + std::to_string(index) +
                " is out of range (the array has " + std::to_string(items.size()) +
                " elements)");
  }
  return items[index];
}

const Value* Value::find(std::string_view key) const {
  for (const Member& member : as_object()) {
    if (member.key == key) return &member.value;
  }
  return nullptr;
}

const Value& Value::operator[](std::string_view key) const {
  const Value* found = find(key);
  if (found == nullptr) {
    throw Error("json: " + where_ + ": no key \"" + std::string(key) + "\"");
  }
  return *found;
}

// ---- UTF-8 and quoting ------------------------------------------------------------------------

namespace {

// The length of the well-formed UTF-8 sequence text starts with (1 to 4), or 0 if it starts with
// none. The ranges of RFC 3629's table: the second byte's range depends on the first byte so that
// overlong forms, the surrogates D800-DFFF and code points past 10FFFF are excluded.
size_t utf8_sequence_length(std::string_view text) {
  auto byte = [&](size_t i) { return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u; };
  if (text.empty()) return 0;
  unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t length;
  unsigned low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) length = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) length = 3;
  else if (b0 >= 0xF0 && b0 <= 0xF4) length = 4;
  else return 0;  // 80-BF: a continuation byte; C0, C1: overlong; F5-FF: past 10FFFF
  if (b0 == 0xE0) low = 0xA0;       // overlong below U+0800
  if (b0 == 0xED) high = 0x9F;      // surrogates
  if (b0 == 0xF0) low = 0x90;       // overlong below U+10000
  if (b0 == 0xF4) high = 0x8F;      // past U+10FFFF
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

// The two-character escapes, both ways: \" \\ \b \f \n \r \t, and \/ (read, never written).
struct Escape {
  char letter, character;
};
constexpr Escape kEscapes[] = {{'"', '"'}, {'\\', '\\'}, {'b', '\b'}, {'f', '\f'},
                               {'n', '\n'}, {'r', '\r'},  {'t', '\t'}, {'/', '/'}};

const Escape* escape_for_letter(char letter) {
  for (const Escape& e : kEscapes)
    if (e.letter == letter) return &e;
  return nullptr;
}

const Escape* escape_for_character(char character) {
  for (const Escape& e : kEscapes)
    if (e.character == character && e.letter != '/') return &e;
  return nullptr;
}

}  // namespace

size_t find_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t length = utf8_sequence_length(text.substr(pos));
    if (length == 0) return pos;
    pos += length;
  }
  return std::string_view::npos;
}

size_t decode_utf8_at(std::string_view text, size_t pos, uint32_t& code_point) {
  const size_t length = utf8_sequence_length(text.substr(pos));
  if (length == 0) return 0;
  // The first byte keeps 7, 5, 4 or 3 bits of the code point; each continuation byte 6.
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data() + pos);
  uint32_t value = length == 1 ? bytes[0] : bytes[0] & (0x7Fu >> length);
  for (size_t i = 1; i < length; ++i) value = (value << 6) | (bytes[i] & 0x3Fu);
  code_point = value;
  return length;
}

bool decode_utf8(std::string_view text, std::vector<uint32_t>& code_points, std::vector<size_t>* offsets) {
  code_points.clear();
  if (offsets) offsets->clear();
  for (size_t pos = 0; pos < text.size();) {
    uint32_t code_point = 0;
    const size_t length = decode_utf8_at(text, pos, code_point);
    if (length == 0) return false;
    code_points.push_back(code_point);
    if (offsets) offsets->push_back(pos);
    pos += length;
  }
  return true;
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

size_t utf8_whole_prefix(std::string_view text) {
  // the last sequence starts at most 3 bytes from the end: look back past continuation bytes
  for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if (byte >= 0x80 && byte <= 0xBF) continue;  // a continuation byte
    const size_t announced = byte >= 0xF0 && byte <= 0xF4 ? 4 : byte >= 0xE0 && byte <= 0xEF ? 3
                             : byte >= 0xC2 && byte <= 0xDF ? 2 : 1;
    return announced > back ? text.size() - back : text.size();
  }
  return text.size();
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const Escape* escape = escape_for_character(c);
    if (escape != nullptr) {
      out += '\\';
      out += escape->letter;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
      out += code;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// ---- Parser -------------------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  Value parse_document() {
    Value root = parse_value("", 0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("expected end of input after the top-level value");
    return root;
  }

 private:
  // Deep enough for any real file, shallow enough that a hostile "[[[[..." cannot overflow the
  // stack.
  static constexpr int kMaxDepth = 512;

  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(size_t offset, const std::string& what) const {
    throw ParseError(source_, offset, what);
  }
  // ", got 'x'" for the byte at pos_ (or "end of input", or its hex code if not printable).
  std::string got() const {
    if (pos_ >= text_.size()) return ", got end of input";
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x20 && c < 0x7F) return std::string(", got '") + static_cast<char>(c) + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    return std::string(", got byte ") + hex;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_whitespace() {
    while (!at_end()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  std::string where(const std::string& path) const {
    return std::string(source_) + ": " + (path.empty() ? "(top level)" : path);
  }

  Value parse_value(const std::string& path, int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_whitespace();
    Value v;
    v.where_ = where(path);
    v.offset_ = pos_;
    char c = peek();
    if (c == '{') {
      parse_object(v, path, depth);
    } else if (c == '[') {
      parse_array(v, path, depth);
    } else if (c == '"') {
      v.kind_ = Value::Kind::String;
      v.text_ = parse_string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      parse_number(v);
    } else if (consume_word("true")) {
      v.kind_ = Value::Kind::Bool;
      v.bool_ = true;
    } else if (consume_word("false")) {
      v.kind_ = Value::Kind::Bool;
    } else if (consume_word("null")) {
      v.kind_ = Value::Kind::Null;
    } else {
      fail("expected a value (object, array, string, number, true, false or null)" + got());
    }
    return v;
  }

  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  void parse_object(Value& v, const std::string& path, int depth) {
    v.kind_ = Value::Kind::Object;
    ++pos_;  // '{'
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    std::unordered_set<std::string> seen;
    while (true) {
      skip_whitespace();
      if (peek() != '"') fail("expected a string key in object" + got());
      size_t key_offset = pos_;
      std::string key = parse_string();
      if (!seen.insert(key).second) fail_at(key_offset, "duplicate key \"" + key + "\" in object");
      skip_whitespace();
      if (peek() != ':') fail("expected ':' after object key \"" + key + "\"" + got());
      ++pos_;
      std::string child_path = path.empty() ? key : path + "." + key;
      Value child = parse_value(child_path, depth + 1);
      v.members_.push_back(Member{std::move(key), std::move(child)});
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == '}') {
        ++pos_;
        return;
      } else {
        fail("expected ',' or '}' after object member" + got());
      }
    }
  }

  void parse_array(Value& v, const std::string& path, int depth) {
    v.kind_ = Value::Kind::Array;
    ++pos_;  // '['
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    while (true) {
      std::string child_path = path + "[" + std::to_string(v.items_.size()) + "]";
      v.items_.push_back(parse_value(child_path, depth + 1));
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() == ']') {
        ++pos_;
        return;
      } else {
        fail("expected ',' or ']' after array element" + got());
      }
    }
  }

  // Reads the number's text by the grammar, then converts it with from_chars (correctly rounded,
  // independent of the locale).
  void parse_number(Value& v) {
    size_t start = pos_;
    auto digits = [&] {
      size_t first = pos_;
      while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - first;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') fail("a number may not have a leading zero");
    } else if (digits() == 0) {
      fail("expected a digit in number" + got());
    }
    if (peek() == '.') {
      ++pos_;
      if (digits() == 0) fail("expected a digit after '.' in number" + got());
    }
    bool negative_exponent = false;
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') negative_exponent = text_[pos_++] == '-';
      if (digits() == 0) fail("expected a digit in the exponent of number" + got());
    }
    v.kind_ = Value::Kind::Number;
    v.text_ = std::string(text_.substr(start, pos_ - start));
    const NumberValue number = number_value(v.text_);
    if (number.out_of_range && !negative_exponent) fail_at(start, "number " + v.text_ + " is too large for a double");
    if (!number.converted) fail_at(start, "cannot convert number " + v.text_);
    // Too small for a double rounds to zero, as strtod does.
    v.number_ = number.out_of_range ? (v.text_[0] == '-' ? -0.0 : 0.0) : number.value;
  }

  unsigned parse_hex4() {
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      unsigned digit;
      if (c >= '0' && c <= '9') digit = c - '0';
      else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
      else fail("expected 4 hex digits after \\u" + got());
      value = value * 16 + digit;
      ++pos_;
    }
    return value;
  }

  // \uXXXX, with a UTF-16 surrogate pair (\uD8xx\uDCxx) joined into one code point.
  void parse_unicode_escape(std::string& out) {
    size_t escape_offset = pos_ - 2;  // at the backslash
    unsigned unit = parse_hex4();
    if (unit >= 0xDC00 && unit <= 0xDFFF) {
      fail_at(escape_offset, "unpaired low surrogate in \\u escape");
    }
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      if (!consume_word("\\u")) fail_at(escape_offset, "high surrogate not followed by \\u escape");
      unsigned low = parse_hex4();
      if (low < 0xDC00 || low > 0xDFFF) {
        fail_at(escape_offset, "high surrogate not followed by a low surrogate");
      }
      unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, unit);
  }

  // One multi-byte UTF-8 character at pos_, checked, appended to out.
  void copy_utf8_sequence(std::string& out) {
    size_t length = utf8_sequence_length(text_.substr(pos_));
    if (length == 0) fail("invalid UTF-8 in string" + got());
    out.append(text_.substr(pos_, length));
    pos_ += length;
  }

  std::string parse_string() {
    size_t open_offset = pos_;
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (at_end()) fail_at(open_offset, "unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail("control character in string (write it as an escape such as \\n)" + got());
      }
      if (static_cast<unsigned char>(c) >= 0x80) {
        copy_utf8_sequence(out);
        continue;
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;  // backslash
      char letter = peek();
      if (letter == 'u') {
        ++pos_;
        parse_unicode_escape(out);
      } else if (const Escape* escape = escape_for_letter(letter); escape != nullptr) {
        ++pos_;
        out += escape->character;
      } else {
        fail("invalid escape in string" + got());
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

ParseError::ParseError(std::string_view source, size_t offset, const std::string& reason)
    : Error("json: " + std::string(source) + ": byte " + std::to_string(offset) + ": " + reason),
      offset(offset),
      reason(reason) {}

Value parse(std::string_view text, std::string_view source_name) {
  return Parser(text, source_name).parse_document();
}

Value parse_file(const std::string& path) { return parse(read_user_file(path), path); }

}  // namespace tg::json
