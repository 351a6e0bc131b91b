// models/kv_cache.h — the keys and values of the positions seen so far, for incremental decoding
// (generation): each decoder layer keeps its own, and a step with one new token computes that
// token's keys and values only, then attends to all of them.
//
// One KVCache per layer: buffers of (B, kv_heads, capacity, hs) filled up to length(). They
// start empty; the first append sizes them, and they grow (doubling, at most max_length
// positions) as tokens come, so a model with a long context (Llama 3.2's 131,072 positions)
// takes memory for the tokens it has seen, not for its whole context. Only the key/value heads
// are kept: a grouped-query attention with 32 query heads and 8 kv heads keeps 8.
//
// GPTCache: one KVCache per block of a decoder model (models/gpt.h's GPTModel, models/llama.h's
// LlamaForCausalLM), and the positions they hold.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace tg::models {

class KVCache {
 public:
  int64_t length() const { return length_; }
  void clear() { length_ = 0; }
  // Keeps the first `length` positions (at most length()): a conversation that goes back to an
  // earlier point continues from there.
  void truncate(int64_t length);
  // A cache of batch 1 becomes one of batch n holding the same positions in each row (a copy), so
  // that n continuations of one prefix run as one batch (train/multiple_choice.h). An Error for a
  // cache that is empty or not of batch 1.
  void repeat_batch(int64_t n);
  // Writes keys and values (B, kvh, T, hs) after the cached positions and sets them to all of
  // them, (B, kvh, length() + T, hs): views of the buffers, no copy of the past. Under NoGradGuard
  // only. layer names the caller in errors ("MultiHeadAttention"): a cache of another batch size
  // or head shape that holds positions, and more than max_length positions, are refused.
  void append(Tensor& keys, Tensor& values, int64_t max_length, const std::string& layer);

 private:
  Tensor keys_, values_;  // (B, kvh, capacity, hs)
  int64_t length_ = 0;
};

struct GPTCache {
  std::vector<KVCache> layers;
  int64_t length() const { return layers.empty() ? 0 : layers[0].length(); }
  void clear() {
    for (KVCache& layer : layers) layer.clear();
  }
  void truncate(int64_t length) {
    for (KVCache& layer : layers) layer.truncate(length);
  }
  void repeat_batch(int64_t n) {
    for (KVCache& layer : layers) layer.repeat_batch(n);
  }
};

}  // namespace tg::models
