// models/llama.cpp — the Llama / Qwen model, in models/llama.h's order: the config, RoPE's angles,
// the attention, the SwiGLU feed-forward, the decoder layer, the stack and the head.
#include "models/llama.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
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

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error("LlamaConfig: " + what);
}

std::string positive(const char* field, int64_t value) {
  return std::string(field) + " must be positive, got " + std::to_string(value);
}

float inv_freq_at(int64_t i, int64_t head_dim, double theta);
void scale_llama3(std::vector<float>& inv, const RopeScaling& s);

bool all_finite(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

// A rope_theta or factor that passes "> 0" can still overflow float32, where RoPE's tables are
// computed (1e-300 is 0 there): the frequencies become inf, the angles and every logit NaN. The
// frequencies and the largest angle are checked as they will be computed, naming the field.
// The frequencies are monotone in i, so at most 4,097 of them, evenly spaced from the first to the
// last, are read: a config's head_dim of 2^62 costs no memory here (the weights' headers refuse it).
void require_finite_rope(const LlamaConfig& c) {
  std::vector<float> inv;
  const int64_t half = c.head_dim / 2, stride = std::max<int64_t>(1, half / 4096);
  for (int64_t i = 0; i < half; i += stride) inv.push_back(inv_freq_at(i, c.head_dim, c.rope_theta));
  if ((half - 1) % stride != 0) inv.push_back(inv_freq_at(half - 1, c.head_dim, c.rope_theta));
  const std::string theta = "rope_theta (" + nn::python_float(c.rope_theta) + ")";
  require(all_finite(inv), theta + " gives RoPE frequencies that are not finite");
  const RopeScaling& s = c.rope_scaling;
  if (s.rope_type == "llama3") {
    scale_llama3(inv, s);
    require(all_finite(inv), "rope_scaling (factor " + nn::python_float(s.factor) + ", low_freq_factor " +
                                 nn::python_float(s.low_freq_factor) + ", high_freq_factor " +
                                 nn::python_float(s.high_freq_factor) + ") gives RoPE frequencies that are not finite");
  }
  const float fastest = *std::max_element(inv.begin(), inv.end());
  const int64_t last = c.max_position_embeddings - 1;
  require(std::isfinite(fastest * static_cast<float>(last)),
          theta + " gives RoPE angles that are not finite by position " + std::to_string(last) +
              " (max_position_embeddings " + std::to_string(c.max_position_embeddings) + ")");
}

}  // namespace

void LlamaConfig::validate() const {
  require(model_type == "llama" || model_type == "qwen2" || model_type == "qwen3",
          "model_type must be llama, qwen2 or qwen3, got \"" + model_type + "\"");
  require(vocab_size > 0, positive("vocab_size", vocab_size));
  require(hidden_size > 0, positive("hidden_size", hidden_size));
  require(intermediate_size > 0, positive("intermediate_size", intermediate_size));
  require(num_hidden_layers > 0, positive("num_hidden_layers", num_hidden_layers));
  require(num_attention_heads > 0, positive("num_attention_heads", num_attention_heads));
  require(num_key_value_heads > 0, positive("num_key_value_heads", num_key_value_heads));
  require(num_attention_heads % num_key_value_heads == 0,
          "num_attention_heads (" + std::to_string(num_attention_heads) + ") must be divisible by num_key_value_heads (" +
              std::to_string(num_key_value_heads) + ")");
  require(head_dim > 0 && head_dim % 2 == 0,
          "head_dim must be positive and even (RoPE turns its halves together), got " + std::to_string(head_dim));
  require(max_position_embeddings > 0, positive("max_position_embeddings", max_position_embeddings));
  require(rms_norm_eps > 0.0, "rms_norm_eps must be positive, got " + nn::python_float(rms_norm_eps));
  require(rope_theta > 0.0, "rope_theta must be positive, got " + nn::python_float(rope_theta));
  require(attention_dropout >= 0.0 && attention_dropout < 1.0,
          "attention_dropout must be in [0, 1), got " + nn::python_float(attention_dropout));
  require(initializer_range >= 0.0, "initializer_range must be at least 0, got " + nn::python_float(initializer_range));
  const RopeScaling& s = rope_scaling;
  require(s.rope_type.empty() || s.rope_type == "llama3",
          "rope_scaling's rope_type must be llama3 (or no rope_scaling), got \"" + s.rope_type + "\"");
  if (s.rope_type == "llama3") {
    require(s.factor > 0.0, "rope_scaling's factor must be positive, got " + nn::python_float(s.factor));
    require(s.low_freq_factor > 0.0 && s.high_freq_factor > s.low_freq_factor,
            "rope_scaling needs 0 < low_freq_factor < high_freq_factor, got " + nn::python_float(s.low_freq_factor) +
                " and " + nn::python_float(s.high_freq_factor));
    require(s.original_max_position_embeddings > 0,
            positive("rope_scaling's original_max_position_embeddings", s.original_max_position_embeddings));
  }
  require_finite_rope(*this);
}

std::string LlamaConfig::class_prefix() const {
  if (model_type == "qwen2") return "Qwen2";
  if (model_type == "qwen3") return "Qwen3";
  return "Llama";
}

// --- RoPE's angles ---------------------------------------------------------------------------------
// Each step in float32, in the order of Hugging Face's _compute_default_rope_parameters and
// _compute_llama3_parameters, so the angles are theirs to the bit where float32 allows.

