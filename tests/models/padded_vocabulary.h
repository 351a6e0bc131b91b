// tests/models/padded_vocabulary.h — the tiny Qwen3 the chat and generate tests share, and its
// vocabulary padded past the tokenizer's (as Qwen2.5's and Qwen3's real checkpoints are, 151,936
// ids for 151,669 tokens) with those ids made the likeliest: the tests that check such ids are
// never sampled need them to win.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>

#include "autograd/tape.h"
#include "models/llama.h"

namespace tg::test {

// A tiny Qwen3 (width 8, 2 heads sharing 1 key/value head of 4, QK-norm) over vocab_size ids.
inline models::LlamaConfig tiny_qwen3_config(int64_t vocab_size, int64_t context, int64_t layers) {
  models::LlamaConfig c;
  c.model_type = "qwen3";
  c.vocab_size = vocab_size;
  c.hidden_size = 8;
  c.intermediate_size = 16;
  c.num_hidden_layers = layers;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.head_dim = 4;
  c.max_position_embeddings = context;
  c.qk_norm = true;
  return c;
}

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
