// autograd/io/json.h — a small, strict JSON reader (RFC 8259) for reference test data, safetensors
// headers and config files.
//
// parse() builds a tree of Values. Objects keep their keys in file order; a key may appear only
// once. Numbers keep the exact text they were written with next to the double, so that integers
// beyond 2^53 (seeds such as 18446744073709551615) are read without loss by as_int64() /
// as_uint64().
//
// Every Value remembers where it came from ("rng.json: vectors[3].seed") and the byte offset of its
// first character, and every error is a tg::Error (autograd/error.h) that says where and what:
//   json: tests/x.json: byte 1043: expected ',' or ']' after array element, got '}'
//   json: tests/x.json: vectors[3].seed: expected a number, got a string
// Strings must be valid UTF-8 (RFC 8259 section 8.1); hostile input (deep nesting, huge numbers,
// broken escapes or UTF-8) is a clean error, never a crash.
//
// quote() is the writing side for strings: it makes the JSON text of a string.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/error.h"

namespace tg::json {

struct Member;

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
// Throws ParseError on any syntax error, naming the source and the byte offset.
Value parse(std::string_view text, std::string_view source_name);
// Read and parse a file; the path is the source name.
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

}  // namespace tg::json
