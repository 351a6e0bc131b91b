// tokenizers/bpe.h — byte-level BPE (byte pair encoding), as GPT-2 tokenizes, specified so
// that any implementation gives the same ids (the Python twin: examples/pytorch/bpe.py). The
// steps, which bpe.cpp follows in this order:
//
// 1. Pre-split. The text's bytes are cut into chunks, exactly the matches of Python's
//    re.findall for GPT-2's pattern on bytes, with every byte >= 0x80 counted as a letter
//    (byte_split, pre_split.h). No merge crosses a chunk boundary.
// 2. Training. Ids 0..255 are the bytes; merge i makes id 256 + i. Each round counts every
//    adjacent pair of ids inside the chunks (a chunk that occurs n times counts n times), takes
//    the pair with the highest count (ties: the smallest (left, right)), and replaces it in
//    every chunk, left to right, without overlap (a a a -> aa a). It stops at vocab_size, or
//    when no pair occurs twice.
// 3. Encoding applies the merges to each chunk in rank order: of the adjacent pairs that are
//    merges, the one with the lowest index, all its occurrences left to right; and again.
// 4. Decoding concatenates the tokens' bytes: lossless for any bytes, invalid UTF-8 included.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <span>
#include <vector>

#include "tokenizers/bpe_tables.h"
#include "tokenizers/pre_split.h"

namespace tg::tokenizers {

class BpeTokenizer {
 public:
  struct Merge {
    int32_t left = 0, right = 0;  // the two ids joined; the new id is 256 + the merge's index
  };
  static constexpr int64_t kMinVocab = 256, kMaxVocab = 65536;
  static constexpr const char* kPatternName = "gpt2-bytes";

  // Learns up to vocab_size - 256 merges from `text` (step 2). vocab_size in [256, 65536].
  static BpeTokenizer train(std::string_view text, int64_t vocab_size);
  // A tokenizer from merges (each may use only the ids before it); errors name the merge.
  static BpeTokenizer from_merges(std::vector<Merge> merges, const std::string& source = "bpe");
  // Read back what to_json wrote; `source` (a file name) is used in error messages.
  static BpeTokenizer from_json(const std::string& json, const std::string& source);

  std::vector<int64_t> encode(std::string_view text) const;
  // The ids of one chunk (step 3), remembered for the next time it comes; valid until the next
  // call. Gpt2Tokenizer uses it for its own pre-split.
  std::span<const int32_t> chunk_ids(std::string_view chunk) const;
  // Step 3 on one chunk as written there, O(n^2): the test oracle of the heap-based merge that
  // chunk_ids uses (the same ids, in O(n log n) for long chunks).
  std::vector<int32_t> merge_chunk_plain(std::string_view chunk) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const { return static_cast<int64_t>(token_bytes_.size()); }
  const std::vector<Merge>& merges() const { return merges_; }
  const std::string& token_bytes(int64_t id) const { return token_bytes_.at(static_cast<size_t>(id)); }
  // tapegrad's tokenizer.json: {"type": "bpe", "pattern": "gpt2-bytes", "vocab_size": N,
  // "merges": [[left, right], ...]}.
  std::string to_json() const;

 private:
  std::vector<int32_t> merge_chunk(std::string_view chunk) const;  // step 3 on one chunk, fast

  std::vector<Merge> merges_;
  std::vector<std::string> token_bytes_;          // id -> its bytes
  PairRanks rank_;                                // (left, right) -> merge index
  // chunk -> its ids: encode's cache, so encode is not safe to call from two threads at once.
  static constexpr size_t kLongestCachedChunk = 1 << 16;  // longer ones (rare) are merged each time
  mutable ChunkCache cache_;
  mutable std::vector<int32_t> long_chunk_ids_;  // chunk_ids' answer for a chunk too long to cache
};

}  // namespace tg::tokenizers
