// nn/attention.cpp — the attention layers: each forward is the notebook's, step by step.
//
//   scores  = queries @ keys^T
//   scores  = scores.masked_fill(mask, -inf)      the buffer's causal mask (and padded keys), as the notebook
//   weights = softmax(scores / sqrt(d_k), -1), then dropout
//   context = weights @ values
//
// With tg::fast_kernels() on, when dropout is the identity and the weights are not kept, one
// visible branch at the top of each forward runs its steps as one fused op
// (masked_scaled_attention, autograd/ops/attention.cpp), with the same bits, without keeping
// the weights for backward. It applies the causal rule from the positions (key j > query i is
// masked), the rule the buffer `mask` holds; MultiHeadAttention's steps make the same mask from
// the positions too (causal_mask), so its (context_length, context_length) buffer is made only
// when something reads it. attend (at the end) is the same steps for the models' attention, which
// adds cached positions and a second fused op (masked_scaled_softmax) for training with dropout.
#include "nn/attention.h"

#include <cmath>

#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg::nn {

namespace {

// x must be (b, T, d_in) with T <= context_length. `what` names it in the message ("kv").
void check_batch_input(const Tensor& x, int64_t d_in, int64_t context_length, const char* layer,
                       const std::string& what = "input") {
  if (x.dim() != 3 || x.size(2) != d_in) {
    throw Error(std::string(layer) + ": expected " + what + " of shape (b, num_tokens, " + std::to_string(d_in) +
                "), got " + shape_str(x.sizes()));
  }
  if (x.size(1) > context_length) {
    throw Error(std::string(layer) + ": " + (what == "input" ? "" : what + " ") + "num_tokens (" +
                std::to_string(x.size(1)) + ") exceeds context_length (" + std::to_string(context_length) + ")");
  }
}

// kv must be (b, T_k, d_in) with x's b and T_k <= context_length.
void check_kv_input(const Tensor& x, const Tensor& kv, int64_t d_in, int64_t context_length) {
  if (kv.dim() == 3 && kv.size(2) != d_in) {
    throw Error("MultiHeadAttention: kv of shape " + shape_str(kv.sizes()) + " has width " + std::to_string(kv.size(2)) +
                ", but keys and values are projected from d_in = " + std::to_string(d_in) + " features, as the queries from x " +
                shape_str(x.sizes()));
  }
  check_batch_input(kv, d_in, context_length, "MultiHeadAttention", "kv");
  if (kv.size(0) != x.size(0)) {
    throw Error("MultiHeadAttention: x of shape " + shape_str(x.sizes()) + " and kv of shape " +
                shape_str(kv.sizes()) + " have different batch sizes (" + std::to_string(x.size(0)) + " vs " +
                std::to_string(kv.size(0)) + ")");
  }
}

// key_padding_mask must be bool (b, T_k), true = padded: the one check, the one message.
void check_key_padding_mask(const Tensor& padded, int64_t b, int64_t T_k) {
  if (padded.dtype() != kBool || padded.sizes() != Shape{b, T_k}) {
    throw Error("MultiHeadAttention: key_padding_mask must be bool of shape (b, T_k) = " + shape_str({b, T_k}) +
                ", true = padded; got " + dtype_name(padded.dtype()) + " of shape " + shape_str(padded.sizes()));
  }
}

// True when the dropout returns its input unchanged (p = 0, or eval), as tg::dropout decides.
bool dropout_is_identity(const Dropout& dropout) { return dropout.p == 0.0 || !dropout.is_training(); }

// sqrt(d_k), the scores' divisor (the notebook's keys.shape[-1]**0.5).
double sqrt_d_k(int64_t d_k) { return std::sqrt(static_cast<double>(d_k)); }

// The causal mask the notebook takes from the buffer, mask.bool()[past:past+T_q, :T_k], made from
// the positions alone: query i, at position past + i, may not see key j > past + i.
Tensor causal_mask(int64_t past, int64_t T_q, int64_t T_k) {
  return triu(ones({T_q, T_k}), past + 1).to(kBool);  // (T_q, T_k)
}

// key_padding_mask (b, T_k) as (b, 1, 1, T_k), to broadcast over the heads and the queries;
// undefined when there is none.
Tensor padded_keys(const Tensor& key_padding_mask) {
  if (!key_padding_mask.defined()) return Tensor();
  return key_padding_mask.view({key_padding_mask.size(0), 1, 1, key_padding_mask.size(1)});
}

// The keys no query may see: the causal mask (T_q, T_k) when causal, or'd with padded
// (b, 1, 1, T_k) when given; undefined when nothing is hidden.
Tensor hidden_keys(bool causal, int64_t past, int64_t T_q, int64_t T_k, const Tensor& padded) {
  Tensor hidden = causal ? causal_mask(past, T_q, T_k) : Tensor();
  if (padded.defined()) hidden = hidden.defined() ? logical_or(hidden, padded) : padded;
  return hidden;
}

// The queries whose every key is hidden (every key they may see is padded), (..., T_q, 1):
// softmax of a row of -inf is NaN, so such a row is left unmasked and its weights zeroed after
// the softmax (it attends to nothing; no NaN reaches the output or any gradient).
Tensor sees_no_key(const Tensor& hidden, int64_t T_k) {
  return hidden.defined() ? hidden.sum(-1, /*keepdim=*/true) == T_k : Tensor();
}

// The buffer both attentions register: (n, n), 1 above the diagonal.
Tensor causal_buffer(int64_t n) { return triu(ones({n, n}), 1); }

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
  Tensor scores = queries.matmul(keys.t());                        // (T, T)
  Tensor weights = softmax(scores / sqrt_d_k(keys.size(-1)), -1);  // (T, T)
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
  Tensor scores = queries.matmul(keys.mT());
  Tensor weights = softmax(scores / sqrt_d_k(keys.size(-1)), -1);
  if (keep_attention_weights) attention_weights = weights.detach();
  return weights.matmul(values);
}

