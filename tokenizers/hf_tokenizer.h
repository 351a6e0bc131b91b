// tokenizers/hf_tokenizer.h — Hugging Face's tokenizer.json for byte-level BPE, the file that
// ships beside Llama 3, Qwen2, Qwen3 and GPT-2 checkpoints, read and run as the `tokenizers`
// library runs it (encode with add_special_tokens=False: no BOS added).
//
// Encoding matches the added tokens first; the text between them is normalized (NFC or not at
// all, nfc.h), cut into chunks (pre_split.h) and each chunk merged by BPE (bpe_merge.h).
// Decoding concatenates the ids' bytes. Read from_document in hf_tokenizer.cpp first (what each
// field of the files means, beside from_json below), then encode. A run's tokenizer picks this
// class or another: Tokenizer in tokenizer.h.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/json.h"
#include "tokenizers/bpe_tables.h"

namespace tg::tokenizers {

class HfTokenizer {
 public:
  enum class PreSplit { kGpt2, kLlama3, kQwen2 };

  // tokenizer.json's text; source names it in errors. config_json: tokenizer_config.json's text,
  // or "" when there is none. What is read from tokenizer.json:
  //   model               "type": "BPE": "vocab" {token: id}, "merges" as "a b" strings or ["a", "b"]
  //                       pairs (the list order is the rank), "ignore_merges" (Llama 3: a chunk that
  //                       is a token of the vocabulary is that token, merged or not);
  //                       continuing_subword_prefix and end_of_word_suffix empty, no dropout, no
  //                       byte_fallback
  //   added_tokens        [{id, content, ...}]: each content is matched in the text as a whole
  //                       string before anything else (the leftmost, and of those the longest, as
  //                       the library's Aho-Corasick matcher finds them; a trie of the contents
  //                       walks each position in the match's length, however many there are), and
  //                       becomes its id; the text between them goes through the steps below
  //   normalizer          null, or {"type": "NFC"} (Qwen's; nfc.h)
  //   pre_tokenizer       the chunks BPE works within: a Split on one of three patterns, matched by
  //                       hand (pre_split.h), followed by ByteLevel without its own regex; another
  //                       pattern, or another kind of pre-tokenizer, is an error naming it
  //     GPT-2's    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  //                (also as ByteLevel with use_regex true, GPT-2's own file)
  //     Llama 3's  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|...
  //     Qwen2's    the same with \p{N} (one digit a chunk)
  //   decoder             ByteLevel (or none): a token's characters are its bytes, through GPT-2's
  //                       bytes_to_unicode table (gpt2_tokenizer.h)
  // Tokens are written in bytes_to_unicode's alphabet, and every byte must be a token.
  // tokenizer_config.json gives bos_token and eos_token (a string or {"content": ...}; null: none),
  // add_bos_token (else: whether tokenizer.json's post_processor is a TemplateProcessing that
  // begins with a special token) and chat_template (see chat_template() below).
  static HfTokenizer from_json(const std::string& text, const std::string& source, const std::string& config_json = "",
                               const std::string& config_source = "");
  // A tokenizer.json file, with the tokenizer_config.json beside it if there is one.
  static HfTokenizer from_file(const std::string& path);
  // The same for a file already read (text) and parsed (doc): the one place that looks for the
  // tokenizer_config.json beside path.
  static HfTokenizer from_document_at(const json::Value& doc, const std::string& text, const std::string& path);
  // The same from the parsed document (text: what it was parsed from, kept for saving).
  static HfTokenizer from_document(const json::Value& doc, const std::string& text, const std::string& source,
                                   const std::string& config_json = "", const std::string& config_source = "");
  // Sets the chat template from a chat_template.jinja's text (it replaces tokenizer_config.json's,
  // as in transformers), kept to be saved beside the tokenizer.
  void set_chat_template_file(const std::string& jinja_text);
  // Whether a parsed tokenizer.json is Hugging Face's (it has "model"), not one of tapegrad's own.
  static bool is_hf_document(const json::Value& doc);

