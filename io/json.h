// io/json.h — a small, strict JSON reader (RFC 8259) for reference test data, safetensors
// headers and config files.
//
// parse() builds a tree of Values. Objects keep their keys in file order; a key may appear only
// once. Numbers keep the exact text they were written with next to the double, so that integers
// beyond 2^53 (seeds such as 18446744073709551615) are read without loss by as_int64() /
// as_uint64().
//
// The writing side is Writer (at the end): every JSON file and line tapegrad writes is built by
// one, so that every number in them has the one format of number().
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/error.h"

namespace tg::json {

struct Member;

// Every Value remembers where it came from ("rng.json: vectors[3].seed") and the byte offset of its
// first character, and every error is a tg::Error (autograd/error.h) that says where and what:
//   json: tests/x.json: byte 1043: expected ',' or ']' after array element, got '}'
//   json: tests/x.json: vectors[3].seed: expected a number, got a string
class Value {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Value() = default;  // null

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }
  // Where this value is: "<source>: <path>", e.g. "rng.json: vectors[3].seed" ("rng.json: (top
  // level)" for the root).
  const std::string& where() const { return where_; }
  // Byte offset of the value's first character in the parsed text.
  size_t offset() const { return offset_; }

  // Typed access. Each throws tg::Error naming where() and the kinds involved if the
  // value is of another kind.
  bool as_bool() const;
  double as_double() const;       // the nearest double to the number's text
  int64_t as_int64() const;       // exact; the text must be an integer in int64 range
  uint64_t as_uint64() const;     // exact; the text must be a non-negative integer in uint64 range
  const std::string& number_text() const;  // the number exactly as written in the file
  const std::string& as_string() const;
  const std::vector<Value>& as_array() const;
  const std::vector<Member>& as_object() const;  // in file order

  // Arrays and objects: element count. Throws for other kinds.
  size_t size() const;
  // Array element; throws naming where() and the index if out of range.
  const Value& operator[](size_t index) const;
  // Object member; throws naming where() and the key if it is absent.
  const Value& operator[](std::string_view key) const;
  // Object member, or nullptr if absent (throws only if this is not an object).
  const Value* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  static const char* kind_name(Kind kind);  // "null", "a bool", "a number", ...

 private:
  friend class Parser;
  [[noreturn]] void wrong_kind(Kind wanted) const;

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0.0;
  std::string text_;  // the string's value, or the number's text
  std::vector<Value> items_;
  std::vector<Member> members_;
  std::string where_;
  size_t offset_ = 0;
};

struct Member {
  std::string key;
  Value value;
};

// What parse() throws for a syntax error. what() is the whole message ("json: <source>: byte
// <offset>: <reason>"); offset and reason let a caller that embeds JSON in a file of its own word
// the message itself (offset counts from the start of the parsed text).
struct ParseError : Error {
  ParseError(std::string_view source, size_t offset, const std::string& reason);
  size_t offset;
  std::string reason;
};

// Parse a whole JSON text. source_name is only used in messages (typically the file name).
// Throws ParseError on any syntax error, naming the source and the byte offset. Strings must be
// valid UTF-8 (RFC 8259 section 8.1); hostile input (deep nesting, huge numbers, broken escapes
// or UTF-8) is a clean error, never a crash.
Value parse(std::string_view text, std::string_view source_name);
// Read and parse a file; the path is the source name. A path that is not a regular file is an
// Error before anything is opened (io/user_file.h): "x.json: is a folder, not a file".
Value parse_file(const std::string& path);

// The offset of the first byte of the first sequence in text that is not UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF, no cut-off sequence), or npos if all is.
size_t find_invalid_utf8(std::string_view text);

// UTF-8 both ways, the one encoder and decoder of the project (the tokenizer uses them too).
// decode_utf8: the code points of text, or false when it is not valid UTF-8 (the same rules as
// find_invalid_utf8); offsets (optional) receives the byte offset each code point starts at.
// append_utf8: the 1 to 4 bytes of one code point (at most U+10FFFF).
bool decode_utf8(std::string_view text, std::vector<uint32_t>& code_points, std::vector<size_t>* offsets = nullptr);
// decode_utf8_at: the one code point whose sequence starts at text[pos] (into code_point) and the
// sequence's length, 1 to 4; 0, code_point untouched, where no well-formed sequence starts there.
size_t decode_utf8_at(std::string_view text, size_t pos, uint32_t& code_point);
void append_utf8(std::string& out, uint32_t code_point);
// utf8_whole_prefix: how much of text can be printed without cutting a character in two: all of
// it, less a lead byte at the end (and its continuation bytes) that still waits for the rest of
// its sequence. Invalid bytes count as whole: they print as they are (text arriving in pieces,
// such as byte-level BPE tokens, which may split a character).
size_t utf8_whole_prefix(std::string_view text);

