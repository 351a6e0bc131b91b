// tests/models/padded_vocabulary.h — a model whose vocabulary is padded past its tokenizer's (as
// Qwen2.5's and Qwen3's real checkpoints are, 151,936 ids for 151,669 tokens), made to prefer the
// padded ids: the tests that check those ids are never sampled (chat, generate) need them likeliest.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>

#include "autograd/tape.h"
#include "models/llama.h"

namespace tg::test {

// The head's rows past `first` become +-100 along each axis of the normed hidden state (whose
// root mean square is 1, so some axis is at least 1): one of those ids outscores every real one
// by about 100, whatever the input. The real rows are scaled down to keep their logits small.
inline void bias_toward_padding(models::LlamaForCausalLM& model, int64_t first) {
  NoGradGuard no_grad;
  Tensor w = model.lm_head->weight;  // (V, C)
  const int64_t C = w.size(1);
  ASSERT_GE(w.size(0) - first, 2 * C);
  w.mul_(0.01);
  for (int64_t c = 0; c < C; ++c) {
    w.select(0, first + 2 * c).select(0, c).fill_(100.0);
    w.select(0, first + 2 * c + 1).select(0, c).fill_(-100.0);
  }
}

}  // namespace tg::test
