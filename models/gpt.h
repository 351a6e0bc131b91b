// models/gpt.h — a small GPT (decoder-only transformer), the model the training program trains,
// with the classes, names and creation order of the book's usual PyTorch GPT (so the same seed
// gives the same weights and the state_dict moves both ways with strict=True):
//
//   GPTModel
//     tok_emb        Embedding(vocab_size, emb_dim)          idx (B,T) -> (B,T,C)
//     pos_emb        Embedding(context_length, emb_dim)      positions 0..T-1 -> (T,C)
//     drop_emb       Dropout(drop_rate)
//     trf_blocks.i   TransformerBlock, n_layers of them:
//                      x = x + drop_shortcut(att(norm1(x)))       att: CausalSelfAttention
//                      x = x + drop_shortcut(ff(norm2(x)))        ff.layers: Linear(C,4C), GELU(tanh), Linear(4C,C)
//     final_norm     LayerNorm(emb_dim, layer_norm_eps), as norm1 and norm2
//     out_head       Linear(emb_dim, vocab_size, bias=false)  (B,T,C) -> logits (B,T,V)
//
// Read top to bottom, as nanoGPT's model.py: config, attention, feed-forward, block, the model with
// its forward and loss. Shape letters: B batch, T tokens, C = emb_dim, V = vocab_size, h heads, hs = C / h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/causal_lm.h"
#include "models/kv_cache.h"
#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/lora.h"
#include "nn/module.h"

namespace tg::models {

struct GPTConfig {
  int64_t vocab_size = 0;
  int64_t context_length = 0;
  int64_t emb_dim = 0;
  int64_t n_heads = 0;
  int64_t n_layers = 0;
  double drop_rate = 0.0;
  bool qkv_bias = false;
  // GPT-2's weight tying: out_head.weight is tok_emb.weight (V,C), one tensor, listed under both
  // names in the state_dict (as PyTorch lists it) and once in parameters()
  bool tie_weights = false;
  double layer_norm_eps = 1e-5;  // every LayerNorm's (norm1, norm2, final_norm); GPT-2 has 1e-5 too

  // Throws tg::Error naming the first field that is out of range (sizes positive, emb_dim
  // divisible by n_heads, 0 <= drop_rate < 1, layer_norm_eps > 0).
  void validate() const;
};

// Checkpointing (what a block recomputes in backward) is models/causal_lm.h's; the GPT's ffn
// recomputes its pre-activation h (B,T,4C) from norm2's output (a GELU and one product per block).

// The GPT's attention: the notebooks' causal MultiHeadAttention (nn/attention.h: W_query, W_key,
// W_value, out_proj, its attend()), plus what generation and fine-tuning add:
//   cache             the new tokens' keys and values go after the cached ones, and the queries
//                     (at positions past + i) attend to all of them
//   key_padding_mask  bool (B,T), true = padded: no query sees that key
//   qkv_lora          GPT-2's fused c_attn adapted as peft does: one LoRA(C, 3C), u(x) =
//                     (alpha / r) (x A^T) B^T, whose columns [0,C), [C,2C), [2C,3C) are added
//                     to the queries, keys and values; W_query, W_key, W_value then freeze
class CausalSelfAttention : public nn::MultiHeadAttention {
 public:
  explicit CausalSelfAttention(const GPTConfig& config);
  Tensor forward(const Tensor& x) override;  // x (B,T,C) -> (B,T,C)
  Tensor forward(const Tensor& x, KVCache* cache, const Tensor& key_padding_mask);
  std::shared_ptr<nn::LoRA> qkv_lora;  // nullptr: none
  // Registers qkv_lora = LoRA(C, 3C, r, alpha) (drawing its A as peft does); once only.
  void add_qkv_lora(int64_t r, double alpha);
};

// Linear(C, 4C) -> GELU(tanh) -> Linear(4C, C), as ff.layers.0 / .1 / .2. With tg::fast_kernels()
// on, the three run as one feed_forward op (autograd/ops.h): the same numbers, and it keeps the
// pre-activation for backward but not the GELU output. A module swapped in for layers.0 or
// layers.2 (replace_module) runs as itself, the layers one by one.
class FeedForward : public nn::Module {
 public:
  explicit FeedForward(int64_t emb_dim);
  Tensor forward(const Tensor& x) override;  // x (B,T,C) -> (B,T,C)
  std::shared_ptr<nn::Sequential> layers;
  std::shared_ptr<nn::Linear> expand, project;  // the Linears made as layers.0 (C -> 4C) and layers.2 (4C -> C)
  std::shared_ptr<nn::GELU> gelu;               // layers.1
};

// Pre-LayerNorm transformer block with residual connections.
class TransformerBlock : public nn::Module {
 public:
  explicit TransformerBlock(const GPTConfig& config);
  Tensor forward(const Tensor& x) override;  // x (B,T,C) -> (B,T,C)
  // key_padding_mask: bool (B,T), true = padded (undefined: none)
  Tensor forward(const Tensor& x, KVCache* cache, const Tensor& key_padding_mask = Tensor());
  std::shared_ptr<CausalSelfAttention> att;
  std::shared_ptr<FeedForward> ff;
  std::shared_ptr<nn::LayerNorm> norm1, norm2;
  std::shared_ptr<nn::Dropout> drop_shortcut;
  Checkpointing checkpointing = Checkpointing::none;  // applies while recording (training)

