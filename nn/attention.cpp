// nn/attention.cpp — the attention layers: each forward is the notebook's, step by step.
#include "nn/attention.h"

#include <cmath>

#include "autograd/ops.h"

namespace tg::nn {

namespace {

// weights = softmax(scores / sqrt(d_k)) along the last dim
Tensor scaled_softmax(const Tensor& scores, int64_t d_k) {
  return softmax(scores / std::sqrt(static_cast<double>(d_k)), -1);
}

// x must be (b, T, d_in) with T <= context_length.
void check_batch_input(const Tensor& x, int64_t d_in, int64_t context_length, const char* layer) {
  if (x.dim() != 3 || x.size(2) != d_in) {
    throw Error(std::string(layer) + ": expected input of shape (b, num_tokens, " + std::to_string(d_in) + "), got " +
                shape_str(x.sizes()));
  }
  if (x.size(1) > context_length) {
    throw Error(std::string(layer) + ": num_tokens (" + std::to_string(x.size(1)) + ") exceeds context_length (" +
                std::to_string(context_length) + ")");
  }
}

// The mask's top-left (T, T) corner as bool: true above the diagonal.
Tensor causal_mask(const Tensor& mask, int64_t T) { return mask.narrow(0, 0, T).narrow(1, 0, T) == 1.0; }

}  // namespace

SelfAttention_v1::SelfAttention_v1(int64_t d_in, int64_t d_out) : Module("SelfAttention_v1") {
  W_query = register_parameter("W_query", rand({d_in, d_out}));
  W_key = register_parameter("W_key", rand({d_in, d_out}));
  W_value = register_parameter("W_value", rand({d_in, d_out}));
}

Tensor SelfAttention_v1::forward(const Tensor& x) {
  Tensor keys = x.matmul(W_key);       // (T, d_out)
  Tensor queries = x.matmul(W_query);  // (T, d_out)
  Tensor values = x.matmul(W_value);   // (T, d_out)
  Tensor weights = scaled_softmax(queries.matmul(keys.t()), keys.size(-1));  // (T, T)
  if (keep_attention_weights) attention_weights = weights.detach();
  return weights.matmul(values);
}

SelfAttention_v2::SelfAttention_v2(int64_t d_in, int64_t d_out, bool qkv_bias) : Module("SelfAttention_v2") {
  W_query = register_module("W_query", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_key = register_module("W_key", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_value = register_module("W_value", std::make_shared<Linear>(d_in, d_out, qkv_bias));
}

Tensor SelfAttention_v2::forward(const Tensor& x) {
  Tensor keys = W_key->forward(x);
  Tensor queries = W_query->forward(x);
  Tensor values = W_value->forward(x);
  Tensor weights = scaled_softmax(queries.matmul(keys.mT()), keys.size(-1));
  if (keep_attention_weights) attention_weights = weights.detach();
  return weights.matmul(values);
}

CausalAttention::CausalAttention(int64_t d_in, int64_t d_out_, int64_t context_length_, double dropout_p, bool qkv_bias)
    : Module("CausalAttention"), d_out(d_out_), context_length(context_length_) {
  W_query = register_module("W_query", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_key = register_module("W_key", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_value = register_module("W_value", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p));
  mask = register_buffer("mask", triu(ones({context_length, context_length}), 1));
}

Tensor CausalAttention::forward(const Tensor& x) {
  check_batch_input(x, W_query->in_features, context_length, "CausalAttention");
  const int64_t T = x.size(1);
  Tensor keys = W_key->forward(x);      // (b, T, d_out)
  Tensor queries = W_query->forward(x);
  Tensor values = W_value->forward(x);
  Tensor scores = queries.matmul(keys.transpose(1, 2)).masked_fill(causal_mask(mask, T), -kInf);  // (b, T, T)
  Tensor weights = dropout->forward(scaled_softmax(scores, keys.size(-1)));
  if (keep_attention_weights) attention_weights = weights.detach();
  return weights.matmul(values);  // (b, T, d_out)
}

MultiHeadAttentionWrapper::MultiHeadAttentionWrapper(int64_t d_in, int64_t d_out, int64_t context_length,
                                                     double dropout, int64_t num_heads, bool qkv_bias)
    : Module("MultiHeadAttentionWrapper") {
  if (num_heads <= 0) throw Error("MultiHeadAttentionWrapper: num_heads must be positive, got " + std::to_string(num_heads));
  heads = register_module("heads", std::make_shared<ModuleList>());
  for (int64_t h = 0; h < num_heads; ++h)
    heads->push_back(std::make_shared<CausalAttention>(d_in, d_out, context_length, dropout, qkv_bias));
}

Tensor MultiHeadAttentionWrapper::forward(const Tensor& x) {
  std::vector<Tensor> outs;
  for (const auto& head : heads->children()) outs.push_back(head->forward(x));
  return cat(outs, -1);  // (b, T, num_heads * d_out)
}

MultiHeadAttention::MultiHeadAttention(int64_t d_in_, int64_t d_out_, int64_t context_length_, double dropout_p,
                                       int64_t num_heads_, bool qkv_bias)
    : Module("MultiHeadAttention"), d_in(d_in_), d_out(d_out_), context_length(context_length_), num_heads(num_heads_) {
  if (num_heads <= 0 || d_out % num_heads != 0) {
    throw Error("MultiHeadAttention: d_out (" + std::to_string(d_out) + ") must be divisible by num_heads (" +
                std::to_string(num_heads) + ")");
  }
  head_dim = d_out / num_heads;
  W_query = register_module("W_query", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_key = register_module("W_key", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_value = register_module("W_value", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  out_proj = register_module("out_proj", std::make_shared<Linear>(d_out, d_out));
  dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p));
  mask = register_buffer("mask", triu(ones({context_length, context_length}), 1));
}

Tensor MultiHeadAttention::forward(const Tensor& x) {
  check_batch_input(x, d_in, context_length, "MultiHeadAttention");
  const int64_t b = x.size(0), T = x.size(1);
  // (b, T, d_out) -> (b, T, num_heads, head_dim) -> (b, num_heads, T, head_dim): views, no copies
  auto split_heads = [&](const Tensor& t) { return t.view({b, T, num_heads, head_dim}).transpose(1, 2); };
  Tensor keys = split_heads(W_key->forward(x));
  Tensor queries = split_heads(W_query->forward(x));
  Tensor values = split_heads(W_value->forward(x));
  Tensor scores = queries.matmul(keys.transpose(2, 3)).masked_fill(causal_mask(mask, T), -kInf);  // (b, h, T, T)
  Tensor weights = dropout->forward(scaled_softmax(scores, head_dim));
  if (keep_attention_weights) attention_weights = weights.detach();
  Tensor context = weights.matmul(values).transpose(1, 2).contiguous().view({b, T, d_out});  // heads joined
  return out_proj->forward(context);
}

}  // namespace tg::nn
