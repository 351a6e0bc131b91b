// tokenizers/bpe.cpp — byte-level BPE: training, encoding and decoding of bpe.h (the
// pre-split is pre_split.cpp's).
#include "tokenizers/bpe.h"
#include "tokenizers/bpe_merge.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>

#include "autograd/error.h"
#include "io/json.h"

namespace tg::tokenizers {

// --- 2. training ---------------------------------------------------------------------------------

namespace {

// ids with every (left, right), left to right without overlap, replaced by merged.
void replace_pair(std::vector<int32_t>& ids, int32_t left, int32_t right, int32_t merged) {
  size_t out = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
      ids[out++] = merged;
      ++i;
    } else {
      ids[out++] = ids[i];
    }
  }
  ids.resize(out);
}

// The distinct chunks of the text, as ids, each with how often it occurs; the pair counts over
// them; and which chunks hold each pair. A round changes only the chunks that hold its pair, and
// the counts of the pairs in those chunks: nothing is recounted from scratch.
class PairCounts {
 public:
  explicit PairCounts(std::string_view text) {
    std::unordered_map<std::string_view, int64_t> seen;
    for (std::string_view chunk : byte_split(text)) ++seen[chunk];
    for (const auto& [chunk, count] : seen) {
      Word word{{}, count};
      for (unsigned char c : chunk) word.ids.push_back(c);
      words_.push_back(std::move(word));
    }
    for (size_t w = 0; w < words_.size(); ++w) add_pairs(static_cast<int32_t>(w));
    for (const auto& [key, count] : count_) best_.push({count, key});
  }

  // The pair with the highest count, ties to the smallest (left, right); count 0 if none.
  std::pair<int64_t, uint64_t> best() {
    while (!best_.empty()) {
      const auto [count, key] = best_.top();
      if (count_[key] == count) return {count, key};  // else a stale entry: the count changed
      best_.pop();
    }
    return {0, 0};
  }

  // Replaces the pair `key` by `merged` in every chunk that holds it, updating the counts.
  void merge(uint64_t key, int32_t merged) {
    const int32_t left = static_cast<int32_t>(key >> 32), right = static_cast<int32_t>(key & 0xffffffffu);
    std::vector<int32_t> holders = std::move(holders_[key]);
    holders_.erase(key);
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    changed_.clear();
    for (int32_t w : holders) {
      Word& word = words_[static_cast<size_t>(w)];
      pairs_of(word.ids, before_);
      if (!std::binary_search(before_.begin(), before_.end(), key)) continue;  // an earlier merge took it
      replace_pair(word.ids, left, right, merged);
      pairs_of(word.ids, after_);
      count_difference(w, word.count);
    }
    std::sort(changed_.begin(), changed_.end());
    changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
    for (uint64_t k : changed_) {
      if (count_[k] > 0) best_.push({count_[k], k});
    }
  }

 private:
  struct Word {
    std::vector<int32_t> ids;
    int64_t count = 0;
  };
  // Highest count first; of equal counts, the smallest key, which is the smallest (left, right).
  struct Order {
    bool operator()(const std::pair<int64_t, uint64_t>& a, const std::pair<int64_t, uint64_t>& b) const {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    }
  };

  // keys (sorted) = the adjacent pairs of ids, with repeats.
  static void pairs_of(const std::vector<int32_t>& ids, std::vector<uint64_t>& keys) {
    keys.clear();
    for (size_t i = 0; i + 1 < ids.size(); ++i) keys.push_back(pair_key(ids[i], ids[i + 1]));
    std::sort(keys.begin(), keys.end());
  }

  // Counts the pairs of chunk w (occurring `count` times) that the merge took away (in before_,
  // not in after_) or made (the other way round). Pairs in both are left alone.
  void count_difference(int32_t w, int64_t count) {
    size_t i = 0, j = 0;
    while (i < before_.size() || j < after_.size()) {
      if (j == after_.size() || (i < before_.size() && before_[i] < after_[j])) {
        count_[before_[i]] -= count;
        changed_.push_back(before_[i++]);
      } else if (i == before_.size() || after_[j] < before_[i]) {
        count_[after_[j]] += count;
        holders_[after_[j]].push_back(w);
        changed_.push_back(after_[j++]);
      } else {
        ++i, ++j;  // the same pair before and after
      }
    }
  }

