// models/llama.cpp — the Llama / Qwen model, in models/llama.h's order: the config, RoPE's angles,
// the attention, the SwiGLU feed-forward, the decoder layer, the stack and the head.
#include "models/llama.h"
#include "models/llama_fast_paths.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/checkpoint.h"
#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/attention.h"
#include "nn/chunked_loss.h"
#include "nn/init.h"

namespace tg::models {

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, double theta, const RopeScaling& scaling) {
  const std::vector<float> inv = rope_inv_freq(head_dim, theta, scaling);
  inv_freq = empty({static_cast<int64_t>(inv.size())});
  std::copy(inv.begin(), inv.end(), inv_freq.data_ptr<float>());
}

std::pair<Tensor, Tensor> RotaryEmbedding::cos_sin(int64_t past, int64_t T, ScalarType dtype) {
  const int64_t half = inv_freq.size(0), hs = 2 * half;
  const int64_t have = cos_.defined() ? cos_.size(0) : 0;
  if (past + T > have) {  // the table of positions 0..n-1: angle p * inv_freq_i in both halves
    int64_t n = std::max<int64_t>(64, have);
    while (n < past + T) n *= 2;
    cos_ = empty({n, hs});
    sin_ = empty({n, hs});
    float* cos_table = cos_.data_ptr<float>();
    float* sin_table = sin_.data_ptr<float>();
    const float* inv = inv_freq.data_ptr<float>();
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t i = 0; i < half; ++i) {
        const float angle = inv[i] * static_cast<float>(p);  // float32, as Hugging Face's product
        cos_table[p * hs + i] = cos_table[p * hs + half + i] = std::cos(angle);
        sin_table[p * hs + i] = sin_table[p * hs + half + i] = std::sin(angle);
      }
    }
  }
  return {cos_.narrow(0, past, T).to(dtype), sin_.narrow(0, past, T).to(dtype)};
}

// --- the attention ---------------------------------------------------------------------------------

LlamaAttention::LlamaAttention(const LlamaConfig& c)
    : Module(c.class_prefix() + "Attention"),
      num_heads(c.num_attention_heads),
      num_key_value_heads(c.num_key_value_heads),
      head_dim(c.head_dim),
      attention_dropout(c.attention_dropout),
      rotary_emb(c.head_dim, c.rope_theta, c.rope_scaling) {
  const int64_t C = c.hidden_size;
  q_proj = register_module("q_proj", std::make_shared<nn::Linear>(C, num_heads * head_dim, c.qkv_bias));
  k_proj = register_module("k_proj", std::make_shared<nn::Linear>(C, num_key_value_heads * head_dim, c.qkv_bias));
  v_proj = register_module("v_proj", std::make_shared<nn::Linear>(C, num_key_value_heads * head_dim, c.qkv_bias));
  o_proj = register_module("o_proj", std::make_shared<nn::Linear>(num_heads * head_dim, C, c.o_bias));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", std::make_shared<nn::RMSNorm>(head_dim, c.rms_norm_eps));
    k_norm = register_module("k_norm", std::make_shared<nn::RMSNorm>(head_dim, c.rms_norm_eps));
  }
}

namespace {

// (B, kvh, S, hs) -> (B, kvh * groups, S, hs): kv head j repeated for query heads j*groups ..
// (j+1)*groups - 1, as Hugging Face's repeat_kv.
Tensor repeat_kv(const Tensor& t, int64_t groups) {
  if (groups == 1) return t;
  const int64_t B = t.size(0), kvh = t.size(1), S = t.size(2), hs = t.size(3);
  return t.unsqueeze(2).expand({B, kvh, groups, S, hs}).reshape({B, kvh * groups, S, hs});
}

}  // namespace

Tensor LlamaAttention::forward(const Tensor& x) {
  if (x.dim() != 3) throw Error(type_name() + ": expected x of shape (B, T, C), got " + shape_str(x.sizes()));
  const auto [cos, sin] = rotary_emb.cos_sin(0, x.size(1), x.dtype());
  return forward(x, cos, sin);
}

