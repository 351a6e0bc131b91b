// models/gpt.cpp — the GPT model, in models/gpt.h's order: the config, the attention, the
// feed-forward, the block, the model (embeddings, blocks, the output head) and its loss.
#include "models/gpt.h"

#include <string>

#include "autograd/checkpoint.h"
#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/chunked_loss.h"

namespace tg::models {

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw Error("GPTConfig: " + what);
}
}  // namespace

void GPTConfig::validate() const {
  require(vocab_size > 0, "vocab_size must be positive, got " + std::to_string(vocab_size));
  require(context_length > 0, "context_length must be positive, got " + std::to_string(context_length));
  require(emb_dim > 0, "emb_dim must be positive, got " + std::to_string(emb_dim));
  require(n_heads > 0, "n_heads must be positive, got " + std::to_string(n_heads));
  require(n_layers > 0, "n_layers must be positive, got " + std::to_string(n_layers));
  require(emb_dim % n_heads == 0, "emb_dim (" + std::to_string(emb_dim) + ") must be divisible by n_heads (" +
                                      std::to_string(n_heads) + ")");
  require(drop_rate >= 0.0 && drop_rate < 1.0, "drop_rate must be in [0, 1), got " + nn::python_float(drop_rate));
  require(layer_norm_eps > 0.0, "layer_norm_eps must be positive, got " + nn::python_float(layer_norm_eps));
}

CausalSelfAttention::CausalSelfAttention(const GPTConfig& c)
    : nn::MultiHeadAttention(c.emb_dim, c.emb_dim, c.context_length, c.drop_rate, c.n_heads, c.qkv_bias) {}

void CausalSelfAttention::add_qkv_lora(int64_t r, double alpha) {
  if (qkv_lora) throw Error("MultiHeadAttention: add_qkv_lora: it has a qkv_lora already");
  qkv_lora = register_module("qkv_lora", std::make_shared<nn::LoRA>(d_in, 3 * d_out, r, alpha));
  for (const auto& projection : {W_query, W_key, W_value})
    for (auto& [name, p] : projection->named_parameters()) p.requires_grad_(false);
}

Tensor CausalSelfAttention::forward(const Tensor& x) { return forward(x, nullptr, Tensor()); }

Tensor CausalSelfAttention::forward(const Tensor& x, KVCache* cache, const Tensor& key_padding_mask) {
  const int64_t past = cache ? cache->length() : 0;
  check_inputs(x, x, key_padding_mask, past);
  Tensor keys = W_key->forward(x), queries = W_query->forward(x), values = W_value->forward(x);  // (B,T,C)
  if (qkv_lora) {  // GPT-2's c_attn output [q | k | v], peft's update added before the split
    const Tensor update = qkv_lora->forward(x);  // (B,T,3C)
    queries = queries + update.narrow(-1, 0, d_out);
    keys = keys + update.narrow(-1, d_out, d_out);
    values = values + update.narrow(-1, 2 * d_out, d_out);
  }
  keys = split_heads(keys);                          // (B,h,T,hs)
  queries = split_heads(queries);                    // (B,h,T,hs)
  values = split_heads(values);                      // (B,h,T,hs)
  if (cache) cache->append(keys, values, context_length, "MultiHeadAttention");  // now (B,h,past+T,hs)
  return out_proj->forward(join_heads(attend(queries, keys, values, key_padding_mask, /*causal=*/true, past)));
}

FeedForward::FeedForward(int64_t emb_dim) : Module("FeedForward") {
  expand = std::make_shared<nn::Linear>(emb_dim, 4 * emb_dim);
  gelu = std::make_shared<nn::GELU>("tanh");
  project = std::make_shared<nn::Linear>(4 * emb_dim, emb_dim);
  layers = register_module("layers", std::make_shared<nn::Sequential>(
                                         std::initializer_list<std::shared_ptr<nn::Module>>{expand, gelu, project}));
}

Tensor FeedForward::forward(const Tensor& x) {
  // feed_forward fuses the Linears made here; modules swapped in for them run as themselves
  // (float weights only: an int8 one, nn/quantize.h, runs through its Linear)
  const bool own_layers = (*layers)[0] == expand && (*layers)[2] == project && !expand->weight_scale.defined() &&
                          !project->weight_scale.defined();
  if (fast_kernels() && own_layers && x.dim() > 0 && x.size(-1) == expand->in_features)  // the three layers as one op, the same numbers
    return feed_forward(x, expand->weight, expand->bias, project->weight, project->bias, gelu->approximate);
  return layers->forward(x);  // Linear -> GELU -> Linear (a bad x gets Linear's message)
}

// Creation order = the PyTorch class's: att, ff, norm1, norm2, drop_shortcut.
TransformerBlock::TransformerBlock(const GPTConfig& c) : Module("TransformerBlock") {
  att = register_module("att", std::make_shared<CausalSelfAttention>(c));
  ff = register_module("ff", std::make_shared<FeedForward>(c.emb_dim));
  norm1 = register_module("norm1", std::make_shared<nn::LayerNorm>(c.emb_dim, c.layer_norm_eps));
  norm2 = register_module("norm2", std::make_shared<nn::LayerNorm>(c.emb_dim, c.layer_norm_eps));
  drop_shortcut = register_module("drop_shortcut", std::make_shared<nn::Dropout>(c.drop_rate));
}

Tensor TransformerBlock::forward(const Tensor& x) { return forward(x, nullptr); }