  // Adds the pairs of chunk w to the counts (at the start).
  void add_pairs(int32_t w) {
    const Word& word = words_[static_cast<size_t>(w)];
    for (size_t i = 0; i + 1 < word.ids.size(); ++i) {
      const uint64_t key = pair_key(word.ids[i], word.ids[i + 1]);
      count_[key] += word.count;
      holders_[key].push_back(w);  // may repeat, or go stale: merge() checks
    }
  }

  std::vector<Word> words_;
  std::unordered_map<uint64_t, int64_t> count_;                 // pair key -> occurrences
  std::unordered_map<uint64_t, std::vector<int32_t>> holders_;  // pair key -> chunks holding it
  std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>, Order> best_;
  std::vector<uint64_t> changed_;                               // keys whose count moved this round
  std::vector<uint64_t> before_, after_;                        // a chunk's pairs around a merge
};

void check_vocab_size(int64_t vocab_size) {
  if (vocab_size < BpeTokenizer::kMinVocab || vocab_size > BpeTokenizer::kMaxVocab) {
    throw Error("bpe: vocab size must be in [256, 65536] (256 byte tokens, ids stored in 16 bits), got " +
                std::to_string(vocab_size));
  }
}

}  // namespace

BpeTokenizer BpeTokenizer::train(std::string_view text, int64_t vocab_size) {
  check_vocab_size(vocab_size);
  PairCounts pairs(text);
  std::vector<Merge> merges;
  while (256 + static_cast<int64_t>(merges.size()) < vocab_size) {
    const auto [count, key] = pairs.best();
    if (count < 2) break;  // no pair occurs twice: nothing more to learn
    const int32_t merged = 256 + static_cast<int32_t>(merges.size());
    merges.push_back({static_cast<int32_t>(key >> 32), static_cast<int32_t>(key & 0xffffffffu)});
    pairs.merge(key, merged);
  }
  return from_merges(std::move(merges));
}

BpeTokenizer BpeTokenizer::from_merges(std::vector<Merge> merges, const std::string& source) {
  if (256 + merges.size() > static_cast<size_t>(kMaxVocab)) {
    throw Error(source + ": " + std::to_string(merges.size()) + " merges make more than 65536 tokens");
  }
  BpeTokenizer t;
  for (int id = 0; id < 256; ++id) t.token_bytes_.emplace_back(1, static_cast<char>(id));
  for (size_t i = 0; i < merges.size(); ++i) {
    const Merge m = merges[i];
    const int64_t defined = 256 + static_cast<int64_t>(i);  // ids below this exist
    if (m.left < 0 || m.left >= defined || m.right < 0 || m.right >= defined) {
      throw Error(source + ": merge " + std::to_string(i) + " = [" + std::to_string(m.left) + ", " +
                  std::to_string(m.right) + "] refers to an id not yet defined (ids so far: 0.." +
                  std::to_string(defined - 1) + ")");
    }
    if (!t.rank_.insert(m.left, m.right, static_cast<int32_t>(i))) {
      throw Error(source + ": merge " + std::to_string(i) + " = [" + std::to_string(m.left) + ", " +
                  std::to_string(m.right) + "] repeats an earlier merge");
    }
    t.token_bytes_.push_back(t.token_bytes_[static_cast<size_t>(m.left)] +
                             t.token_bytes_[static_cast<size_t>(m.right)]);
  }
  t.merges_ = std::move(merges);
  return t;
}