Tensor LlamaAttention::forward(const Tensor& x, const Tensor& cos, const Tensor& sin, KVCache* cache,
                               const Tensor& key_padding_mask) {
  const int64_t B = x.size(0), T = x.size(1), past = cache ? cache->length() : 0;
  Tensor queries = q_proj->forward(x).view({B, T, num_heads, head_dim});         // (B,T,h,hs)
  Tensor keys = k_proj->forward(x).view({B, T, num_key_value_heads, head_dim});  // (B,T,kvh,hs)
  Tensor values = v_proj->forward(x).view({B, T, num_key_value_heads, head_dim});
  if (q_norm) {  // Qwen3's QK-norm: each head's vector to a root mean square of one (times the weight)
    queries = q_norm->forward(queries);
    keys = k_norm->forward(keys);
  }
  queries = apply_rotary_pos_emb(queries.transpose(1, 2), cos, sin);  // (B,h,T,hs)
  keys = apply_rotary_pos_emb(keys.transpose(1, 2), cos, sin);        // (B,kvh,T,hs)
  values = values.transpose(1, 2);                                    // (B,kvh,T,hs)
  if (cache) cache->append(keys, values, std::numeric_limits<int64_t>::max(), type_name());  // (B,kvh,past+T,hs)
  const int64_t groups = num_heads / num_key_value_heads;
  if (cache && T == 1 && groups > 1)  // decoding one token: the same products, without repeat_kv's copies
    return o_proj->forward(attend_one_token_grouped(queries, keys, values, key_padding_mask));
  const Tensor context = nn::attend(queries, repeat_kv(keys, groups), repeat_kv(values, groups),  // (B,h,T,hs)
                                    {.key_padding_mask = key_padding_mask, .causal = true, .past = past,
                                     .dropout_p = attention_dropout, .training = is_training()});
  return o_proj->forward(context.transpose(1, 2).contiguous().view({B, T, num_heads * head_dim}));
}

// --- the feed-forward: SwiGLU ------------------------------------------------------------------------

LlamaMLP::LlamaMLP(int64_t hidden_size, int64_t intermediate_size, const std::string& prefix) : Module(prefix + "MLP") {
  gate_proj = register_module("gate_proj", std::make_shared<nn::Linear>(hidden_size, intermediate_size, false));
  up_proj = register_module("up_proj", std::make_shared<nn::Linear>(hidden_size, intermediate_size, false));
  down_proj = register_module("down_proj", std::make_shared<nn::Linear>(intermediate_size, hidden_size, false));
}

Tensor LlamaMLP::forward(const Tensor& x) {
  const Tensor gate = gate_proj->forward(x), up = up_proj->forward(x);  // (B,T,I) each
  if (fast_kernels()) return down_proj->forward(swiglu(gate, up));      // the line below as one op, the same bits
  // the gate's silu opens or closes each of up's I features
  return down_proj->forward(silu(gate) * up);  // (B,T,I) -> (B,T,C)
}

// --- the decoder layer -------------------------------------------------------------------------------

