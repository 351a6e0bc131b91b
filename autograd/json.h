// autograd/json.h — a small, strict JSON reader (RFC 8259) for reference test data, safetensors
// headers and config files.
//
// parse() builds a tree of Values. Objects keep their keys in file order; a key may appear only
// once. Numbers keep the exact text they were written with next to the double, so that integers
// beyond 2^53 (seeds such as 18446744073709551615) are read without loss by as_int64() /
// as_uint64().
//
// Every Value remembers where it came from ("rng.json: vectors[3].seed"), and every error is a
// tg::Error (autograd/error.h) that says where and what:
//   json: tests/x.json: byte 1043: expected ',' or ']' after array element, got '}'
//   json: tests/x.json: vectors[3].seed: expected a number, got a string
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
};

struct Member {
  std::string key;
  Value value;
};

// Parse a whole JSON text. source_name is only used in messages (typically the file name).
// Throws tg::Error on any syntax error, naming the source and the byte offset.
Value parse(std::string_view text, std::string_view source_name);
// Read and parse a file; the path is the source name.
Value parse_file(const std::string& path);

}  // namespace tg::json