// --- 3. encoding and 4. decoding -------------------------------------------------------------------

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 2);
  for (size_t i = 0, n = 0; i < text.size(); i += n) {  // byte_split, without making the list
    n = byte_chunk_length(text, i);
    const std::span<const int32_t> ids = chunk_ids(text.substr(i, n));
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

std::span<const int32_t> BpeTokenizer::chunk_ids(std::string_view chunk) const {
  if (const auto ids = cache_.find(chunk)) return *ids;
  if (chunk.size() > kLongestCachedChunk) {
    long_chunk_ids_ = merge_chunk(chunk);
    return long_chunk_ids_;
  }
  return cache_.insert(chunk, merge_chunk(chunk));
}

std::vector<int32_t> BpeTokenizer::merge_chunk_plain(std::string_view chunk) const {
  std::vector<int32_t> ids(chunk.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<unsigned char>(chunk[i]);
  while (ids.size() > 1) {  // the pair with the lowest merge index, until none is a merge
    int32_t rank = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const int32_t r = rank_.find(ids[i], ids[i + 1]);
      if (r >= 0 && (rank < 0 || r < rank)) rank = r;
    }
    if (rank < 0) break;
    const Merge m = merges_[static_cast<size_t>(rank)];
    replace_pair(ids, m.left, m.right, 256 + rank);
  }
  return ids;
}

// merge_chunk_plain's result in O(n log n) (bpe_merge.h). A merge of index r only makes pairs of
// index > r (merges refer to earlier ids), so taking the pairs lowest index first merges every
// occurrence of r, left to right without overlap, before any higher index: merge_chunk_plain's order.
std::vector<int32_t> BpeTokenizer::merge_chunk(std::string_view chunk) const {
  std::vector<int32_t> bytes(chunk.size());
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(chunk[i]);
  merge_lowest_rank_first(
      bytes, [this](int32_t left, int32_t right) { return rank_.find(left, right); },
      [](int32_t rank) { return 256 + rank; });
  return bytes;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  size_t size = 0;  // the output's length first, so that it is written in one allocation
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw Error("bpe: id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size()) +
                  ")");
    }
    size += token_bytes_[static_cast<size_t>(id)].size();
  }
  std::string out(size, '\0');
  char* at = out.data();
  for (int64_t id : ids) {
    const std::string& bytes = token_bytes_[static_cast<size_t>(id)];
    at = std::copy(bytes.begin(), bytes.end(), at);
  }
  return out;
}

// --- the file ----------------------------------------------------------------------------------

std::string BpeTokenizer::to_json() const {
  json::Writer merges = json::Writer::array();  // [[left, right], ...]
  for (const Merge& m : merges_) merges.item(json::Writer::array().item(m.left).item(m.right));
  json::Writer w;
  w.field("type", "bpe").field("pattern", kPatternName).field("vocab_size", vocab_size()).field("merges", merges);
  return w.str() + "\n";
}

BpeTokenizer BpeTokenizer::from_json(const std::string& text, const std::string& source) {
  const json::Value doc = json::parse(text, source);
  auto fail = [&](const std::string& what) -> BpeTokenizer { throw Error(source + ": " + what); };
  if (!doc.is_object() || !doc.contains("type") || !doc.contains("merges")) {
    return fail("expected a BPE tokenizer: an object with \"type\": \"bpe\" and \"merges\"");
  }
  if (!doc["type"].is_string() || doc["type"].as_string() != "bpe") return fail("\"type\" is not \"bpe\"");
  if (doc.contains("pattern") && (!doc["pattern"].is_string() || doc["pattern"].as_string() != kPatternName)) {
    return fail(std::string("unknown pre-split pattern (this build knows \"") + kPatternName + "\")");
  }
  const json::Value& list = doc["merges"];
  if (!list.is_array()) return fail("\"merges\" must be a list of [left, right] pairs");
  std::vector<Merge> merges;
  for (size_t i = 0; i < list.size(); ++i) {
    const json::Value& m = list[i];
    if (!m.is_array() || m.size() != 2 || !m[0].is_number() || !m[1].is_number()) {
      return fail("merge " + std::to_string(i) + " is not a [left, right] pair of ids");
    }
    const int64_t left = m[0].as_int64(), right = m[1].as_int64();
    if (left < 0 || right < 0 || left >= kMaxVocab || right >= kMaxVocab) {
      return fail("merge " + std::to_string(i) + " = [" + std::to_string(left) + ", " + std::to_string(right) +
                  "] has an id outside [0, 65536)");
    }
    merges.push_back({static_cast<int32_t>(left), static_cast<int32_t>(right)});
  }
  BpeTokenizer t = from_merges(std::move(merges), source);
  if (doc.contains("vocab_size") && doc["vocab_size"].as_int64() != t.vocab_size()) {
    return fail("\"vocab_size\" is " + std::to_string(doc["vocab_size"].as_int64()) + " but the merges make " +
                std::to_string(t.vocab_size()) + " tokens");
  }
  return t;
}

}  // namespace tg::tokenizers
