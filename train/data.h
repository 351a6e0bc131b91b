// train/data.h — token ids in memory, the 90/10 split and random batches, in the order
// of the usual PyTorch training loop (so runs compare step for step):
//
//   ix = randint(0, len(data) - context - 1, (batch,), generator)
//   x  = stack([data[i : i + context]         for i in ix])     (B,T)
//   y  = stack([data[i + 1 : i + context + 1] for i in ix])     (B,T)  the next token of each x
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/tensor.h"

namespace tg::train {

// How many of n items (ids, bytes of a text, instruction examples) train: the first 90%,
// int(0.9 * n) as the PyTorch loop's int(0.9 * len(data)); the rest validate. The one 90/10 rule.
int64_t train_count(int64_t n);

struct Split {
  Tensor train, val;  // 1-d int64: the first train_count(n) ids, the rest
};
Split split_train_val(const std::vector<int64_t>& ids);

struct Batch {
  Tensor x, y;  // (B,T) int64; y is -100 (cross_entropy's ignore_index) where nothing is to be predicted
  Tensor key_padding_mask{};  // bool (B,T), true = padding (instruction batches); undefined: none
};
// Throws when data is too short for one window of context + 2 tokens (naming both lengths).
void check_split_length(const Tensor& data, int64_t context, const std::string& split_name);
// Throws as check_split_length does.
Batch get_batch(const Tensor& data, int64_t batch, int64_t context, Generator& gen, const std::string& split_name);

}  // namespace tg::train