// The JSON text of a string, quotes included: '"', '\' and control characters are escaped
// (\n, \t, ... or \u001f), everything else, UTF-8 included, is copied as it is. The same text
// as Python's json.dumps(s, ensure_ascii=False).
std::string quote(std::string_view text);

// ---- writing --------------------------------------------------------------------------------------

// The one number format of every JSON text tapegrad writes, Python's repr(float) (and so its
// json.dumps): the fewest digits that read back as the same double, with a point between
// 1e-4 and 1e16 and an exponent outside: 0.1, 0.0003, 3.0, -0.0, 0.30000000000000004,
// 1000000.0, 1e-05, 1.5e+16, 1e+300. JSON has no inf or nan: v must be finite, else a tg::Error.
std::string number(double v);

// v rounded to `decimals` places after the point: for measured numbers (seconds, tokens per
// second) whose last digits are noise, so that number() writes 0.143 rather than
// 0.14300000000000002 or 0.14312876. Non-finite v stays as it is.
double round_to(double v, int decimals);

// How a Writer lays its object or array out; the names are Python's json.dumps's.
enum class Layout {
  OneLine,  // {"a": 1, "b": [1, 2]}      json.dumps(x)
  Pretty,   // a member per line, by 2     json.dumps(x, indent=2)
  Compact,  // {"a":1,"b":[1,2]}          json.dumps(x, separators=(",", ":"))
};

// Builds one JSON object (or array), member by member, in the order given:
//
//   json::Writer w(json::Layout::Pretty);
//   w.field("steps", 30).field("loss", 2.5).field("kernels", "fast").field("memory", nested);
//   write(w.str());   // {\n  "steps": 30,\n  "loss": 2.5, ...\n}
//
// Strings go through quote(), doubles through number(), integers as they are, bools as
// true/false. A double that is not finite is refused with a tg::Error naming the field (or the
// item's index). A nested Writer keeps its own layout: a one-line object inside a pretty one
// stays on its line; a pretty one is indented to its place.
class Writer {
 public:
  explicit Writer(Layout layout = Layout::OneLine);  // an object, {...}
  static Writer array(Layout layout = Layout::OneLine);  // an array, [...]

  // Object members.
  Writer& field(std::string_view name, std::string_view text);
  Writer& field(std::string_view name, const char* text) { return field(name, std::string_view(text)); }
  Writer& field(std::string_view name, double value);
  template <std::integral T>  // integers of any width, and bool
  Writer& field(std::string_view name, T value) { return add(name, integer(value)); }
  Writer& field(std::string_view name, std::optional<double> value);  // null when empty
  Writer& field(std::string_view name, std::nullptr_t);               // null
  Writer& field(std::string_view name, const Writer& nested);
  // A parsed value, written in this writer's layout; its numbers keep the text they were read
  // with (a file rewritten keeps the numbers it had).
  Writer& field(std::string_view name, const Value& value);
  // A member whose value is JSON text another Writer made (MemoryReport::json(), say): checked
  // to be one JSON value, then placed as it is (indented to its place when it spans lines).
  Writer& embed(std::string_view name, std::string_view json_text);

  // Array elements: the same kinds.
  Writer& item(std::string_view text);
  Writer& item(const char* text) { return item(std::string_view(text)); }
  Writer& item(double value);
  template <std::integral T>
  Writer& item(T value) { return add_item(integer(value)); }
  Writer& item(std::nullptr_t);
  Writer& item(const Writer& nested);
  Writer& item(const Value& value);

  bool empty() const { return entries_.empty(); }
  // The JSON text, without a newline at the end.
  std::string str() const;

 private:
  Writer(bool is_array, Layout layout) : is_array_(is_array), layout_(layout) {}
  template <std::integral T>
  static std::string integer(T value) {
    if constexpr (std::same_as<T, bool>) return value ? "true" : "false";
    else return std::to_string(value);
  }
  Writer& add(std::string_view name, std::string value_text);
  Writer& add_item(std::string value_text);

  bool is_array_ = false;
  Layout layout_ = Layout::OneLine;
  // Each member as (quoted name, value's JSON text); arrays leave the names empty. Values are
  // written when they are added; str() only lays them out.
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace tg::json
