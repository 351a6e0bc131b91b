// tokenizers/bpe_tables.h — the two lookups BPE encoding does for every chunk, as flat hash
// tables (open addressing, linear probing, power-of-two sizes kept at most half full): a lookup
// mostly touches one cache line, and adding an entry allocates nothing but, now and then, a
// table twice the size. std::unordered_map costs one allocation and one pointer chase per node
// (the two compared in docs/performance.md).
//   PairRanks   (left id, right id) -> merge index: BpeTokenizer's merges (and, as (node, byte) ->
//               node, the trie of HfTokenizer's added tokens)
//   ChunkCache  chunk bytes -> its ids: the chunks seen before, their bytes and ids kept in two
//               arenas (one string, one vector) rather than one allocation per chunk
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tg::tokenizers {

// The key of the pair (left, right) of ids (both >= 0): left in the high 32 bits.
inline uint64_t pair_key(int32_t left, int32_t right) {
  return static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32 | static_cast<uint32_t>(right);
}

class PairRanks {
 public:
  // The merge index of (left, right), or -1.
  int32_t find(int32_t left, int32_t right) const;
  // Adds (left, right) -> rank; false (and nothing changes) if the pair is there already.
  bool insert(int32_t left, int32_t right, int32_t rank);

 private:
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = -1;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // no pair of ids in [0, 2^31) has this key
  size_t slot_of(uint64_t key) const;
  void grow();

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

class ChunkCache {
 public:
  // The ids stored for chunk, if any. The span is valid until the next insert.
  std::optional<std::span<const int32_t>> find(std::string_view chunk) const;
  // Stores chunk -> ids (chunk not in the cache, not empty); returns the stored copy of ids.
  std::span<const int32_t> insert(std::string_view chunk, const std::vector<int32_t>& ids);

 private:
  struct Slot {
    uint64_t hash = 0;
    uint64_t bytes_at = 0, ids_at = 0;  // offsets into bytes_ and ids_
    uint32_t bytes_size = 0, ids_size = 0;  // bytes_size 0: an empty slot (chunks are never empty)
  };
  static uint64_t hash_of(std::string_view chunk);
  void grow();

  std::vector<Slot> slots_;
  size_t size_ = 0;
  std::string bytes_;
  std::vector<int32_t> ids_;
};

}  // namespace tg::tokenizers