namespace {

// inv_freq_i = 1 / theta^(2i / hs), i < hs/2
float inv_freq_at(int64_t i, int64_t head_dim, double theta) {
  const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
  return 1.0f / std::pow(static_cast<float>(theta), exponent);
}

std::vector<float> default_inv_freq(int64_t head_dim, double theta) {
  std::vector<float> inv(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = inv_freq_at(static_cast<int64_t>(i), head_dim, theta);
  return inv;
}

// Llama 3.1's scaling: wavelengths 2 pi / inv_freq longer than original / low_freq_factor are
// stretched by factor (inv_freq / factor), those shorter than original / high_freq_factor kept,
// and those between blended: s = (original / wavelen - low) / (high - low),
// inv = (1 - s) inv / factor + s inv.
void scale_llama3(std::vector<float>& inv, const RopeScaling& s) {
  const auto old_context = static_cast<float>(s.original_max_position_embeddings);
  const auto low_freq_wavelen = static_cast<float>(static_cast<double>(s.original_max_position_embeddings) / s.low_freq_factor);
  const auto high_freq_wavelen = static_cast<float>(static_cast<double>(s.original_max_position_embeddings) / s.high_freq_factor);
  const auto factor = static_cast<float>(s.factor);
  const auto low = static_cast<float>(s.low_freq_factor);
  const auto span = static_cast<float>(s.high_freq_factor - s.low_freq_factor);
  const auto two_pi = static_cast<float>(2.0 * std::numbers::pi);
  for (float& f : inv) {
    const float wavelen = (1.0f / f) * two_pi;
    const float stretched = wavelen > low_freq_wavelen ? f / factor : f;
    const float smooth = ((1.0f / wavelen) * old_context - low) / span;
    const float blended = (1.0f - smooth) * stretched / factor + smooth * stretched;
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    f = medium ? blended : stretched;
  }
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, double theta, const RopeScaling& scaling) {
  std::vector<float> inv = default_inv_freq(head_dim, theta);
  if (scaling.rope_type == "llama3") scale_llama3(inv, scaling);
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
  Tensor context;  // (B,h,T,hs)
  if (cache && T == 1 && groups > 1) {
    // One new token after the cache (generation): its query sees every cached key, so no mask is
    // needed, and the groups query heads that share kv head j can be the rows of one block
    // against that head's keys and values: the same products as below, without repeat_kv's copy
    // of the whole cache, groups times over, at every token of every layer.
    const Tensor stacked = queries.reshape({B, num_key_value_heads, groups, head_dim});  // (B,kvh,groups,hs)
    context = nn::attend(stacked, keys, values, {.key_padding_mask = key_padding_mask, .causal = false})
                  .reshape({B, num_heads, 1, head_dim});
  } else {
    context = nn::attend(queries, repeat_kv(keys, groups), repeat_kv(values, groups),
                         {.key_padding_mask = key_padding_mask, .causal = true, .past = past,
                          .dropout_p = attention_dropout, .training = is_training()});
  }
  return o_proj->forward(context.transpose(1, 2).contiguous().view({B, T, num_heads * head_dim}));
}

// --- the feed-forward: SwiGLU ------------------------------------------------------------------------

LlamaMLP::LlamaMLP(int64_t hidden_size, int64_t intermediate_size, const std::string& prefix) : Module(prefix + "MLP") {
  gate_proj = register_module("gate_proj", std::make_shared<nn::Linear>(hidden_size, intermediate_size, false));
  up_proj = register_module("up_proj", std::make_shared<nn::Linear>(hidden_size, intermediate_size, false));
  down_proj = register_module("down_proj", std::make_shared<nn::Linear>(intermediate_size, hidden_size, false));
}

Tensor LlamaMLP::forward(const Tensor& x) {
  // the gate's silu opens or closes each of up's I features
  return down_proj->forward(silu(gate_proj->forward(x)) * up_proj->forward(x));  // (B,T,I) -> (B,T,C)
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
  if (config_.tie_word_embeddings && nn::init::SkipInitGuard::active()) {
    // weights about to be read: the head is made on the embedding's tensor, and no (V, C) matrix
    // of its own is made and dropped (593 MiB more at Qwen3-0.6B's load)
    lm_head = register_module("lm_head", std::make_shared<nn::Linear>("Linear", model->embed_tokens->weight, Tensor()));
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

namespace {

// idx must be int64 (B,T) within the context (cached positions included), a mask bool (B,T).
void check_ids(const Tensor& idx, int64_t past, int64_t context, const Tensor& key_padding_mask, const std::string& model) {
  if (idx.dim() != 2 || idx.dtype() != ScalarType::Int64) {
    throw Error(model + ": expected token ids of shape (batch, num_tokens) and dtype int64, got shape " +
                shape_str(idx.sizes()) + " and dtype " + std::string(dtype_name(idx.dtype())));
  }
  if (past + idx.size(1) > context) {
    throw Error(model + ": num_tokens (" + std::to_string(past + idx.size(1)) + (past ? ", cached ones included" : "") +
                ") exceeds max_position_embeddings (" + std::to_string(context) + ")");
  }
  if (key_padding_mask.defined() && (key_padding_mask.dtype() != kBool || key_padding_mask.sizes() != idx.sizes())) {
    throw Error(model + ": key_padding_mask must be bool of the ids' shape " + shape_str(idx.sizes()) +
                ", true = padded; got " + dtype_name(key_padding_mask.dtype()) + " of shape " +
                shape_str(key_padding_mask.sizes()));
  }
}

}  // namespace

Tensor LlamaForCausalLM::hidden_states(const Tensor& idx, const Tensor& key_padding_mask) {
  check_ids(idx, 0, context_length(), key_padding_mask, type_name());
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
  check_ids(idx, cache.length(), context_length(), Tensor(), type_name());
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
