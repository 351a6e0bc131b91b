// examples/notebook_000_attention_step_by_step.cpp — attention built up step by step, cell by cell.
//
//   simplified   scores = x x^T (dot products), weights = softmax(scores) along each row,
//                context = weights @ x                                     x (T, d_in), T = 6 tokens
//   trainable    q = x Wq, k = x Wk, v = x Wv; weights = softmax(q k^T / sqrt(d_k)); context = weights @ v
//   causal       a token sees itself and the ones before it: tril and renormalise, or -inf above the
//                diagonal before the softmax; dropout on the weights in training
//   multi-head   d_out split into num_heads heads of head_dim: (b, T, d_out) -> (b, num_heads, T, head_dim),
//                attention per head, heads joined again (b, T, d_out), then out_proj
//
// The library's classes (tg::nn::SelfAttention_v1/v2, CausalAttention, MultiHeadAttentionWrapper,
// MultiHeadAttention) are the notebook's with the book's names: where the notebook writes
// SelfAttenton_v1, CasualAttention, MultiHeadAttentionWraper or w_query/w_key/w_value, they are
// SelfAttention_v1, CausalAttention, MultiHeadAttentionWrapper and W_query/W_key/W_value. The
// notebook's own variants, OptimizedMultiHeadAttention (values = x) and EfficientMultiHeadAttention
// (keys = values = x), are defined below on top of tg::nn.
//
// Every cell prints its label ("In [15]:") and then what the notebook's cell printed (the notebook
// labels two cells "In [2]"). Cells 3 to 25, 28 to 36, 45 and 131 print the notebook's numbers (its
// data, seeds 123 and 789, PyTorch's initialisation). Cells 26 and 27 print dropout masks: ours
// are the ones PyTorch 1.13 prints from seed 123 on a plain CPU build (tapegrad's generator is
// bit-identical to it); the notebook's came from an MKL build, which draws Dropout's mask from
// another random stream. Cells 46 to 94 build Linear layers without a seed, and the notebook's
// generator had been used by cells that are not shown (its cell numbers jump from 61 to 81), so
// those values are our own: the ones PyTorch prints running these cells once, top to bottom.
//
// With --svg DIR it also draws the attention weights as heatmaps into DIR: the simplified
// weights, SelfAttention_v2's, CausalAttention's (the masked cells empty) and each head of
// MultiHeadAttention.
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "io/flags.h"
#include "io/plots.h"
#include "examples/your_journey.h"
#include "examples/notebook_cells.h"
#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/module.h"

using notebook::cell;
using notebook::torch_size;
using tg::Tensor;

namespace notebook000 {

const char* const kSeparator = "-----------------------------------------------------------------";

// The six tokens of three dimensions the notebook uses from its first cells: "Your journey starts
// with one step".
Tensor six_tokens() {
  return tg::tensor({{0.43, 0.15, 0.89},    // x^1
                     {0.55, 0.87, 0.66},    // x^2
                     {0.57, 0.85, 0.64},    // x^3
                     {0.22, 0.58, 0.33},    // x^4
                     {0.77, 0.25, 0.10},    // x^5
                     {0.05, 0.80, 0.55}});  // x^6
}

// Three tokens of six dimensions, for the walk through the head split.
Tensor three_tokens_of_six() {
  return tg::tensor({{0.2745, 0.6584, 0.2775, 0.8573, 0.6584, 0.2775},
                     {0.8993, 0.0390, 0.9268, 0.7388, 0.8993, 0.0390},
                     {0.7179, 0.7058, 0.9156, 0.4340, 0.7179, 0.9156}});
}

// What OptimizedMultiHeadAttention and EfficientMultiHeadAttention share: MultiHeadAttention's
// W_query, the layers and mask after the projections, and its forward from queries, keys and
// values once they are made.
class SplitHeadsAttention : public tg::nn::Module {
 public:
  // x_is: what x itself stands for ("values", or "keys and values"), which needs d_in == d_out.
  SplitHeadsAttention(const std::string& type_name, int64_t d_in_, int64_t d_out_, int64_t context_length_,
                      int64_t num_heads_, bool qkv_bias, const char* x_is)
      : Module(type_name), d_in(d_in_), d_out(d_out_), context_length(context_length_), num_heads(num_heads_) {
    if (num_heads <= 0 || d_out % num_heads != 0) {
      throw tg::Error(type_name + ": d_out (" + std::to_string(d_out) + ") must be divisible by num_heads (" +
                      std::to_string(num_heads) + ")");
    }
    head_dim = d_out / num_heads;
    check_x_splits_into_heads(x_is);
    W_query = register_module("W_query", std::make_shared<tg::nn::Linear>(d_in, d_out, qkv_bias));
  }

