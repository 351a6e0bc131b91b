// nn/attention.cpp — the attention layers: each forward is the notebook's, step by step.
//
//   scores  = queries @ keys^T
//   scores  = scores.masked_fill(mask, -inf)      the buffer's causal mask (and padded keys), as the notebook
//   weights = softmax(scores / sqrt(d_k), -1), then dropout
//   context = weights @ values
//
// With tg::fast_kernels() on, two visible branches per forward run the same steps as fused ops
// (autograd/ops/attention.cpp), with the same bits: when dropout is the identity and the
// weights are not kept, masked_scaled_attention does every step from the scores to the product
// with the values, without keeping the weights for backward; else masked_scaled_softmax does
// the masking, the scaling and the softmax in one pass. Those apply the causal rule from the
// positions (key j > query i + past is masked), the rule the buffer `mask` holds; the steps
// written out make the same mask from the positions too (causal_mask), so MultiHeadAttention's
// (context_length, context_length) buffer is made only when something reads it.
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
  Tensor scores = queries.matmul(keys.transpose(1, 2));  // (b, T, T)
  Tensor weights;                                        // (b, T, T)
  if (fast_kernels()) {  // the else branch's steps in one pass, the same bits
    weights = masked_scaled_softmax(scores, Tensor(), d_k, {.causal = true});
  } else {
    scores = scores.masked_fill(causal_mask(0, T, T), -kInf);
    weights = softmax(scores / sqrt_d_k(d_k), -1);
  }
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

void MultiHeadAttention::add_qkv_lora(int64_t r, double alpha) {
  if (qkv_lora) throw Error("MultiHeadAttention: add_qkv_lora: it has a qkv_lora already");
  qkv_lora = register_module("qkv_lora", std::make_shared<LoRA>(d_in, 3 * d_out, r, alpha));
  for (const auto& projection : {W_query, W_key, W_value})
    for (auto& [name, p] : projection->named_parameters()) p.requires_grad_(false);
}

// queries += u(x)[0, d_out), keys += u(kv)[d_out, 2 d_out), values += u(kv)[2 d_out, 3 d_out):
// GPT-2's c_attn output [q | k | v] with peft's update added before the split.
void MultiHeadAttention::add_qkv_update(const Tensor& x, const Tensor& kv, Tensor& queries, Tensor& keys,
                                        Tensor& values) {
  const Tensor update_x = qkv_lora->forward(x);                                    // (b, T_q, 3 d_out)
  const Tensor update_kv = kv.is_same(x) ? update_x : qkv_lora->forward(kv);        // (b, T_k, 3 d_out)
  queries = queries + update_x.narrow(-1, 0, d_out);
  keys = keys + update_kv.narrow(-1, d_out, d_out);
  values = values + update_kv.narrow(-1, 2 * d_out, d_out);
}

// Writes this forward's keys and values (b, h, T, hs) after the cached ones and returns all of
// them (b, h, past + T, hs): views of the cache's buffers, no copy of the past.
void MultiHeadAttention::append_to_cache(KVCache& cache, Tensor& keys, Tensor& values) const {
  const int64_t b = keys.size(0), T = keys.size(2), past = cache.length_;
  if (grad_mode_enabled())
    throw Error("MultiHeadAttention: a KVCache is for generation; use it under tg::NoGradGuard");
  if (!cache.keys_.defined() || cache.keys_.size(0) != b || cache.keys_.dtype() != keys.dtype()) {
    if (past > 0) throw Error("MultiHeadAttention: the KVCache holds another batch; clear() it first");
    cache.keys_ = zeros({b, num_heads, context_length, head_dim}, keys.dtype());
    cache.values_ = zeros({b, num_heads, context_length, head_dim}, keys.dtype());
  }
  if (past + T > context_length) {
    throw Error("MultiHeadAttention: the KVCache holds " + std::to_string(past) + " positions; " + std::to_string(T) +
                " more exceed context_length (" + std::to_string(context_length) + ")");
  }
  cache.keys_.narrow(2, past, T).copy_(keys);
  cache.values_.narrow(2, past, T).copy_(values);
  cache.length_ = past + T;
  keys = cache.keys_.narrow(2, 0, cache.length_);
  values = cache.values_.narrow(2, 0, cache.length_);
}

