// nn/chunked_loss.h — a language model's head and its loss, a chunk of rows at a time.
//
//   loss = chunked_cross_entropy(head, hidden, targets, chunk_rows)
//
// is cross_entropy(head.forward(hidden), targets) (the mean over the rows whose target is not
// ignore_index), with the same gradients up to float32 rounding, but the (N, V) logits are never
// whole in memory: each chunk of rows is a checkpoint. Read autograd/checkpoint.h first, then
// nn/chunked_loss.cpp. Letters: N rows (B*T), C width, V vocabulary.
#pragma once
#include <cstdint>

#include "autograd/tensor.h"
#include "nn/layers.h"

namespace tg::nn {

// hidden (N, C), targets (N) int64, chunk_rows > 0 -> 0-d loss:
//
//   loss = (sum over chunks k of  cross_entropy(head(hidden[k]), targets[k], "sum")) / count
//
// Each chunk's forward keeps only its rows of hidden, and its backward makes that chunk's logits
// again and backpropagates through them. For GPT-2 at T = 1024 the logits, their softmax and
// their gradient are 3 x 206 MB; in chunks of 128 rows, 3 x 26 MB. The price: the head's product
// runs once more in backward (measured in docs/performance.md).
//
// It differs from the plain composition in the order of some float32 sums (the loss adds up per
// chunk; the head's weight gradient adds up chunk by chunk), so the two agree to rounding, not
// bit for bit.
Tensor chunked_cross_entropy(Linear& head, const Tensor& hidden, const Tensor& targets, int64_t chunk_rows,
                             int64_t ignore_index = -100);

}  // namespace tg::nn
