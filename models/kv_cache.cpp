// models/kv_cache.cpp — KVCache::append: a write after the cached positions, growing the
// buffers by doubling when they are full; repeat_batch: one prefix's cache for n rows.
#include "models/kv_cache.h"

#include <algorithm>

#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg::models {

namespace {
constexpr int64_t kFirstCapacity = 64;  // positions; then doubled as needed
}  // namespace

void KVCache::truncate(int64_t length) {
  if (length < 0 || length > length_)
    throw Error("KVCache: cannot keep " + std::to_string(length) + " positions of " + std::to_string(length_));
  length_ = length;
}

void KVCache::repeat_batch(int64_t n) {
  if (!keys_.defined() || length_ == 0 || keys_.size(0) != 1 || n < 1)
    throw Error("KVCache: repeat_batch(" + std::to_string(n) + ") needs a cache of batch 1 holding positions");
  keys_ = keys_.expand({n, -1, -1, -1}).contiguous();  // (n, kvh, capacity, hs)
  values_ = values_.expand({n, -1, -1, -1}).contiguous();
}

void KVCache::append(Tensor& keys, Tensor& values, int64_t max_length, const std::string& layer) {
  if (grad_mode_enabled()) throw Error(layer + ": a KVCache is for generation; use it under tg::NoGradGuard");
  const int64_t b = keys.size(0), heads = keys.size(1), T = keys.size(2), hs = keys.size(3), past = length_;
  const bool same_kind = keys_.defined() && keys_.size(0) == b && keys_.size(1) == heads && keys_.size(3) == hs &&
                         keys_.dtype() == keys.dtype();
  if (!same_kind && past > 0) throw Error(layer + ": the KVCache holds another batch; clear() it first");
  if (past + T > max_length) {
    throw Error(layer + ": the KVCache holds " + std::to_string(past) + " positions; " + std::to_string(T) +
                " more exceed context_length (" + std::to_string(max_length) + ")");
  }
  const int64_t capacity = same_kind ? keys_.size(2) : 0;
  if (past + T > capacity) {  // a new buffer, the cached positions copied over
    int64_t grown = std::max(kFirstCapacity, capacity);
    while (grown < past + T) grown *= 2;
    grown = std::min(grown, max_length);
    Tensor new_keys = zeros({b, heads, grown, hs}, keys.dtype()), new_values = zeros({b, heads, grown, hs}, keys.dtype());
    if (past > 0) {
      new_keys.narrow(2, 0, past).copy_(keys_.narrow(2, 0, past));
      new_values.narrow(2, 0, past).copy_(values_.narrow(2, 0, past));
    }
    keys_ = new_keys;
    values_ = new_values;
  }
  keys_.narrow(2, past, T).copy_(keys);
  values_.narrow(2, past, T).copy_(values);
  length_ = past + T;
  keys = keys_.narrow(2, 0, length_);
  values = values_.narrow(2, 0, length_);
}

}  // namespace tg::models
