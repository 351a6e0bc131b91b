// tests/models/decode_outputs.h — what a language model writes, for tests that compare two ways
// of running the same model to the bit: a forward of a 300-position prompt, a cached decode of one
// sequence, and a cached decode of a batch of 3 (models/kv_cache.h). The ids are drawn from
// [0, vocab) by a fixed rule, so every run reads the same ones.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/causal_lm.h"
#include "models/kv_cache.h"
#include "test_util.h"

namespace tg::test {

struct DecodeOutputs {
  Tensor full;                  // a forward of the whole prompt (B=1, 300 positions)
  std::vector<Tensor> decoded;  // then each next token's logits, one sequence, with the cache
  std::vector<Tensor> batch;    // a batch of 3 sequences' prompts, then their next tokens' logits
};

inline DecodeOutputs decode_outputs(models::CausalLM& model, int64_t vocab) {
  NoGradGuard no_grad;
  DecodeOutputs out;
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < 300; ++i) prompt.push_back((i * 37 + 11) % vocab);
  const Tensor ids = from_vector(prompt, {1, 300});
  out.full = model.forward(ids);
  models::GPTCache cache;
  Tensor logits = model.forward(ids.narrow(1, 0, 20), cache);
  for (int step = 0; step < 4; ++step) {
    const Tensor next = logits.select(1, logits.size(1) - 1).argmax(-1, true);  // (1,1)
    logits = model.forward(next, cache);
    out.decoded.push_back(logits);
  }
  models::GPTCache batch_cache;
  Tensor batch = model.forward(from_vector(std::vector<int64_t>(prompt.begin(), prompt.begin() + 24), {3, 8}), batch_cache);
  out.batch.push_back(batch);
  for (int step = 0; step < 3; ++step) {
    batch = model.forward(batch.select(1, batch.size(1) - 1).argmax(-1, true), batch_cache);
    out.batch.push_back(batch);
  }
  return out;
}

inline void expect_same(const DecodeOutputs& a, const DecodeOutputs& b) {
  EXPECT_TRUE(test::same_bytes(a.full, b.full));
  ASSERT_EQ(a.decoded.size(), b.decoded.size());
  for (size_t i = 0; i < a.decoded.size(); ++i) EXPECT_TRUE(test::same_bytes(a.decoded[i], b.decoded[i])) << "step " << i;
  ASSERT_EQ(a.batch.size(), b.batch.size());
  for (size_t i = 0; i < a.batch.size(); ++i) EXPECT_TRUE(test::same_bytes(a.batch[i], b.batch[i])) << "batch step " << i;
}

}  // namespace tg::test