Tensor MultiHeadAttention::forward(const Tensor& x, const AttentionOptions& options) {
  check_batch_input(x, d_in, context_length, "MultiHeadAttention");
  if (options.cache && options.kv.defined())
    throw Error("MultiHeadAttention: a KVCache is for self-attention; it cannot be combined with kv");
  const Tensor& kv = options.kv.defined() ? options.kv : x;
  if (options.kv.defined()) check_kv_input(x, kv, d_in, context_length);
  const int64_t b = x.size(0), T_q = x.size(1), past = options.cache ? options.cache->length() : 0;
  const int64_t T_k = past + kv.size(1);
  const Tensor& padded = options.key_padding_mask;
  if (padded.defined()) check_key_padding_mask(padded, b, T_k);
  // (b, T, d_out) -> (b, T, num_heads, head_dim) -> (b, num_heads, T, head_dim): views, no copies
  auto split_heads = [&](const Tensor& t, int64_t T) { return t.view({b, T, num_heads, head_dim}).transpose(1, 2); };
  Tensor keys = W_key->forward(kv), queries = W_query->forward(x), values = W_value->forward(kv);  // (b, T, d_out)
  if (qkv_lora) add_qkv_update(x, kv, queries, keys, values);
  keys = split_heads(keys, kv.size(1));        // (b, h, T_k, hs)
  queries = split_heads(queries, T_q);         // (b, h, T_q, hs)
  values = split_heads(values, kv.size(1));    // (b, h, T_k, hs)
  if (options.cache) append_to_cache(*options.cache, keys, values);  // now (b, h, past + T_q, hs)
  const Tensor padded_keys = padded.defined() ? padded.view({b, 1, 1, T_k}) : Tensor();  // (b, 1, 1, T_k)
  // query i is at position past + i: causal, it sees keys 0..past + i
  const MaskedSoftmaxOptions rule{.causal = options.causal, .query_offset = past};
  // (b, h, T_q, hs) -> (b, T_q, h, hs) -> (b, T_q, d_out): the heads joined
  auto join_heads = [&](const Tensor& t) { return t.transpose(1, 2).contiguous().view({b, T_q, d_out}); };
  if (fast_kernels() && dropout_is_identity(*dropout) && !keep_attention_weights)  // the steps below as one op
    return out_proj->forward(join_heads(masked_scaled_attention(queries, keys, values, padded_keys, head_dim, rule)));
  Tensor scores = queries.matmul(keys.transpose(2, 3));  // (b, h, T_q, T_k)
  Tensor weights;                                        // (b, h, T_q, T_k)
  if (fast_kernels()) {  // the else branch's steps in one pass, the same bits
    weights = masked_scaled_softmax(scores, padded_keys, head_dim, rule);
  } else {
    Tensor hidden = options.causal ? causal_mask(past, T_q, T_k) : Tensor();  // (T_q, T_k)
    if (padded.defined()) hidden = hidden.defined() ? logical_or(hidden, padded_keys) : padded_keys;
    // A query that sees no key (all padded) would get softmax's NaN: its row is left unmasked
    // here, and its weights are zeroed after the softmax (it attends to nothing).
    const Tensor blind = hidden.defined() ? hidden.sum(-1, /*keepdim=*/true) == T_k : Tensor();
    if (hidden.defined()) scores = scores.masked_fill(logical_and(hidden, logical_not(blind)), -kInf);
    weights = softmax(scores / sqrt_d_k(head_dim), -1);
    if (blind.defined()) weights = weights.masked_fill(blind, 0.0);
  }
  weights = dropout->forward(weights);
  if (keep_attention_weights) attention_weights = weights.detach();
  return out_proj->forward(join_heads(weights.matmul(values)));  // (b, T_q, d_out)
}

}  // namespace tg::nn
