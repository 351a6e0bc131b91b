// tokenizers/gpt2_tokenizer.h — GPT-2's tokenizer, exactly: the algorithm of OpenAI's
// encoder.py and Hugging Face's GPT2Tokenizer (merges by the rank of the pair in merges.txt).
// tiktoken's "gpt2" (js-tiktoken 1.0.21) gives the same ids on every text of
// tests/reference/gpt2_tokenizer_reference.json, on tinyshakespeare and on a 4 MB text of
// bench/make_multilingual_text.py; it can differ where its regex engine's classes do
// (JavaScript's \s has U+FEFF and lacks U+0085; letters newer than Unicode 14.0, our table's).
//
// Encoding is the pre-split (gpt2_split, pre_split.h), then byte-level BPE on each chunk with
// the merges in rank order. Read from_texts and encode in gpt2_tokenizer.cpp first; the merge
// itself is BpeTokenizer's (bpe.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/bpe.h"

namespace tg::tokenizers {

// Tokens are written in bytes_to_unicode's alphabet: each of the 256 bytes is one printable
// character (the printable Latin-1 bytes themselves, the other 68 bytes U+0100 onwards, in
// order), so a token's bytes are its characters read back through that table.
//
// A token as GPT-2's files (and Hugging Face's byte-level tokenizer.json) write it, read back
// into its bytes through bytes_to_unicode; false when a character stands for no byte (or the
// token is empty). Gpt2Tokenizer::token_text is the other way.
bool byte_level_token_bytes(std::string_view token, std::string& bytes);

class Gpt2Tokenizer {
 public:
  static constexpr std::string_view kEndOfText = "<|endoftext|>";

  // The vocabulary (vocab.json or encoder.json) and merges (merges.txt or vocab.bpe) files, the
  // two GPT-2 ships, under either pair of names (same contents):
  //   vocab.json  (Hugging Face) = encoder.json (OpenAI): {token: id}, 50257 entries
  //   merges.txt  (Hugging Face) = vocab.bpe   (OpenAI): "#version: 0.2", then one merge a line,
  //                                                      "left right", the line order is the rank
  //                                                      (lines end in "\n", "\r\n" or "\r": text_lines)
  // Every error names the file and what is wrong with it (the line of a merge).
  static Gpt2Tokenizer from_files(const std::string& vocab_path, const std::string& merges_path);
  // The same from the files' texts; the names are for messages.
  static Gpt2Tokenizer from_texts(std::string vocab_json, const std::string& vocab_name, std::string merges_text,
                                  const std::string& merges_name);
  // A folder with vocab.json + merges.txt, or else encoder.json + vocab.bpe.
  static Gpt2Tokenizer from_folder(const std::string& dir);
  // How the files spell a token of these bytes (bytes_to_unicode, above), as UTF-8.
  static std::string token_text(std::string_view bytes);
  // Whether dir holds either pair.
  static bool folder_has_files(const std::string& dir);
  // The paths of the pair from_folder reads in dir, or nullopt when it holds neither.
  struct FilePaths {
    std::string vocab, merges;
  };
  static std::optional<FilePaths> files_in(const std::string& dir);

  // The pre-split, then BpeTokenizer's merge step on each chunk (bpe.h, with tapegrad's ids: byte
  // b is b, merge i is 256 + i), mapped to GPT-2's ids through the vocabulary (checked, not
  // assumed to be 256 + rank). "<|endoftext|>" (50256) is the one special token: the text
  // "<|endoftext|>" becomes it only with allow_special (tiktoken's allowed_special); by default
  // that text is encoded as ordinary text (tiktoken's encode_ordinary), its pieces split around it.
  // encode() remembers each chunk's ids (BpeTokenizer's cache), so one tokenizer must not encode
  // from two threads at once.
  std::vector<int64_t> encode(std::string_view text, bool allow_special = false) const;
  // The ids' bytes, concatenated: lossless for any ids in range, and any bytes encoded, invalid
  // UTF-8 included, decode back to themselves. Errors name an id outside [0, vocab_size()).
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const { return static_cast<int64_t>(token_bytes_.size()); }
  const std::string& token_bytes(int64_t id) const { return token_bytes_.at(static_cast<size_t>(id)); }
  // The id of the token that is exactly these bytes, or fallback.
  int64_t id_of(std::string_view bytes, int64_t fallback) const;
  int64_t end_of_text_id() const { return end_of_text_; }  // -1 when the vocabulary has none
  // Writes vocab.json and merges.txt into dir (made if needed): copies of the files read.
  void save_files(const std::string& dir) const;
  // tapegrad's tokenizer.json for these files: {"type": "gpt2", "vocab": "vocab.json",
  // "merges": "merges.txt"}, the names save_files writes (Tokenizer reads it back).
  std::string to_json() const;

 private:
  void encode_ordinary(std::string_view text, std::vector<int64_t>& out) const;

  BpeTokenizer bpe_;                      // the merges in tapegrad's ids
  std::vector<int32_t> gpt2_id_;          // tapegrad's id -> GPT-2's id
  std::vector<std::string> token_bytes_;  // GPT-2's id -> its bytes
  int64_t end_of_text_ = -1;
  std::string vocab_text_, merges_text_;  // the files as read, for save_files
};

}  // namespace tg::tokenizers
