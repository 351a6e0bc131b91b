// nn/attention.h — the attention layers of the notebooks, with the book's names (W_query, W_key,
// W_value, out_proj, the buffer mask) and constructor arguments, built in the same order as the
// PyTorch classes, so the same seed gives the same weights.
//
//   scores  = queries @ keys^T                     (b, T, T), or per head (b, h, T, T)
//   causal  = scores with -inf above the diagonal (a token sees itself and earlier ones)
//   weights = softmax(scores / sqrt(d_k)), then dropout (training only)
//   context = weights @ values
//
// Read the classes in the notebook's order, SelfAttention_v1 to MultiHeadAttention, with their
// forwards in nn/attention.cpp: each writes the notebook's steps, the fused op behind one branch
// at its top. attend (at the end) is the same steps for the models: the GPT of models/gpt.h builds
// its attention on MultiHeadAttention (a KV cache for generation and GPT-2's fused-qkv LoRA
// update are its own, around attend()), and models/llama.h's grouped-query attention calls it.
#pragma once
#include <cstdint>
#include <memory>

#include "nn/layers.h"
#include "nn/module.h"

namespace tg::nn {

// Raw Parameters W_query, W_key, W_value drawn by rand (d_in, d_out); x (T, d_in).
// In every class here, keep_attention_weights = true keeps the last forward's weights in
// attention_weights (for teaching and heatmaps); off, nothing is kept.
class SelfAttention_v1 : public Module {
 public:
  SelfAttention_v1(int64_t d_in, int64_t d_out);
  Tensor forward(const Tensor& x) override;
  Tensor W_query, W_key, W_value;
  bool keep_attention_weights = false;
  Tensor attention_weights;
};

// Linear layers (bias when qkv_bias); x (T, d_in).
class SelfAttention_v2 : public Module {
 public:
  SelfAttention_v2(int64_t d_in, int64_t d_out, bool qkv_bias = false);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Linear> W_query, W_key, W_value;
  bool keep_attention_weights = false;
  Tensor attention_weights;
};

// The causal mask and dropout on the weights; x (b, T, d_in), T <= context_length.
class CausalAttention : public Module {
 public:
  CausalAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, bool qkv_bias = false);
  Tensor forward(const Tensor& x) override;
  int64_t d_out, context_length;
  std::shared_ptr<Linear> W_query, W_key, W_value;
  std::shared_ptr<Dropout> dropout;
  Tensor mask;  // (context_length, context_length): 1 above the diagonal
  bool keep_attention_weights = false;
  Tensor attention_weights;
};

// num_heads CausalAttention heads (heads.i), run one after another, their outputs concatenated.
class MultiHeadAttentionWrapper : public Module {
 public:
  MultiHeadAttentionWrapper(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, int64_t num_heads,
                            bool qkv_bias = false);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<ModuleList> heads;
};

// What MultiHeadAttention::forward(x, options) adds for a transformer beyond the notebook
// (forward(x) is forward(x, {})):
//   mha.forward(x, {.kv = encoded, .causal = false, .key_padding_mask = padded});
//
//   .kv                (b, T_k, d_in): queries come from x (b, T_q, d_in), keys and values from
//                      kv (cross-attention); undefined: from x, T_k = T_q
//   .causal            true (default): query i sees keys 0..i only; false: every key
//   .key_padding_mask  bool (b, T_k), true = padded, as PyTorch's key_padding_mask: no query
//                      sees that key; undefined: none
//
//   masked(n, i, j) = (causal and j > i) or key_padding_mask[n, j]   scores -inf where masked
//
// The causal rule is computed from the positions, the buffer's rows 0..T_q-1 and columns
// 0..T_k-1; the buffer itself is made only when read (mask(), state_dict).
// Causal with T_q != T_k is aligned at the top left, as the buffer's (T_q, T_k) corner and as
// torch 2's scaled_dot_product_attention(is_causal=True): query i sees keys 0..min(i, T_k - 1).
// Both T_q and T_k must be <= context_length.
//
// A query whose keys are all masked (every key it may see is padded) gets zero weights, so its
// context is 0 and its output is out_proj's bias: no NaN reaches the output or any gradient, in
// forward or backward. softmax itself stays PyTorch's (a row of all -inf is NaN): the layer
// leaves such a row unmasked and zeroes its weights after the softmax, as the fused
// tg::masked_scaled_softmax does (it runs with tg::fast_kernels() on, with the same bits).
struct AttentionOptions {
  Tensor kv{};                // (b, T_k, d_in); undefined: keys and values from x
  bool causal = true;         // query i sees keys 0..i only
  Tensor key_padding_mask{};  // bool (b, T_k), true = padded; undefined: nothing padded
};

// The heads split from one projection of d_out (head_dim = d_out / num_heads each), joined by
// out_proj.
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout, int64_t num_heads,
                     bool qkv_bias = false);
  Tensor forward(const Tensor& x) override;  // forward(x, {}): causal self-attention
  Tensor forward(const Tensor& x, const AttentionOptions& options);
  int64_t d_in, d_out, context_length, num_heads, head_dim;
  std::shared_ptr<Linear> W_query, W_key, W_value, out_proj;
  std::shared_ptr<Dropout> dropout;
  // The buffer "mask" (context_length, context_length), 1 above the diagonal, as the notebook
  // registers it and state_dict hands it over; made the first time it is read, not in the
  // constructor (forward computes the rows and columns it needs from the positions), so that a
  // long context costs nothing until it is used.
  Tensor mask() const { return buffer("mask"); }
  bool keep_attention_weights = false;
  Tensor attention_weights;  // (b, num_heads, T_q, T_k)

 protected:
  // nn::attend (below) with this layer's dropout, and its weights kept when keep_attention_weights.
  Tensor attend(const Tensor& queries, const Tensor& keys, const Tensor& values, const Tensor& key_padding_mask,
                bool causal, int64_t past);
  Tensor split_heads(const Tensor& t) const;  // (b, T, d_out) -> (b, h, T, hs), a view
  Tensor join_heads(const Tensor& t) const;   // (b, h, T, hs) -> (b, T, d_out)
  // Shapes of x, kv and key_padding_mask (b, past + T_k); Errors name the input and its shape.
  void check_inputs(const Tensor& x, const Tensor& kv, const Tensor& key_padding_mask, int64_t past) const;
};

// MultiHeadAttention's steps from the scores to @ values, every head at once, for the models (the
// GPT's attention, and the grouped-query attention of models/llama.h), which add cached positions:
//   weights = softmax(masked(queries @ keys^T) / sqrt(hs)), dropout, context = weights @ values
// queries (b, h, T_q, hs), keys and values (b, h, T_k, hs) -> context (b, h, T_q, hs). Query i
// sits at position past + i among the keys (past > 0: a caller with cached keys). A query that
// sees no key gets zero weights (see AttentionOptions, above).
struct AttendOptions {
  Tensor key_padding_mask{};       // bool (b, T_k), true = padded; undefined: none
  bool causal = true;              // query i sees keys 0..past + i only
  int64_t past = 0;                // the positions before the queries
  double dropout_p = 0.0;          // the weights' dropout, applied when training
  bool training = false;
  Tensor* keep_weights = nullptr;  // when given, receives the weights (b, h, T_q, T_k), detached
};
Tensor attend(const Tensor& queries, const Tensor& keys, const Tensor& values, const AttendOptions& options);

}  // namespace tg::nn
