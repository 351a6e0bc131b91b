// examples/gpt/tokenizer.h — the character-level tokenizer: the sorted set of the corpus's
// characters, one id each.
//
// A corpus that is valid UTF-8 is split into Unicode code points (as Python's sorted(set(text))
// does, so ids agree with the usual PyTorch notebooks); any other file is split into bytes.
// Saved as tokenizer.json: {"type": "char", "kind": "utf8" | "bytes", "symbols": [code points or
// bytes, ascending]}. A run's tokenizer (Tokenizer, below) is this one or byte-level BPE (bpe.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "examples/gpt/bpe.h"

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
  int64_t bytes_of(int64_t id) const;  // the UTF-8 (or single byte) length of id's character

 private:
  bool utf8_ = true;
  std::vector<uint32_t> symbols_;  // ascending: id -> code point (or byte)
};

// The tokenizer of a train_gpt run: characters ("char") or byte-level BPE ("bpe").
class Tokenizer {
 public:
  Tokenizer() = default;                                        // characters of no text
  Tokenizer(CharTokenizer chars) : impl_(std::move(chars)) {}  // NOLINT: either kind converts
  Tokenizer(BpeTokenizer bpe) : impl_(std::move(bpe)) {}       // NOLINT
  // tokenizer.json of either kind: "type": "bpe" is BPE, anything else characters (the files of
  // runs from before BPE have no "type").
  static Tokenizer from_json(const std::string& json, const std::string& source);

  const char* type() const { return is_bpe() ? "bpe" : "char"; }
  bool is_bpe() const { return std::holds_alternative<BpeTokenizer>(impl_); }
  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const;
  std::string to_json() const;
  // The id of '\n' (a sample's first token), or fallback when the vocabulary has none.
  int64_t newline_or(int64_t fallback) const;
  // bytes (V): how many bytes of text each id stands for (bits per byte divide by their sum).
  std::vector<int64_t> bytes_per_id() const;

 private:
  std::variant<CharTokenizer, BpeTokenizer> impl_;
};

}  // namespace tg::examples
