// models/causal_lm.h — what every decoder-only language model of tapegrad offers: the GPT of
// models/gpt.h and the Llama / Qwen family of models/llama.h. Generation (models/generate.h)
// takes any of them.
//
//   forward(idx)          idx (B,T) int64 token ids -> logits (B,T,V)
//   forward(idx, cache)   the tokens after the cache's (B,T) -> logits (B,T,V); each layer's keys
//                         and values are appended to its KVCache (models/kv_cache.h). Under
//                         NoGradGuard only.
//   context_length()      the most positions a forward may see
//   vocab_size()          V
#pragma once
#include <cstdint>

#include "models/kv_cache.h"
#include "nn/module.h"

namespace tg::models {

class CausalLM : public nn::Module {
 public:
  using nn::Module::Module;
  using nn::Module::forward;
  virtual Tensor forward(const Tensor& idx, GPTCache& cache) = 0;
  virtual int64_t context_length() const = 0;
  virtual int64_t vocab_size() const = 0;
};

}  // namespace tg::models