  int64_t d_in, d_out, context_length, num_heads, head_dim;
  bool keep_attention_weights = false;  // keep the last forward's weights (b, num_heads, T, T) below
  Tensor attention_weights;
  std::shared_ptr<tg::nn::Linear> W_query, out_proj;
  std::shared_ptr<tg::nn::Dropout> dropout;
  Tensor mask;  // (context_length, context_length): 1 above the diagonal

 protected:
  // The layers after the projections, made after them as in the notebook (so the same seed
  // gives the same weights): out_proj, dropout and the causal mask.
  void register_output_layers(double dropout_p) {
    out_proj = register_module("out_proj", std::make_shared<tg::nn::Linear>(d_out, d_out));
    dropout = register_module("dropout", std::make_shared<tg::nn::Dropout>(dropout_p));
    mask = register_buffer("mask", tg::triu(tg::ones({context_length, context_length}), 1));
  }

  // x must be (b, num_tokens, d_in) with num_tokens <= context_length.
  void check_input(const Tensor& x) const {
    if (x.dim() != 3 || x.size(2) != d_in || x.size(1) > context_length) {
      throw tg::Error(type_name() + ": expected input of shape (b, num_tokens <= " + std::to_string(context_length) +
                      ", " + std::to_string(d_in) + "), got " + tg::shape_str(x.sizes()));
    }
  }

  // x used as the values (or keys) themselves: d_in must be d_out for the split into heads.
  void check_x_splits_into_heads(const char* what) const {
    if (d_in != d_out) {
      throw tg::Error(type_name() + ": the " + what + " are x itself, so d_in (" + std::to_string(d_in) +
                      ") must equal d_out (" + std::to_string(d_out) + ")");
    }
  }

  // keys, queries, values (b, num_tokens, d_out)  ->  context (b, num_tokens, d_out), as the
  // notebook's forward goes on after the projections.
  Tensor attend(Tensor keys, Tensor queries, Tensor values) {
    const int64_t b = keys.size(0), num_tokens = keys.size(1);
    keys = keys.view({b, num_tokens, num_heads, head_dim});
    values = values.view({b, num_tokens, num_heads, head_dim});
    queries = queries.view({b, num_tokens, num_heads, head_dim});

    keys = keys.transpose(1, 2);  // (b, num_heads, num_tokens, head_dim)
    queries = queries.transpose(1, 2);
    values = values.transpose(1, 2);

    Tensor attn_scores = queries.matmul(keys.transpose(2, 3));  // (b, num_heads, num_tokens, num_tokens)
    Tensor mask_bool = mask.to_bool().slice(0, 0, num_tokens).slice(1, 0, num_tokens);
    attn_scores.masked_fill_(mask_bool, -tg::kInf);
    Tensor attn_weights = tg::softmax(attn_scores / std::pow(static_cast<double>(keys.size(-1)), 0.5), -1);
    attn_weights = dropout->forward(attn_weights);
    if (keep_attention_weights) attention_weights = attn_weights.detach();
    Tensor context_vec = attn_weights.matmul(values).transpose(1, 2);  // (b, num_tokens, num_heads, head_dim)
    context_vec = context_vec.contiguous().view({b, num_tokens, d_out});
    return out_proj->forward(context_vec);
  }
};

// MultiHeadAttention without W_value: the values are x itself, split into heads (so d_in == d_out).
// The notebook's w_query / w_key are W_query / W_key here, as in tg::nn::MultiHeadAttention.
class OptimizedMultiHeadAttention : public SplitHeadsAttention {
 public:
  OptimizedMultiHeadAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout_p,
                              int64_t num_heads, bool qkv_bias = false)
      : SplitHeadsAttention("OptimizedMultiHeadAttention", d_in, d_out, context_length, num_heads, qkv_bias, "values") {
    W_key = register_module("W_key", std::make_shared<tg::nn::Linear>(d_in, d_out, qkv_bias));
    register_output_layers(dropout_p);
  }