 private:
  Tensor forward_body(const Tensor& x, KVCache* cache, const Tensor& key_padding_mask);
};

// The model of the tree at the top of this file. LoRA (models/lora/gpt_lora.h) adds adapters by name:
// the attention's fused-qkv update (CausalSelfAttention::qkv_lora) and LoRALinears swapped in for
// out_proj and ff.layers.0/.2 with replace_module.
class GPTModel : public CausalLM {
 public:
  explicit GPTModel(const GPTConfig& config);
  // idx (B,T) int64 token ids, T <= context_length, each in [0, vocab_size) -> logits (B,T,V)
  Tensor forward(const Tensor& idx) override;
  // Incremental decoding. idx (B,T): the tokens after the cache's; cache.length() + T <=
  // context_length -> (B,T,V). Their positions continue after cache.length(), and each layer's
  // attention reads the keys and values it cached before (models/kv_cache.h). Only under
  // NoGradGuard; models/generation/generate.h uses it.
  Tensor forward(const Tensor& idx, GPTCache& cache) override;
  // Padded batches. idx (B,T) with key_padding_mask bool (B,T), true = padded: no position attends
  // to a padded one -> logits (B,T,V). An undefined mask is the plain forward. Every layer's
  // attention masks those keys (nn/attention.h's key_padding_mask); instruction fine-tuning pads
  // examples of several lengths to the longest (train/instructions.h). Right padding under the
  // causal mask leaves the real positions' outputs as they are without it.
  Tensor forward(const Tensor& idx, const Tensor& key_padding_mask) override;
  // forward without the head: final_norm's output (B,T,C), for a loss that applies out_head
  // itself a chunk at a time (nn/chunked_loss.h). forward(idx, mask) = out_head(hidden_states(idx, mask)).
  Tensor hidden_states(const Tensor& idx, const Tensor& key_padding_mask = Tensor()) override;
  // The training loss: cross_entropy(forward(idx, mask) as (B*T,V), targets as (B*T)), its mean
  // over the targets that are not -100; with loss_chunk > 0 the head and the loss run that many
  // rows at a time (nn/chunked_loss.h), and the (B*T,V) logits are never whole in memory.
  Tensor loss(const Tensor& idx, const Tensor& targets, const Tensor& key_padding_mask = Tensor(),
              int64_t loss_chunk = 0) override;
  const GPTConfig& config() const { return config_; }
  int64_t context_length() const override { return config_.context_length; }
  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t hidden_size() const override { return config_.emb_dim; }
  // trf_blocks' children, typed
  const std::vector<std::shared_ptr<TransformerBlock>>& blocks() const { return blocks_; }
  // Every block's checkpointing (see Checkpointing); none by default. With Checkpointing::every the
  // blocks keep less for backward and run part of their forward again in backward
  // (autograd/checkpoint.h); the gradients are bit for bit the same, dropout included.
  void set_checkpointing(Checkpointing mode) override;
  Checkpointing checkpointing() const override;

  std::shared_ptr<nn::Embedding> tok_emb, pos_emb;
  std::shared_ptr<nn::Dropout> drop_emb;
  std::shared_ptr<nn::Sequential> trf_blocks;
  std::shared_ptr<nn::LayerNorm> final_norm;
  std::shared_ptr<nn::Linear> out_head;

 private:
  Tensor forward_from(const Tensor& idx, int64_t past, GPTCache* cache, const Tensor& key_padding_mask = Tensor());
  GPTConfig config_;
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;  // trf_blocks' children, typed
};

}  // namespace tg::models
