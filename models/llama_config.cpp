// models/llama_config.cpp — a Llama / Qwen config's checks and RoPE's frequencies
// (models/llama_config.h).
#include "models/llama_config.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "nn/module.h"

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

// --- RoPE's frequencies ----------------------------------------------------------------------------

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

std::vector<float> rope_inv_freq(int64_t head_dim, double theta, const RopeScaling& scaling) {
  std::vector<float> inv = default_inv_freq(head_dim, theta);
  if (scaling.rope_type == "llama3") scale_llama3(inv, scaling);
  return inv;
}

}  // namespace tg::models