// Creation order = Hugging Face's: self_attn, mlp, input_layernorm, post_attention_layernorm.
LlamaDecoderLayer::LlamaDecoderLayer(const LlamaConfig& c) : Module(c.class_prefix() + "DecoderLayer") {
  self_attn = register_module("self_attn", std::make_shared<LlamaAttention>(c));
  mlp = register_module("mlp", std::make_shared<LlamaMLP>(c.hidden_size, c.intermediate_size, c.class_prefix()));
  input_layernorm = register_module("input_layernorm", std::make_shared<nn::RMSNorm>(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", std::make_shared<nn::RMSNorm>(c.hidden_size, c.rms_norm_eps));
}

Tensor LlamaDecoderLayer::forward(const Tensor& x) {
  if (x.dim() != 3) throw Error(type_name() + ": expected x of shape (B, T, C), got " + shape_str(x.sizes()));
  const auto [cos, sin] = self_attn->rotary_emb.cos_sin(0, x.size(1), x.dtype());
  return forward(x, cos, sin);
}

Tensor LlamaDecoderLayer::forward(const Tensor& x, const Tensor& cos, const Tensor& sin, KVCache* cache,
                                  const Tensor& key_padding_mask) {
  if (checkpointing == Checkpointing::every && !cache)  // keep x only; backward runs forward_body again
    return checkpoint(
        [this, cos, sin, key_padding_mask](const Tensor& input) {
          return forward_body(input, cos, sin, nullptr, key_padding_mask);
        },
        x);
  return forward_body(x, cos, sin, cache, key_padding_mask);
}

Tensor LlamaDecoderLayer::forward_body(const Tensor& x, const Tensor& cos, const Tensor& sin, KVCache* cache,
                                       const Tensor& key_padding_mask) {
  const Tensor h = x + self_attn->forward(input_layernorm->forward(x), cos, sin, cache, key_padding_mask);  // (B,T,C)
  const Tensor normed = post_attention_layernorm->forward(h);                                            // (B,T,C)
  const Tensor f = checkpointing == Checkpointing::ffn  // keep normed, not the (B,T,I) gate and up
                       ? checkpoint([mlp = mlp](const Tensor& input) { return mlp->forward(input); }, normed)
                       : mlp->forward(normed);
  return h + f;
}

// --- the stack and the head ----------------------------------------------------------------------------

LlamaModel::LlamaModel(const LlamaConfig& c)
    : Module(c.class_prefix() + "Model"), rotary_emb(c.head_dim, c.rope_theta, c.rope_scaling) {
  embed_tokens = register_module("embed_tokens", std::make_shared<nn::Embedding>(c.vocab_size, c.hidden_size));
  layers = register_module("layers", std::make_shared<nn::ModuleList>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    decoder_layers.push_back(std::make_shared<LlamaDecoderLayer>(c));
    layers->push_back(decoder_layers.back());
  }
  norm = register_module("norm", std::make_shared<nn::RMSNorm>(c.hidden_size, c.rms_norm_eps));
}

Tensor LlamaModel::forward_from(const Tensor& idx, int64_t past, GPTCache* cache, const Tensor& key_padding_mask) {
  Tensor x = embed_tokens->forward(idx);  // (B,T,C)
  const auto [cos, sin] = rotary_emb.cos_sin(past, idx.size(1), x.dtype());  // (T,hs) each
  // frozen embeddings (LoRA) with checkpointed layers: x must require grad (see GPTModel's forward_from)
  const bool checkpointed = !decoder_layers.empty() && decoder_layers.front()->checkpointing != Checkpointing::none;
  if (checkpointed && grad_mode_enabled() && !x.requires_grad()) x.requires_grad_(true);
  for (size_t i = 0; i < decoder_layers.size(); ++i)
    x = decoder_layers[i]->forward(x, cos, sin, cache ? &cache->layers[i] : nullptr, key_padding_mask);
  return norm->forward(x);  // (B,T,C)
}

LlamaForCausalLM::LlamaForCausalLM(const LlamaConfig& config)
    : CausalLM(config.class_prefix() + "ForCausalLM"), config_(config) {
  config_.validate();
  model = register_module("model", std::make_shared<LlamaModel>(config_));
  if (config_.tie_word_embeddings && nn::init::SkipInitGuard::active()) {  // weights about to be read
    lm_head = register_module("lm_head", head_on_the_embedding(*model->embed_tokens));
  } else {
    // as Hugging Face builds it: nn.Linear draws its own weight (those draws come before the
    // rest), which a tied model then replaces by the embedding's, one tensor under both names
    lm_head = register_module("lm_head", std::make_shared<nn::Linear>(config_.hidden_size, config_.vocab_size, false));
    if (config_.tie_word_embeddings) {
      lm_head->set_parameter("weight", model->embed_tokens->weight);
      lm_head->weight = model->embed_tokens->weight;
    }
  }
  NoGradGuard no_grad;  // Hugging Face's _init_weights, in named_parameters() order
  for (auto& [name, p] : named_parameters()) {
    const bool norm = name.ends_with("norm.weight") || name.ends_with("layernorm.weight");
    if (norm) p.fill_(1.0);
    else if (name.ends_with(".bias")) p.zero_();
    else nn::init::normal_(p, 0.0, config_.initializer_range);  // nothing drawn under SkipInitGuard
  }
}

void LlamaForCausalLM::set_checkpointing(Checkpointing mode) {
  for (const auto& layer : model->decoder_layers) layer->checkpointing = mode;
}

Checkpointing LlamaForCausalLM::checkpointing() const {
  return model->decoder_layers.empty() ? Checkpointing::none : model->decoder_layers.front()->checkpointing;
}

Tensor LlamaForCausalLM::hidden_states(const Tensor& idx, const Tensor& key_padding_mask) {
  check_token_ids(idx, 0, context_length(), "max_position_embeddings", type_name(), key_padding_mask);
  return model->forward_from(idx, 0, nullptr, key_padding_mask);
}

Tensor LlamaForCausalLM::forward(const Tensor& idx) { return lm_head->forward(hidden_states(idx)); }

Tensor LlamaForCausalLM::forward(const Tensor& idx, const Tensor& key_padding_mask) {
  return lm_head->forward(hidden_states(idx, key_padding_mask));
}

Tensor LlamaForCausalLM::forward(const Tensor& idx, GPTCache& cache) {
  if (cache.layers.empty()) cache.layers.resize(model->decoder_layers.size());
  if (cache.layers.size() != model->decoder_layers.size())
    throw Error(type_name() + ": the cache has " + std::to_string(cache.layers.size()) + " layers, the model " +
                std::to_string(model->decoder_layers.size()));
  check_token_ids(idx, cache.length(), context_length(), "max_position_embeddings", type_name());
  return lm_head->forward(model->forward_from(idx, cache.length(), &cache, Tensor()));
}

Tensor LlamaForCausalLM::loss(const Tensor& idx, const Tensor& targets, const Tensor& key_padding_mask,
                              int64_t loss_chunk) {
  if (loss_chunk > 0) {  // the head and the loss a chunk of rows at a time: no (B*T,V) logits
    const Tensor hidden = hidden_states(idx, key_padding_mask);  // (B,T,C)
    return nn::chunked_cross_entropy(*lm_head, hidden.flatten(0, 1), targets.flatten(), loss_chunk);
  }
  return cross_entropy(forward(idx, key_padding_mask).flatten(0, 1), targets.flatten());
}

}  // namespace tg::models
