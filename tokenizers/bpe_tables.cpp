// tokenizers/bpe_tables.cpp — PairRanks and ChunkCache (bpe_tables.h): probe from the slot
// the hash picks, one slot further each time, until the key or an empty slot.
#include "tokenizers/bpe_tables.h"

#include <functional>

namespace tg::tokenizers {

namespace {

// Fibonacci hashing: the multiply spreads keys that differ in few bits over the whole word.
uint64_t mix(uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }

}  // namespace

// --- PairRanks -----------------------------------------------------------------------------------

size_t PairRanks::slot_of(uint64_t key) const {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(mix(key) >> 32) & mask;
  while (slots_[i].key != key && slots_[i].key != kEmpty) i = (i + 1) & mask;
  return i;
}

int32_t PairRanks::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return -1;
  return slots_[slot_of(pair_key(left, right))].rank;  // an empty slot's rank is -1
}

bool PairRanks::insert(int32_t left, int32_t right, int32_t rank) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const uint64_t key = pair_key(left, right);
  Slot& slot = slots_[slot_of(key)];
  if (slot.key == key) return false;
  slot = {key, rank};
  ++size_;
  return true;
}

void PairRanks::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
  for (const Slot& s : old) {
    if (s.key != kEmpty) slots_[slot_of(s.key)] = s;
  }
}

// --- ChunkCache ----------------------------------------------------------------------------------

uint64_t ChunkCache::hash_of(std::string_view chunk) { return mix(std::hash<std::string_view>{}(chunk)); }

std::optional<std::span<const int32_t>> ChunkCache::find(std::string_view chunk) const {
  if (slots_.empty()) return std::nullopt;
  const uint64_t hash = hash_of(chunk);
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(hash >> 32) & mask; slots_[i].bytes_size != 0; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.hash == hash && std::string_view(bytes_).substr(s.bytes_at, s.bytes_size) == chunk) {
      return std::span<const int32_t>(ids_.data() + s.ids_at, s.ids_size);
    }
  }
  return std::nullopt;
}

std::span<const int32_t> ChunkCache::insert(std::string_view chunk, const std::vector<int32_t>& ids) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  const uint64_t hash = hash_of(chunk);
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash >> 32) & mask;
  while (slots_[i].bytes_size != 0) i = (i + 1) & mask;
  slots_[i] = {hash, bytes_.size(), ids_.size(), static_cast<uint32_t>(chunk.size()), static_cast<uint32_t>(ids.size())};
  bytes_.append(chunk);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ++size_;
  return std::span<const int32_t>(ids_.data() + slots_[i].ids_at, ids.size());
}

void ChunkCache::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : 2 * old.size(), Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.bytes_size == 0) continue;
    size_t i = static_cast<size_t>(s.hash >> 32) & mask;
    while (slots_[i].bytes_size != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace tg::tokenizers
