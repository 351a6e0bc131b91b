// tokenizers/tokenizer.h — the character-level tokenizer: the sorted set of the corpus's
// characters, one id each.
//
// A corpus that is valid UTF-8 is split into Unicode code points (as Python's sorted(set(text))
// does, so ids agree with the usual PyTorch notebooks); any other file is split into bytes.
// Saved as tokenizer.json: {"type": "char", "kind": "utf8" | "bytes", "symbols": [code points or
// bytes, ascending]}. A run's tokenizer (Tokenizer, below) is this one, byte-level BPE (bpe.h),
// GPT-2's own (gpt2_tokenizer.h) or a Hugging Face tokenizer.json (hf_tokenizer.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokenizers/bpe.h"
#include "tokenizers/gpt2_tokenizer.h"
#include "tokenizers/hf_tokenizer.h"

namespace tg::tokenizers {

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

// The tokenizer of a train_gpt run: characters ("char"), byte-level BPE ("bpe") or GPT-2's
// ("gpt2"). A char or bpe tokenizer made from instruction or chat data has one special token
// after its vocabulary (its id the last), kEndOfText: what ends each response, so a model trained
// from scratch learns to stop (generation stops there; the chat template writes it after each
// assistant turn). Its tokenizer.json then has "eos_token": "<|endoftext|>" besides its own
// fields; one made from plain text has none, its ids as they always were. A "gpt2" tokenizer.json is {"type": "gpt2", "vocab": "vocab.json", "merges":
// "merges.txt"}: the names of GPT-2's two files, in the tokenizer.json's folder (relative paths
// that stay inside it: "/etc/passwd" or "../x" is an error naming the key).
class Tokenizer {
 public:
  Tokenizer() = default;                                        // characters of no text
  Tokenizer(CharTokenizer chars) : impl_(std::move(chars)) {}  // NOLINT: each kind converts
  Tokenizer(BpeTokenizer bpe) : impl_(std::move(bpe)) {}       // NOLINT
  Tokenizer(Gpt2Tokenizer gpt2) : impl_(std::move(gpt2)) {}    // NOLINT
  Tokenizer(HfTokenizer hf) : impl_(std::move(hf)) {}          // NOLINT
  // tokenizer.json of any kind: Hugging Face's (it has "model") is an HfTokenizer, with the
  // tokenizer_config.json beside `source` if there is one; "type": "bpe" is BPE, "gpt2" GPT-2's
  // (its files are read from the folder of `source`, the tokenizer.json's path), anything else
  // characters (the files of runs from before BPE have no "type").
  static Tokenizer from_json(const std::string& json, const std::string& source);
  // GPT-2's end-of-text text, the special token with_end_of_text adds.
  static constexpr std::string_view kEndOfText = Gpt2Tokenizer::kEndOfText;
  // This char or bpe tokenizer with the special token `text` after its vocabulary (header).
  Tokenizer with_end_of_text(std::string_view text = kEndOfText) &&;

  const char* type() const;
  bool is_bpe() const { return std::holds_alternative<BpeTokenizer>(impl_); }
  bool is_gpt2() const { return std::holds_alternative<Gpt2Tokenizer>(impl_); }
  bool is_hf() const { return std::holds_alternative<HfTokenizer>(impl_); }
  const HfTokenizer* hf() const { return std::get_if<HfTokenizer>(&impl_); }
  // allow_special: "<|endoftext|>" in the text becomes its special token, for GPT-2's and for a char
  // or bpe tokenizer that has one (without it, it is ordinary text); a Hugging Face tokenizer always
  // matches its added tokens, as its library does.
  std::vector<int64_t> encode(const std::string& text, bool allow_special = false) const;
  // A whole text as a model reads it, as transformers' tokenizer.encode makes it: the BOS token
  // first where the tokenizer adds one (a Hugging Face tokenizer whose tokenizer_config.json says
  // so: Llama 3's <|begin_of_text|>; GPT-2's, Qwen's and tapegrad's own add none), then encode(text).
  std::vector<int64_t> encode_with_bos(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const;
  std::string to_json() const;
  // Writes tokenizer.json into dir, and for "gpt2" also vocab.json and merges.txt beside it (for
  // Hugging Face's, the tokenizer_config.json and chat_template.jinja it was read with).
  void save(const std::string& dir) const;
  // The id of '\n' (a sample's first token), or fallback when the vocabulary has none.
  int64_t newline_or(int64_t fallback) const;
  // GPT-2's "<|endoftext|>" id (what ends an instruction example's response), a Hugging Face
  // tokenizer's eos_token, a char or bpe tokenizer's special token, or -1 when it has none.
  int64_t end_of_text_id() const;
  // bytes (V): how many bytes of text each id stands for (bits per byte divide by their sum).
  // "<|endoftext|>" counts as its 13 bytes, as decode writes them.
  std::vector<int64_t> bytes_per_id() const;

 private:
  int64_t base_vocab_size() const;  // the ids of impl_ itself, without end_of_text_
  std::vector<int64_t> encode_base(const std::string& text, bool allow_special) const;

  std::variant<CharTokenizer, BpeTokenizer, Gpt2Tokenizer, HfTokenizer> impl_;
  std::string end_of_text_;  // char and bpe: the special token's text ("" = none); its id base_vocab_size()
};

// The tokenizer at path: a tapegrad tokenizer.json, or a folder holding one, or a folder with
// GPT-2's files (vocab.json + merges.txt, else encoder.json + vocab.bpe), or a Hugging Face
// tokenizer.json (a file, or a folder holding one; hf_tokenizer.h). A folder's tokenizer.json in
// Hugging Face's format (it has "model") is passed over for the GPT-2 files beside it. A folder with one tokenizer is read as it is; one with tapegrad's tokenizer.json and
// GPT-2's files is read only when they are the same tokenizer, a "gpt2" tokenizer.json naming
// those files (as train_gpt saves a run from GPT-2), and is otherwise refused with an error naming
// both, since either could be the one meant. Errors say what was looked for.
Tokenizer load_tokenizer(const std::string& path);

}  // namespace tg::tokenizers
