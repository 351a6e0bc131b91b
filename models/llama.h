// models/llama.h — the Llama / Qwen family of decoder models (Llama 3.2, SmolLM2, Qwen2.5,
// Qwen3): the GPT of models/gpt.h with today's blocks. The modules carry Hugging Face's names, so
// that state_dict() is a Hugging Face checkpoint's (models/hf/hf_llama.h reads and writes those folders):
//
//   LlamaForCausalLM                     (Qwen2ForCausalLM, Qwen3ForCausalLM: the same classes)
//     model.embed_tokens    Embedding(V, C)                         idx (B,T) -> (B,T,C)
//     model.layers.i        LlamaDecoderLayer, num_hidden_layers of them:
//                             x = x + self_attn(input_layernorm(x))       LlamaAttention: GQA, RoPE
//                             x = x + mlp(post_attention_layernorm(x))    LlamaMLP: SwiGLU
//     model.norm            RMSNorm(C)
//     lm_head               Linear(C, V, bias=false); tied: it is embed_tokens.weight
//
// Read top to bottom: RoPE, the attention, the MLP, the layer, the model. Beside it: the config,
// its checks and RoPE's frequencies (models/llama_config.h), the decode-only attention and the
// load-time tied head (models/llama_fast_paths.h), the folders (models/hf/hf_llama.h). Letters in
// shape comments: B batch, T tokens, C = hidden_size, V = vocab_size, h heads, kvh key/value heads,
// hs = head_dim (not always C / h: Qwen3-0.6B has C 1024, h 16, hs 128), I = intermediate_size.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/causal_lm.h"
#include "models/llama_config.h"
#include "nn/layers.h"
#include "nn/module.h"

namespace tg::models {

// No position embedding is added to x: RoPE turns each head's queries and keys by angles that
// grow with the position (the op is tg::apply_rotary_pos_emb), so q_m . k_n depends on m - n alone.
//
// The angles of RoPE: inv_freq_i = theta^(-2i/hs) for i < hs/2 (with llama3 scaling: the long
// wavelengths divided by factor, the middle ones blended), and for position p the angle
// p * inv_freq_i, used by feature i of both halves. As Hugging Face computes them: inv_freq and
// the angles in float32, cos and sin of the float32 angle.
class RotaryEmbedding {
 public:
  RotaryEmbedding(int64_t head_dim, double theta, const RopeScaling& scaling);
  // cos and sin (T, hs) of the positions past .. past+T-1, in dtype. The table of positions
  // 0..n-1 is made once and grown (doubling) when a longer one is asked for.
  std::pair<Tensor, Tensor> cos_sin(int64_t past, int64_t T, ScalarType dtype);
  Tensor inv_freq;  // (hs/2) float32