CausalAttention::CausalAttention(int64_t d_in, int64_t d_out_, int64_t context_length_, double dropout_p, bool qkv_bias)
    : Module("CausalAttention"), d_out(d_out_), context_length(context_length_) {
  W_query = register_module("W_query", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_key = register_module("W_key", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  W_value = register_module("W_value", std::make_shared<Linear>(d_in, d_out, qkv_bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p));
  mask = register_buffer("mask", causal_buffer(context_length));
}

Tensor CausalAttention::forward(const Tensor& x) {
  check_batch_input(x, W_query->in_features, context_length, "CausalAttention");
  Tensor keys = W_key->forward(x);      // (b, T, d_out)
  Tensor queries = W_query->forward(x);
  Tensor values = W_value->forward(x);
  const int64_t T = x.size(1), d_k = keys.size(-1);
  if (fast_kernels() && dropout_is_identity(*dropout) && !keep_attention_weights)  // the steps below as one op
    return masked_scaled_attention(queries, keys, values, Tensor(), d_k, {.causal = true});
  Tensor scores = queries.matmul(keys.transpose(1, 2));                      // (b, T, T)
  scores = scores.masked_fill(mask.to(kBool).narrow(0, 0, T).narrow(1, 0, T), -kInf);  // mask.bool()[:T, :T]
  Tensor weights = softmax(scores / sqrt_d_k(d_k), -1);                     // (b, T, T)
  weights = dropout->forward(weights);
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
  register_lazy_buffer("mask", [n = context_length] { return causal_buffer(n); });  // made when read
}

Tensor MultiHeadAttention::forward(const Tensor& x) { return forward(x, AttentionOptions{}); }

Tensor MultiHeadAttention::forward(const Tensor& x, const AttentionOptions& options) {
  const Tensor& kv = options.kv.defined() ? options.kv : x;
  check_inputs(x, kv, options.key_padding_mask, 0);
  Tensor keys = W_key->forward(kv), queries = W_query->forward(x), values = W_value->forward(kv);  // (b, T, d_out)
  keys = split_heads(keys);                                                                    // (b, h, T_k, hs)
  queries = split_heads(queries);                                                              // (b, h, T_q, hs)
  values = split_heads(values);                                                                // (b, h, T_k, hs)
  const int64_t T_q = queries.size(2), T_k = keys.size(2);
  const Tensor padded = padded_keys(options.key_padding_mask);  // (b, 1, 1, T_k), or undefined
  if (fast_kernels() && dropout_is_identity(*dropout) && !keep_attention_weights)  // the steps below as one op
    return out_proj->forward(join_heads(
        masked_scaled_attention(queries, keys, values, padded, head_dim, {.causal = options.causal})));
  Tensor scores = queries.matmul(keys.transpose(2, 3));  // (b, h, T_q, T_k)
  // the causal mask (the buffer's mask.bool()[:T_q, :T_k]), and the padded keys
  const Tensor hidden = hidden_keys(options.causal, 0, T_q, T_k, padded);
  const Tensor blind = sees_no_key(hidden, T_k);  // those rows stay unmasked, then get zero weights
  if (hidden.defined()) scores = scores.masked_fill(logical_and(hidden, logical_not(blind)), -kInf);
  Tensor weights = softmax(scores / sqrt_d_k(head_dim), -1);  // (b, h, T_q, T_k)
  if (blind.defined()) weights = weights.masked_fill(blind, 0.0);
  weights = dropout->forward(weights);
  if (keep_attention_weights) attention_weights = weights.detach();
  Tensor context = weights.matmul(values);         // (b, h, T_q, hs)
  return out_proj->forward(join_heads(context));  // (b, T_q, d_out)
}

Tensor MultiHeadAttention::attend(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                  const Tensor& key_padding_mask, bool causal, int64_t past) {
  return nn::attend(queries, keys, values,
                    {.key_padding_mask = key_padding_mask, .causal = causal, .past = past, .dropout_p = dropout->p,
                     .training = dropout->is_training(),
                     .keep_weights = keep_attention_weights ? &attention_weights : nullptr});
}

// (b, T, d_out) -> (b, T, num_heads, head_dim) -> (b, num_heads, T, head_dim): views, no copies
Tensor MultiHeadAttention::split_heads(const Tensor& t) const {
  return t.view({t.size(0), t.size(1), num_heads, head_dim}).transpose(1, 2);
}

// (b, h, T, hs) -> (b, T, h, hs) -> (b, T, d_out): the heads joined
Tensor MultiHeadAttention::join_heads(const Tensor& t) const {
  return t.transpose(1, 2).contiguous().view({t.size(0), t.size(2), d_out});
}

// x (b, T_q, d_in) and kv (b, T_k, d_in) within the context once past positions are added, and
// a key_padding_mask (b, past + T_k) when given; each refusal names what was wrong.
void MultiHeadAttention::check_inputs(const Tensor& x, const Tensor& kv, const Tensor& key_padding_mask,
                                      int64_t past) const {
  check_batch_input(x, d_in, context_length, "MultiHeadAttention");
  if (!kv.is_same(x)) check_kv_input(x, kv, d_in, context_length);
  if (key_padding_mask.defined()) check_key_padding_mask(key_padding_mask, x.size(0), past + kv.size(1));
}

// The notebook's steps from the scores to @ values, every head at once; query i sits at position
// past + i (past > 0 only for a caller that keeps earlier keys, such as a KV cache).
Tensor attend(const Tensor& queries, const Tensor& keys, const Tensor& values, const AttendOptions& o) {
  const int64_t T_q = queries.size(2), T_k = keys.size(2), head_dim = queries.size(3);
  const Tensor padded = padded_keys(o.key_padding_mask);
  const MaskedSoftmaxOptions rule{.causal = o.causal, .query_offset = o.past};
  const bool no_dropout = o.dropout_p == 0.0 || !o.training;  // as tg::dropout decides
  if (fast_kernels() && no_dropout && !o.keep_weights)  // the steps below as one op
    return masked_scaled_attention(queries, keys, values, padded, head_dim, rule);
  Tensor scores = queries.matmul(keys.transpose(2, 3));  // (b, h, T_q, T_k)
  Tensor weights;                                        // (b, h, T_q, T_k)
  if (fast_kernels()) {  // the else branch's steps in one pass, the same bits
    weights = masked_scaled_softmax(scores, padded, head_dim, rule);
  } else {
    const Tensor hidden = hidden_keys(o.causal, o.past, T_q, T_k, padded);
    const Tensor blind = sees_no_key(hidden, T_k);
    if (hidden.defined()) scores = scores.masked_fill(logical_and(hidden, logical_not(blind)), -kInf);
    weights = softmax(scores / sqrt_d_k(head_dim), -1);
    if (blind.defined()) weights = weights.masked_fill(blind, 0.0);
  }
  weights = dropout(weights, o.dropout_p, o.training);
  if (o.keep_weights) *o.keep_weights = weights.detach();
  return weights.matmul(values);  // (b, h, T_q, hs)
}

}  // namespace tg::nn
