// models/llama_fast_paths.h — two shortcuts of the Llama / Qwen model (models/llama.cpp) that give
// the same numbers as its plain steps and save time or memory: read the model first. Each is
// called from one visible branch there.
#pragma once
#include <memory>

#include "autograd/tensor.h"
#include "nn/layers.h"

namespace tg::models {

// Decoding one token after the cache with grouped-query attention: queries (B,h,1,hs), the cache's
// keys and values (B,kvh,S,hs), h = kvh * groups -> the token's context (B,1,h*hs), ready for
// o_proj. The token sees every cached key, so no causal mask is needed, and the groups query heads
// that share kv head j are the rows of one block against that head's keys and values: the same
// products as repeat_kv and one attention over h heads, without repeat_kv's copy of the whole
// cache, groups times over, at every token of every layer.
Tensor attend_one_token_grouped(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                const Tensor& key_padding_mask);

// A tied output head made on the embedding's own weight (V, C), for a model whose weights are
// about to be read (nn::init::SkipInitGuard): no (V, C) matrix of its own is drawn and dropped,
// which at Qwen3-0.6B's load would be 593 MiB more at the peak.
std::shared_ptr<nn::Linear> head_on_the_embedding(const nn::Embedding& embedding);

}  // namespace tg::models