 private:
  Tensor cos_, sin_;  // (n, hs) float32
};

// Grouped-query attention (GQA) with RoPE:
//   q_proj            Linear(C, h*hs)      k_proj, v_proj  Linear(C, kvh*hs)
//   o_proj            Linear(h*hs, C)      biases: see LlamaConfig
//   q_norm, k_norm    RMSNorm(hs), Qwen3 only (QK-norm: each head's q and k, before RoPE)
// h query heads share kvh <= h key/value heads; query head j reads kv head j / (h / kvh). Only the
// kvh heads are projected and cached (models/kv_cache.h), and each is repeated h / kvh times for
// the product, as Hugging Face's repeat_kv.
class LlamaAttention : public nn::Module {
 public:
  explicit LlamaAttention(const LlamaConfig& config);
  // x (B,T,C) at positions 0..T-1, with this layer's own RoPE tables: the layer on its own
  // (gradcheck_layers, tests). The model passes one set of tables to every layer instead.
  Tensor forward(const Tensor& x) override;
  // x (B,T,C), cos and sin (T,hs) of the tokens' positions -> (B,T,C). With a cache the queries sit
  // at positions cache->length() + i and see every cached key. key_padding_mask: bool (B, past + T),
  // true = padded (undefined: none).
  Tensor forward(const Tensor& x, const Tensor& cos, const Tensor& sin, KVCache* cache = nullptr,
                 const Tensor& key_padding_mask = Tensor());
  int64_t num_heads, num_key_value_heads, head_dim;
  double attention_dropout;
  RotaryEmbedding rotary_emb;  // the config's angles, for forward(x); no state
  std::shared_ptr<nn::Linear> q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<nn::RMSNorm> q_norm, k_norm;  // nullptr unless the config has qk_norm
};

// SwiGLU: down_proj(silu(gate_proj(x)) * up_proj(x)), x (B,T,C) -> (B,T,C), hidden (B,T,I); no
// biases.
class LlamaMLP : public nn::Module {
 public:
  LlamaMLP(int64_t hidden_size, int64_t intermediate_size, const std::string& prefix = "Llama");
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<nn::Linear> gate_proj, up_proj, down_proj;
};

// x = x + self_attn(input_layernorm(x)), then x = x + mlp(post_attention_layernorm(x)); both norms
// are RMSNorm(C).
class LlamaDecoderLayer : public nn::Module {
 public:
  explicit LlamaDecoderLayer(const LlamaConfig& config);
  Tensor forward(const Tensor& x) override;  // at positions 0..T-1, with self_attn's RoPE tables
  Tensor forward(const Tensor& x, const Tensor& cos, const Tensor& sin, KVCache* cache = nullptr,
                 const Tensor& key_padding_mask = Tensor());
  std::shared_ptr<LlamaAttention> self_attn;
  std::shared_ptr<LlamaMLP> mlp;
  std::shared_ptr<nn::RMSNorm> input_layernorm, post_attention_layernorm;
  Checkpointing checkpointing = Checkpointing::none;  // applies while recording (training)

 private:
  Tensor forward_body(const Tensor& x, const Tensor& cos, const Tensor& sin, KVCache* cache,
                      const Tensor& key_padding_mask);
};

// The stack without the head: embed_tokens, the layers, the final norm.
class LlamaModel : public nn::Module {
 public:
  explicit LlamaModel(const LlamaConfig& config);
  // idx (B,T) at positions past .. past+T-1 -> norm's output (B,T,C)
  Tensor forward_from(const Tensor& idx, int64_t past, GPTCache* cache, const Tensor& key_padding_mask);
  std::shared_ptr<nn::Embedding> embed_tokens;
  std::shared_ptr<nn::ModuleList> layers;
  std::shared_ptr<nn::RMSNorm> norm;
  RotaryEmbedding rotary_emb;  // no state: not in the state_dict
  std::vector<std::shared_ptr<LlamaDecoderLayer>> decoder_layers;  // layers' children, typed
};

class LlamaForCausalLM : public CausalLM {
 public:
  // The weights drawn as Hugging Face's _init_weights: every Linear's and the Embedding's weight
  // from normal(0, initializer_range), in named_parameters() order, biases 0, norms 1.
  explicit LlamaForCausalLM(const LlamaConfig& config);
  Tensor forward(const Tensor& idx) override;                          // (B,T) -> (B,T,V)
  Tensor forward(const Tensor& idx, GPTCache& cache) override;         // the tokens after the cache's
  Tensor forward(const Tensor& idx, const Tensor& key_padding_mask) override;  // bool (B,T), true = padded
  Tensor hidden_states(const Tensor& idx, const Tensor& key_padding_mask = Tensor()) override;  // (B,T,C)
  // The mean cross entropy over the targets that are not -100 (with loss_chunk > 0 the head and
  // the loss a chunk of rows at a time), as GPTModel::loss.
  Tensor loss(const Tensor& idx, const Tensor& targets, const Tensor& key_padding_mask = Tensor(),
              int64_t loss_chunk = 0) override;
  int64_t context_length() const override { return config_.max_position_embeddings; }
  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t hidden_size() const override { return config_.hidden_size; }
  const LlamaConfig& config() const { return config_; }
  void set_checkpointing(Checkpointing mode) override;
  Checkpointing checkpointing() const override;

  std::shared_ptr<LlamaModel> model;
  std::shared_ptr<nn::Linear> lm_head;

 private:
  LlamaConfig config_;
};

}  // namespace tg::models
