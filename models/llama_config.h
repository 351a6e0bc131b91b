// models/llama_config.h — what a Llama / Qwen model is made of, as config.json says it
// (models/hf/hf_llama.h reads the file), with the checks a config passes before a model is built, and
// RoPE's frequencies, which follow from it alone (Hugging Face's modeling_rope_utils).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tg::models {

// rope_scaling of config.json: none, or Llama 3.1's "llama3" stretch of the long wavelengths.
struct RopeScaling {
  std::string rope_type;  // "" (none) or "llama3"
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  bool operator==(const RopeScaling&) const = default;
};

// The model_type (llama, qwen2, qwen3) only decides the biases and the QK-norm: the forward is one.
struct LlamaConfig {
  std::string model_type = "llama";  // "llama", "qwen2" or "qwen3"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;          // C
  int64_t intermediate_size = 0;    // I, the SwiGLU's width
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;  // h
  int64_t num_key_value_heads = 0;  // kvh; divides h
  int64_t head_dim = 0;             // hs
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool qkv_bias = false;     // q_proj, k_proj, v_proj have biases (Qwen2; attention_bias in Llama's and Qwen3's)
  bool o_bias = false;       // o_proj has one (attention_bias in Llama's and Qwen3's)
  bool qk_norm = false;      // Qwen3's q_norm and k_norm
  bool tie_word_embeddings = false;
  double attention_dropout = 0.0;  // on the attention weights, when training
  double initializer_range = 0.02;  // the weights' std at creation (Hugging Face's _init_weights)

  // Throws tg::Error naming the first field that is out of range.
  void validate() const;
  // "Llama", "Qwen2", "Qwen3": the prefix of the modules' printed names.
  std::string class_prefix() const;
};

// RoPE's inverse frequencies inv_freq_i = theta^(-2i/hs), i < hs/2, with llama3 scaling applied
// (the long wavelengths divided by factor, the middle ones blended): each step in float32, in the
// order of Hugging Face's _compute_default_rope_parameters and _compute_llama3_parameters, so they
// are theirs to the bit where float32 allows.
std::vector<float> rope_inv_freq(int64_t head_dim, double theta, const RopeScaling& scaling);

}  // namespace tg::models