  // A chunk's ids: its bytes' tokens, then BPE's merges lowest rank first (bpe_merge.h); with
  // ignore_merges, a chunk that is a token is that token. encode() remembers each chunk's ids, so
  // one tokenizer must not encode from two threads at once.
  std::vector<int64_t> encode(std::string_view text) const;
  // Each id's bytes (an added token's content as it is), concatenated: the bytes exactly, as
  // GPT-2's tokenizer does, where Hugging Face's decode replaces bytes that are not UTF-8 by U+FFFD.
  std::string decode(const std::vector<int64_t>& ids) const;
  // The largest id + 1: the ids a model's embedding must cover (a model folder whose vocab_size is
  // smaller is refused where the two meet). Ids may leave gaps, as the library allows; memory goes
  // with the number of tokens, not the largest id (dense_bytes_ and sparse_bytes_, below).
  int64_t vocab_size() const { return vocab_size_; }
  // The id of a token given as its text (an added token's content, or a vocabulary token's
  // bytes), or -1.
  int64_t token_id(std::string_view text) const;
  // The bytes of the token with this id ("" for an id no token has).
  const std::string& token_bytes(int64_t id) const;
  PreSplit pre_split() const { return pre_split_; }
  const char* pre_split_name() const;
  bool normalizes_nfc() const { return nfc_; }
  // tokenizer_config.json's bos_token and eos_token. encode() never adds the BOS; the caller does,
  // when add_bos().
  int64_t bos_id() const { return bos_id_; }  // -1: none
  int64_t eos_id() const { return eos_id_; }  // -1: none
  bool add_bos() const { return add_bos_; }
  // The added tokens, in the file's order.
  struct AddedToken {
    std::string content;
    int32_t id = 0;
    bool special = false;
  };
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  const std::string& source() const { return source_; }
  // The files as read: what a run folder saves (Tokenizer::save).
  std::string to_json() const { return json_text_; }
  const std::string& config_text() const { return config_text_; }
  // The chat template (a Jinja program: tokenizers/chat_template.h): chat_template.jinja's (beside
  // the file, where newer versions of transformers save it), else tokenizer_config.json's
  // "chat_template": a string, or transformers' list of named templates [{"name": "default",
  // "template": ...}, ...] (the "default" one is used); "" when there is none.
  const std::string& chat_template() const { return chat_template_; }
  // chat_template.jinja as read, or "" when the template came from tokenizer_config.json.
  const std::string& chat_template_file() const { return chat_template_file_; }

 private:
  void encode_ordinary(std::string_view text, std::vector<int64_t>& out) const;
  std::span<const int32_t> chunk_ids(std::string_view chunk) const;
  size_t chunk_length(std::string_view text, size_t i) const;
  // The added token that starts at text[i] (the longest), or nullptr.
  const AddedToken* added_at(std::string_view text, size_t i) const;
  // Adds added_[index] to the trie of the added tokens' contents.
  void add_to_trie(int32_t index);

  std::string source_, json_text_, config_text_, chat_template_, chat_template_file_;
  PreSplit pre_split_ = PreSplit::kGpt2;
  bool nfc_ = false, ignore_merges_ = false, add_bos_ = false;
  // id -> bytes, the vocabulary's and the added tokens': the ids below the number of tokens in a
  // vector (all of them when there are no gaps), the few past it in a hash map
  std::vector<std::string> dense_bytes_;
  std::unordered_map<int32_t, std::string> sparse_bytes_;
  int64_t vocab_size_ = 0;                             // the largest id + 1
  std::unordered_map<std::string, int32_t> id_of_;     // vocabulary bytes -> id
  std::array<int32_t, 256> byte_id_{};                 // byte -> its token's id
  PairRanks ranks_;                                    // (left id, right id) -> rank
  std::vector<int32_t> made_by_;                       // rank -> the id of the token it makes
  std::vector<AddedToken> added_;
  // The trie of the added tokens' contents: node 0 is the root, (node, byte) -> the next node, and
  // each node the index in added_ of the token that ends there (-1: none).
  PairRanks added_next_;
  std::vector<int32_t> added_ending_{-1};
  std::array<bool, 256> added_first_byte_{};           // whether an added token starts with this byte
  int64_t bos_id_ = -1, eos_id_ = -1;
  mutable ChunkCache cache_;
  mutable std::vector<int32_t> long_chunk_ids_;
};

}  // namespace tg::tokenizers