Tensor TransformerBlock::forward(const Tensor& x, KVCache* cache, const Tensor& key_padding_mask) {
  if (checkpointing == Checkpointing::every && !cache)  // keep x only; backward runs forward_body again
    return checkpoint([this, key_padding_mask](const Tensor& input) { return forward_body(input, nullptr, key_padding_mask); },
                      x);
  return forward_body(x, cache, key_padding_mask);
}

Tensor TransformerBlock::forward_body(const Tensor& x, KVCache* cache, const Tensor& key_padding_mask) {
  Tensor h = x + drop_shortcut->forward(att->forward(norm1->forward(x), cache, key_padding_mask));  // (B,T,C)
  Tensor normed = norm2->forward(h);                                                  // (B,T,C)
  Tensor f = checkpointing == Checkpointing::ffn  // keep normed, not h (B,T,4C); backward makes h again
                 ? checkpoint([ff = ff](const Tensor& input) { return ff->forward(input); }, normed)
                 : ff->forward(normed);
  return h + drop_shortcut->forward(f);
}

GPTModel::GPTModel(const GPTConfig& config) : CausalLM("GPTModel"), config_(config) {
  config_.validate();
  tok_emb = register_module("tok_emb", std::make_shared<nn::Embedding>(config_.vocab_size, config_.emb_dim));
  pos_emb = register_module("pos_emb", std::make_shared<nn::Embedding>(config_.context_length, config_.emb_dim));
  drop_emb = register_module("drop_emb", std::make_shared<nn::Dropout>(config_.drop_rate));
  trf_blocks = register_module("trf_blocks", std::make_shared<nn::Sequential>());
  for (int64_t i = 0; i < config_.n_layers; ++i) {
    blocks_.push_back(std::make_shared<TransformerBlock>(config_));
    trf_blocks->push_back(blocks_.back());
  }
  final_norm = register_module("final_norm", std::make_shared<nn::LayerNorm>(config_.emb_dim, config_.layer_norm_eps));
  out_head = register_module("out_head", std::make_shared<nn::Linear>(config_.emb_dim, config_.vocab_size, false));
  if (config_.tie_weights) {  // as PyTorch's `self.out_head.weight = self.tok_emb.weight`, after both are made
    out_head->set_parameter("weight", tok_emb->weight);
    out_head->weight = tok_emb->weight;
  }
}

void GPTModel::set_checkpointing(Checkpointing mode) {
  for (const auto& block : blocks_) block->checkpointing = mode;
}

Checkpointing GPTModel::checkpointing() const {
  return blocks_.empty() ? Checkpointing::none : blocks_.front()->checkpointing;
}

Tensor GPTModel::forward(const Tensor& idx) {
  return out_head->forward(forward_from(idx, 0, nullptr));  // (B,T,V)
}

Tensor GPTModel::hidden_states(const Tensor& idx, const Tensor& key_padding_mask) {
  return forward_from(idx, 0, nullptr, key_padding_mask);
}

Tensor GPTModel::forward(const Tensor& idx, GPTCache& cache) {
  if (cache.layers.empty()) cache.layers.resize(static_cast<size_t>(config_.n_layers));
  if (cache.layers.size() != static_cast<size_t>(config_.n_layers))
    throw Error("GPTModel: the cache has " + std::to_string(cache.layers.size()) + " layers, the model " +
                std::to_string(config_.n_layers));
  return out_head->forward(forward_from(idx, cache.length(), &cache));
}

Tensor GPTModel::forward(const Tensor& idx, const Tensor& key_padding_mask) {
  return out_head->forward(forward_from(idx, 0, nullptr, key_padding_mask));  // (B,T,V)
}

Tensor GPTModel::loss(const Tensor& idx, const Tensor& targets, const Tensor& key_padding_mask, int64_t loss_chunk) {
  if (loss_chunk > 0) {  // the head and the loss a chunk of rows at a time: no (B*T,V) logits
    const Tensor hidden = hidden_states(idx, key_padding_mask);  // (B,T,C)
    return nn::chunked_cross_entropy(*out_head, hidden.flatten(0, 1), targets.flatten(), loss_chunk);
  }
  const Tensor logits = forward(idx, key_padding_mask);  // (B,T,V)
  return cross_entropy(logits.flatten(0, 1), targets.flatten());
}

// The tokens of idx sit at positions past .. past+T-1 -> final_norm's output (B,T,C).
Tensor GPTModel::forward_from(const Tensor& idx, int64_t past, GPTCache* cache, const Tensor& key_padding_mask) {
  check_token_ids(idx, past, config_.context_length, "context_length", "GPTModel");
  const int64_t T = idx.size(1);
  Tensor x = tok_emb->forward(idx) + pos_emb->forward(arange(past, past + T));  // (B,T,C) + (T,C)
  x = drop_emb->forward(x);
  // With frozen embeddings (LoRA, models/lora/gpt_lora.h) x needs no gradient, and a checkpointed block
  // keeps its input only when it does (else it runs as it is): x is made to require grad, as
  // Hugging Face's enable_input_require_grads does. Its gradient, (B,T,C), is computed and dropped.
  if (checkpointing() != Checkpointing::none && grad_mode_enabled() && !x.requires_grad()) x.requires_grad_(true);
  for (size_t i = 0; i < blocks_.size(); ++i)
    x = blocks_[i]->forward(x, cache ? &cache->layers[i] : nullptr, key_padding_mask);
  return final_norm->forward(x);  // (B,T,C)
}

}  // namespace tg::models
