// tokenizers/bpe_merge.h — BPE's merge step on one chunk, for any table of merges: the adjacent
// pair of lowest rank is joined into its token, then the next, until no adjacent pair is a merge.
// Ties of rank (the same pair twice) go left first. This is the order of tiktoken and of Hugging
// Face's tokenizers (its Word::merge_all), and, for merges that only join tokens made before them,
// of GPT-2's encoder.py (every occurrence of the lowest pair, left to right, then the next pair).
//
// In O(n log n) rather than O(n^2): the ids as a linked list and a heap of (rank, position) for
// each adjacent pair that is a merge, lowest rank first, then leftmost. An entry whose pair was
// taken apart by an earlier merge is stale (its two ids are no longer that pair), and skipped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <algorithm>
#include <utility>
#include <vector>

namespace tg::tokenizers {

// ids: the chunk's tokens before any merge (its bytes' ids), replaced by the merged ones.
// rank_of(left, right): the pair's rank, or -1 when it is no merge. made_by(rank): the id of the
// token that merge makes. The list and the heap live in buffers kept per thread, so that the
// many short chunks of a text cost no allocation each.
template <class RankOf, class MadeBy>
void merge_lowest_rank_first(std::vector<int32_t>& ids, const RankOf& rank_of, const MadeBy& made_by) {
  using Entry = std::pair<int32_t, uint32_t>;  // (rank, position of the pair's left id)
  thread_local std::vector<uint32_t> prev, next;
  thread_local std::vector<Entry> heap;  // a min-heap through std::greater
  const uint32_t n = static_cast<uint32_t>(ids.size()), none = UINT32_MAX;  // next == n: the end
  prev.resize(n);
  next.resize(n);
  heap.clear();
  for (uint32_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? none : i - 1;
    next[i] = i + 1;
  }
  auto push_pair_at = [&](uint32_t left) {
    if (next[left] >= n) return;
    const int32_t r = rank_of(ids[left], ids[next[left]]);
    if (r < 0) return;
    heap.push_back({r, left});
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push_pair_at(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const auto [rank, left] = heap.back();
    heap.pop_back();
    const uint32_t right = next[left];
    if (ids[left] < 0 || right >= n || rank_of(ids[left], ids[right]) != rank) continue;  // stale
    ids[left] = made_by(rank);  // the pair becomes its left node; the right node leaves the list
    ids[right] = -1;            // (so that its own stale entries never match)
    next[left] = next[right];
    if (next[right] < n) prev[next[right]] = left;
    if (prev[left] != none) push_pair_at(prev[left]);
    push_pair_at(left);
  }
  size_t kept = 0;
  for (uint32_t i = 0; i < n; i = next[i]) ids[kept++] = ids[i];
  ids.resize(kept);
}

}  // namespace tg::tokenizers