  Tensor forward(const Tensor& x) override {
    check_input(x);
    Tensor keys = W_key->forward(x);
    Tensor queries = W_query->forward(x);
    return attend(keys, queries, /*values=*/x);
  }

  std::shared_ptr<tg::nn::Linear> W_key;
};

// MultiHeadAttention with only W_query: keys and values are both x itself (so d_in == d_out).
// The notebook's w_query is W_query here.
class EfficientMultiHeadAttention : public SplitHeadsAttention {
 public:
  EfficientMultiHeadAttention(int64_t d_in, int64_t d_out, int64_t context_length, double dropout_p,
                              int64_t num_heads, bool qkv_bias = false)
      : SplitHeadsAttention("EfficientMultiHeadAttention", d_in, d_out, context_length, num_heads, qkv_bias,
                            "keys and values") {
    register_output_layers(dropout_p);
  }

  Tensor forward(const Tensor& x) override {
    check_input(x);
    Tensor queries = W_query->forward(x);
    return attend(/*keys=*/x, queries, /*values=*/x);
  }
};

}  // namespace notebook000

using notebook000::kSeparator;

// The notebook, cell by cell. svg: the folder for the pictures, or "" for none.
static int run(const std::string& svg) {
  const std::vector<std::string> tokens = tg::examples::your_journey_tokens();
  // --- simplified attention mechanism -----------------------------------------------------------
  cell(2);  // import torch
  cell(2);  // the notebook shows this label twice
  Tensor inputs = notebook000::six_tokens();

  cell(3);  // the attention scores of x^2: its dot product with every token
  // torch.dot(x_i, query) is matmul of two 1-D tensors here (a 0-d result).
  Tensor query = inputs[1];
  Tensor attn_scores2 = tg::empty({inputs.size(0)});
  for (int64_t i = 0; i < inputs.size(0); ++i) attn_scores2[i].copy_(inputs[i].matmul(query));
  std::cout << attn_scores2 << "\n";

  cell(4);  // normalised to sum 1
  Tensor attn_weights_2 = attn_scores2 / attn_scores2.sum();
  std::cout << attn_weights_2 << "\n";
  // Python's sum(): 0 + w[0] + w[1] + ... PyTorch adds up the six scores above in another order,
  // one bit apart from ours, so its total here is 1.0000001 and prints as tensor(1.0000); ours is
  // exactly 1 and prints as tensor(1.).
  Tensor python_sum = tg::scalar_tensor(0);
  for (int64_t i = 0; i < attn_weights_2.size(0); ++i) python_sum = python_sum + attn_weights_2[i];
  std::cout << python_sum << "\n";

  cell(5);  // usually normalised with softmax instead
  attn_weights_2 = tg::softmax(attn_scores2, 0);
  std::cout << attn_weights_2 << "\n";

  cell(6);  // the context vector: the tokens weighted by the attention weights, summed
  Tensor context_vec2 = tg::zeros(query.sizes());
  for (int64_t i = 0; i < inputs.size(0); ++i) context_vec2 += attn_weights_2[i] * inputs[i];
  std::cout << context_vec2 << "\n";

  cell(7);
  context_vec2 = tg::matmul(attn_weights_2, inputs);
  std::cout << context_vec2 << "\n";

  cell(8);  // every token's scores, one dot product at a time
  Tensor attn_scores = tg::empty({6, 6});
  for (int64_t i = 0; i < inputs.size(0); ++i) {
    for (int64_t j = 0; j < inputs.size(0); ++j) attn_scores[i][j].copy_(inputs[i].matmul(inputs[j]));
  }
  std::cout << attn_scores << "\n";

  cell(9);  // the same as one matmul
  attn_scores = inputs.matmul(inputs.t());
  std::cout << attn_scores << "\n";

  cell(10);
  Tensor attn_weights = tg::softmax(attn_scores, -1);
  std::cout << attn_weights << "\n";
  if (!svg.empty()) tg::save_attention_heatmaps(svg, "simplified_attention_weights", attn_weights, tokens, false);

  cell(11);
  Tensor context_vec = tg::matmul(attn_weights, inputs);
  std::cout << context_vec << "\n";

  // --- attention with trainable weights ---------------------------------------------------------
  cell(12);
  inputs = notebook000::six_tokens();

  cell(13);  // query, key and value of x^2
  Tensor x_2 = inputs[1];
  int64_t d_in = inputs.size(1);
  int64_t d_out = 2;
  tg::manual_seed(123);
  notebook::print_generator(tg::default_generator());  // the notebook shows manual_seed's result

  cell(14);  // Parameters with requires_grad=False: plain tensors
  Tensor w_query = tg::rand({d_in, d_out});
  Tensor w_key = tg::rand({d_in, d_out});
  Tensor w_value = tg::rand({d_in, d_out});

  cell(15);
  Tensor query_2 = x_2.matmul(w_query);
  Tensor key_2 = x_2.matmul(w_key);  // computed and not printed, as in the notebook
  Tensor value_2 = x_2.matmul(w_value);
  std::cout << query_2 << "\n";

  cell(16);  // the keys and values of all tokens
  Tensor keys = inputs.matmul(w_key);
  Tensor values = inputs.matmul(w_value);

  cell(17);
  Tensor attn_score2 = query_2.matmul(keys.t());
  std::cout << attn_score2 << "\n";

  cell(18);  // scaled by 1 / sqrt(d_k) before the softmax
  const int64_t d_k = keys.size(-1);
  Tensor attn_weights2 = tg::softmax(attn_score2 / std::pow(static_cast<double>(d_k), 0.5), -1);
  std::cout << attn_weights2 << "\n";

  cell(19);
  context_vec2 = attn_weights2.matmul(values);
  std::cout << context_vec2 << "\n";

  cell(20);  // class SelfAttenton_v1: tg::nn::SelfAttention_v1

  cell(21);
  tg::manual_seed(123);
  tg::nn::SelfAttention_v1 sa_v1(d_in, d_out);
  std::cout << sa_v1.forward(inputs) << "\n";  // row 2 is context_vec2 of In [19]

  cell(22);  // class SelfAttention_v2: tg::nn::SelfAttention_v2, Linear layers instead of rand

  cell(23);
  tg::manual_seed(789);
  tg::nn::SelfAttention_v2 sa_v2(d_in, d_out);
  std::cout << sa_v2.forward(inputs) << "\n";

  // --- masked (causal) attention ----------------------------------------------------------------
  cell(24);
  inputs = notebook000::six_tokens();
  Tensor queries = sa_v2.W_query->forward(inputs);
  keys = sa_v2.W_key->forward(inputs);
  attn_scores = queries.matmul(keys.t());
  attn_weights = tg::softmax(attn_scores / std::pow(static_cast<double>(keys.size(-1)), 0.5), -1);
  std::cout << attn_weights << "\n";
  if (!svg.empty()) tg::save_attention_heatmaps(svg, "self_attention_v2_weights", attn_weights, tokens, false);
  std::cout << kSeparator << "\n";
  // a matrix with zeros above the diagonal
  int64_t context_length = attn_scores.size(0);
  Tensor mask_simple = tg::tril(tg::ones({context_length, context_length}));
  std::cout << mask_simple << "\n";
  std::cout << kSeparator << "\n";
  // times the attention weights: simply masked
  Tensor masked_simple = attn_weights * mask_simple;
  std::cout << masked_simple << "\n";
  std::cout << kSeparator << "\n";
  Tensor row_sums = masked_simple.sum(-1, /*keepdim=*/true);
  Tensor masked_simple_norm = masked_simple / row_sums;
  std::cout << masked_simple_norm << "\n";

  cell(25);  // the efficient way: -inf above the diagonal, then the softmax
  Tensor mask = tg::triu(tg::ones({context_length, context_length}), 1);
  Tensor masked = attn_scores.masked_fill(mask.to_bool(), -tg::kInf);
  std::cout << masked << "\n";
  std::cout << kSeparator << "\n";
  attn_weights = tg::softmax(masked / std::pow(static_cast<double>(keys.size(-1)), 0.5), 1);
  std::cout << attn_weights << "\n";

  // The masks of In [26] and In [27] are PyTorch 1.13's on a plain CPU build (see the top).
  cell(26);  // dropout: half the entries zeroed, the rest scaled by 1 / (1 - 0.5)
  tg::manual_seed(123);
  tg::nn::Dropout dropout(0.5);
  Tensor example = tg::ones({6, 6});
  std::cout << dropout.forward(example) << "\n";

  cell(27);
  tg::manual_seed(123);
  std::cout << dropout.forward(attn_weights) << "\n";

  // --- causal attention with dropout as a class -------------------------------------------------
  cell(28);  // two inputs of six tokens each, each token of 3 dimensions
  Tensor batch = tg::stack({inputs, inputs}, 0);
  std::cout << torch_size(batch.sizes()) << "\n";

  cell(29);  // class CasualAttention: tg::nn::CausalAttention

  cell(30);
  tg::manual_seed(123);
  context_length = batch.size(1);
  tg::nn::CausalAttention ca(d_in, d_out, context_length, 0.0);
  ca.keep_attention_weights = true;
  Tensor context_vecs = ca.forward(batch);
  std::cout << "context_vecs.shape: " << torch_size(context_vecs.sizes()) << "\n";
  if (!svg.empty()) tg::save_attention_heatmaps(svg, "causal_attention_weights", ca.attention_weights, tokens, true);

  // --- a wrapper class for multi-head attention -------------------------------------------------
  cell(31);  // class MultiHeadAttentionWraper: tg::nn::MultiHeadAttentionWrapper

  cell(32);
  tg::manual_seed(123);
  context_length = batch.size(1);
  d_in = 3, d_out = 2;
  tg::nn::MultiHeadAttentionWrapper mha_wrapper(d_in, d_out, context_length, 0.0, /*num_heads=*/2);
  context_vecs = mha_wrapper.forward(batch);
  std::cout << context_vecs << "\n";

  // --- multi-head attention with weight splits --------------------------------------------------
  cell(33);  // class MultiHeadAttention: tg::nn::MultiHeadAttention

  cell(34);
  inputs = notebook000::six_tokens();
  batch = tg::stack({inputs, inputs}, 0);
  tg::manual_seed(123);
  int64_t batch_size = batch.size(0);
  context_length = batch.size(1);
  d_in = batch.size(2);
  d_out = 2;
  tg::nn::MultiHeadAttention mha(d_in, d_out, context_length, 0.0, /*num_heads=*/2);
  mha.keep_attention_weights = true;
  context_vecs = mha.forward(batch);
  std::cout << context_vecs << "\n";
  if (!svg.empty()) tg::save_attention_heatmaps(svg, "multi_head_attention_weights", mha.attention_weights, tokens, true);
  std::cout << "context_vecs.shape: " << torch_size(context_vecs.sizes()) << "\n";

  cell(35);  // (a comment: "test")

  cell(36);  // a batched matmul with the last two dims transposed
  // The notebook's literal mixes rows of 6 numbers (first block) with rows of 4 (second block),
  // which torch.tensor refuses ("expected sequence of length 6 at dim 2 (got 4)"), and its output
  // shows a (1, 2, 3, 4) tensor: it is the output of the first four numbers of every row, used here.
  Tensor a = tg::tensor({{{0.2745, 0.6584, 0.2775, 0.8573},
                          {0.8993, 0.0390, 0.9268, 0.7388},
                          {0.7179, 0.7058, 0.9156, 0.4340}},
                         {{0.0772, 0.3565, 0.1479, 0.5331},
                          {0.4066, 0.2318, 0.4545, 0.9737},
                          {0.4606, 0.5159, 0.4220, 0.5786}}})
                 .unsqueeze(0);  // (1, 2, 3, 4)
  std::cout << "shape of a:  " << torch_size(a.sizes()) << "\n";
  std::cout << "shape of a.T:  " << torch_size(a.transpose(2, 3).sizes()) << "\n";
  std::cout << "-----Dot product of a and a.T-----\n";
  std::cout << a.matmul(a.transpose(2, 3)) << "\n";

  // --- the multi-head class explained step by step ----------------------------------------------
  cell(45);  // batch size 2, 3 tokens, 6 dimensions per token
  Tensor input_data = notebook000::three_tokens_of_six();
  batch = tg::stack({input_data, input_data}, 0);
  std::cout << batch << "\n";
  std::cout << "batch shape:  " << torch_size(batch.sizes()) << "\n";

  // From here to In [94] the values are our own (see the top): these Linear layers draw their
  // weights without a seed.
  cell(46);  // linear projections to queries, keys and values
  Tensor x = batch;
  batch_size = batch.size(0);
  context_length = batch.size(1);
  d_in = batch.size(2);
  d_out = 6;
  tg::nn::Linear w_q(d_in, d_out, /*bias=*/false);
  tg::nn::Linear w_k(d_in, d_out, /*bias=*/false);
  tg::nn::Linear w_v(d_in, d_out, /*bias=*/false);
  queries = w_q.forward(x);  // (batch_size, context_length, d_out)
  keys = w_k.forward(x);
  values = w_v.forward(x);
  std::cout << "shape:  " << torch_size(queries.sizes()) << "\n";

  cell(47);
  std::cout << "queries : " << queries << "\n";

  cell(48);  // d_out split into (num_heads, head_dim)
  int64_t num_heads = 2;
  int64_t head_dim = d_out / num_heads;
  queries = queries.view({batch_size, context_length, num_heads, head_dim});
  keys = keys.view({batch_size, context_length, num_heads, head_dim});
  values = values.view({batch_size, context_length, num_heads, head_dim});
  std::cout << "shape:  " << torch_size(queries.sizes()) << "\n";

  cell(49);
  std::cout << "queries : " << queries << "\n";

  cell(50);
  std::cout << "keys : " << keys << "\n";

  cell(51);
  std::cout << "values : " << values << "\n";

  cell(52);  // the heads separated: (batch_size, num_heads, context_length, head_dim)
  queries = queries.transpose(1, 2);
  std::cout << queries << "\n";

  cell(53);
  keys = keys.transpose(1, 2);
  values = values.transpose(1, 2);

  cell(56);  // the scores of every head: queries @ keys^T over the last two dims
  Tensor attention_scores = queries.matmul(keys.transpose(2, 3));
  std::cout << "attention scores : " << attention_scores << "\n";
  std::cout << "shape: " << torch_size(attention_scores.sizes()) << "\n";

  cell(59);
  Tensor attention_weights =
      tg::softmax(attention_scores / std::pow(static_cast<double>(keys.size(-1)), 0.5), -1);
  Tensor context_vector = attention_weights.matmul(values);
  std::cout << "context vector : " << context_vector << "\n";
  std::cout << "shape : " << torch_size(context_vector.sizes()) << "\n";

  cell(61);  // the heads joined again: (batch_size, context_length, d_out)
  context_vector = context_vector.transpose(1, 2);
  context_vector = context_vector.contiguous().view({batch_size, context_length, d_out});
  std::cout << "context vector " << context_vector << "\n";

  // --- optimized multi-head attention: the values are x itself ----------------------------------
  cell(81);
  input_data = notebook000::three_tokens_of_six();
  batch = tg::stack({input_data, input_data}, 0);
  std::cout << batch << "\n";
  std::cout << "batch shape:  " << torch_size(batch.sizes()) << "\n";

  cell(89);
  x = batch;
  batch_size = batch.size(0);
  context_length = batch.size(1);
  d_in = batch.size(2);
  d_out = 6;
  tg::nn::Linear w_q2(d_in, d_out, /*bias=*/false);  // the notebook's w_q and w_k, made again
  tg::nn::Linear w_k2(d_in, d_out, /*bias=*/false);
  queries = w_q2.forward(x);
  keys = w_k2.forward(x);
  Tensor V = x;

  cell(91);
  num_heads = 2;
  head_dim = d_out / num_heads;
  queries = queries.view({batch_size, context_length, num_heads, head_dim});
  keys = keys.view({batch_size, context_length, num_heads, head_dim});
  std::cout << "shape:  " << torch_size(queries.sizes()) << "\n";

  cell(92);
  queries = queries.transpose(1, 2);
  keys = keys.transpose(1, 2);
  attention_scores = queries.matmul(keys.transpose(2, 3));
  std::cout << "attention scores : " << attention_scores << "\n";
  std::cout << "shape: " << torch_size(attention_scores.sizes()) << "\n";

  cell(93);
  V = V.view({batch_size, context_length, num_heads, head_dim});
  V = V.transpose(1, 2);
  std::cout << V << "\n";

  cell(94);
  attention_weights = tg::softmax(attention_scores / std::pow(static_cast<double>(keys.size(-1)), 0.5), -1);
  // As in the notebook, the weights multiply `values` (the projected values of In [46]), not V.
  context_vector = attention_weights.matmul(values);
  context_vector = context_vector.transpose(1, 2);
  context_vector = context_vector.contiguous().view({batch_size, context_length, d_out});
  std::cout << "context vector " << context_vector << "\n";

  cell("None");  // class OptimizedMultiHeadAttention (above)
  // The notebook only defines it (the cell never ran); here it is built and run once on the
  // batch of In [81], which it can take: x is split into heads as the values, so d_in = d_out = 6.
  tg::manual_seed(123);
  notebook000::OptimizedMultiHeadAttention optimized(d_in, d_out, context_length, 0.0, /*num_heads=*/2);
  optimized.keep_attention_weights = true;
  context_vecs = optimized.forward(batch);
  std::cout << context_vecs << "\n";
  std::cout << "context_vecs.shape: " << torch_size(context_vecs.sizes()) << "\n";

  cell(96);  // class EfficientMultiHeadAttention (above)

  cell(131);
  inputs = notebook000::six_tokens();
  batch = tg::stack({inputs, inputs}, 0);
  tg::manual_seed(123);
  batch_size = batch.size(0);
  context_length = batch.size(1);
  d_in = batch.size(2);
  d_out = 3;
  notebook000::EfficientMultiHeadAttention efficient(d_in, d_out, context_length, 0.0, /*num_heads=*/3);
  efficient.keep_attention_weights = true;
  context_vecs = efficient.forward(batch);
  std::cout << context_vecs << "\n";
  std::cout << "context_vecs.shape: " << torch_size(context_vecs.sizes()) << "\n";
  return 0;
}

int main(int argc, char** argv) {
  // --svg DIR: the attention weights below as heatmaps (io/plots.h)
  return tg::run_program_with_svg("notebook_000_attention_step_by_step",
      "Attention built up step by step, the notebook's cells in order; --svg draws the weights.", argc, argv, run);
}
