// examples/gpt/tokenizer.h — the character-level tokenizer: the sorted set of the corpus's
// characters, one id each.
//
// A corpus that is valid UTF-8 is split into Unicode code points (as Python's sorted(set(text))
// does, so ids agree with the usual PyTorch notebooks); any other file is split into bytes.
// Saved as tokenizer.json: {"kind": "utf8" | "bytes", "symbols": [code points or bytes, ascending]}.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tg::examples {

class CharTokenizer {
 public:
  // The vocabulary of `text`: its distinct characters in ascending order.
  static CharTokenizer from_text(const std::string& text);
  // Read back what to_json wrote; `source` (a file name) is used in error messages.
  static CharTokenizer from_json(const std::string& json, const std::string& source);

  // Errors name the first character outside the vocabulary and its byte offset.
  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t id_or(uint32_t symbol, int64_t fallback) const;  // symbol's id, or fallback if it has none
  int64_t vocab_size() const { return static_cast<int64_t>(symbols_.size()); }
  bool is_utf8() const { return utf8_; }
  std::string to_json() const;

 private:
  bool utf8_ = true;
  std::vector<uint32_t> symbols_;  // ascending: id -> code point (or byte)
};

}  // namespace tg::examples
