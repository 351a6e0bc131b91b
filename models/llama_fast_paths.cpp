// models/llama_fast_paths.cpp — the Llama / Qwen model's shortcuts (models/llama_fast_paths.h).
#include "models/llama_fast_paths.h"

#include "nn/attention.h"

namespace tg::models {

Tensor attend_one_token_grouped(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const Tensor& key_padding_mask) {
  const int64_t B = queries.size(0), h = queries.size(1), hs = queries.size(3), kvh = keys.size(1);
  const Tensor stacked = queries.reshape({B, kvh, h / kvh, hs});  // (B,kvh,groups,hs): one head's queries a block
  const Tensor context = nn::attend(stacked, keys, values, {.key_padding_mask = key_padding_mask, .causal = false});
  return context.reshape({B, 1, h * hs});  // (B,kvh,groups,hs) is (B,h,hs) in memory
}

std::shared_ptr<nn::Linear> head_on_the_embedding(const nn::Embedding& embedding) {
  return std::make_shared<nn::Linear>("Linear", embedding.weight, Tensor());
}

}  // namespace tg::models
