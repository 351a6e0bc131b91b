// examples/notebook_001_self_attention.cpp — "Attention Explained", cell by cell.
//
// Attention as averaging over the past, three ways, then with data-dependent weights:
//   version 1  a loop: token t gets the mean of x[0..t]
//   version 2  the same as one matmul: rows of tril(ones(T,T)) normalised to sum 1, times x
//   version 3  softmax over a causal mask: zeros with -inf above the diagonal give the same
//              weights; with scores q k^T / sqrt(hs) instead of zeros they depend on the data
//   Head       one head of self-attention, taking separate query, key and value inputs
//
// Every cell prints its label ("In [5]:") and then what the notebook's cell printed. Cells 5 to
// 44 are reproducible (seed 42 in cell 5 and cells 14/16) and print the notebook's numbers.
// From cell 45 on the notebook draws x without a seed, after random draws in cells that are not
// shown, so those values are our own (the shapes still match; PyTorch running the cells once,
// top to bottom, prints the same values).
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
#include "examples/notebook_cells.h"
#include "nn/layers.h"
#include "nn/module.h"

using notebook::cell;
using notebook::python_bool;
using notebook::torch_size;
using tg::Tensor;

// One head of self-attention, as the notebook's class: key/query/value Linear layers without
// bias, a causal mask and dropout on the weights.
//   query (B, Tq, C), key (B, T, C), value (B, T, C)  ->  (B, Tq, hs)
class Head : public tg::nn::Module {
 public:
  Head(int64_t embed_dim, int64_t head_size, double dropout_p) : Module("Head") {
    key = register_module("key", std::make_shared<tg::nn::Linear>(embed_dim, head_size, false));
    query = register_module("query", std::make_shared<tg::nn::Linear>(embed_dim, head_size, false));
    value = register_module("value", std::make_shared<tg::nn::Linear>(embed_dim, head_size, false));
    dropout = register_module("dropout", std::make_shared<tg::nn::Dropout>(dropout_p));
  }

  using Module::forward;
  Tensor forward(const Tensor& query_input, const Tensor& key_input, const Tensor& value_input) {
    const int64_t T = key_input.size(1);
    Tensor k = key->forward(key_input);      // (B, T, hs)
    Tensor q = query->forward(query_input);  // (B, T, hs)
    // compute attention scores ("affinities"): (B, T, hs) @ (B, hs, T) -> (B, T, T)
    Tensor matmul_qk = q.matmul(k.transpose(-2, -1));
    Tensor scores = matmul_qk * std::pow(static_cast<double>(k.size(-1)), -0.5);  // scale factor
    scores = scores.masked_fill(tg::tril(tg::ones({T, T})) == 0, -tg::kInf);  // causal
    Tensor p_attn = tg::softmax(scores, -1);  // (B, T, T)
    p_attn = dropout->forward(p_attn);
    if (keep_attention_weights) attention_weights = p_attn.detach();
    // the weighted aggregation of the values: (B, T, T) @ (B, T, hs) -> (B, T, hs)
    Tensor v = value->forward(value_input);
    return p_attn.matmul(v);
  }

  std::shared_ptr<tg::nn::Linear> key, query, value;
  std::shared_ptr<tg::nn::Dropout> dropout;
  bool keep_attention_weights = false;  // keep the last forward's p_attn (B, T, T) below
  Tensor attention_weights;
};

// The notebook, cell by cell. svg: the folder for the pictures, or "" for none.
static int run(const std::string& svg) {
  cell(1);  // import numpy as np
  cell(3);  // import torch ...
  cell(4);  // (a comment)

  // --- Self attention ------------------------------------------------------------------------
  cell(5);
  tg::manual_seed(42);
  int64_t B = 4, T = 8, C = 2;  // Batch, Time Dim, Channels
  Tensor x = tg::randn({B, T, C});
  std::cout << torch_size(x.sizes()) << "\n";

  cell(6);
  std::cout << x[0] << "\n";

  // --- Version 1: using a simple mathematical function ---------------------------------------
  cell(7);
  // attention1[b, t] = mean of x[b, :t+1]: a "bag of words" average over the past, used as attention
  Tensor attention1 = tg::zeros({B, T, C});
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      Tensor x_previous = x[b].slice(0, 0, t + 1);  // x[b, :t+1]   (t+1, C)
      attention1[b][t].copy_(tg::mean(x_previous, 0));
    }
  }

  cell(8);
  std::cout << x[0].slice(0, 0, 3 + 1) << "\n";  // x[0, :3+1]

  cell(9);
  std::cout << attention1[0].slice(0, 0, 3) << "\n";  // attention1[0, :3]

  // Replicating the above by combining matmul and tril
  cell(10);
  Tensor a = tg::ones({3, 3});
  std::cout << a << "\n\n";  // print(a)

  cell(11);
  Tensor b = tg::randint(0, 10, {3, 2}).to_float();
  std::cout << b << "\n\n";

  cell(12);
  Tensor c = a.matmul(b);
  std::cout << c << "\n\n";

  cell(13);
  std::cout << tg::tril(tg::ones({8, 8})) << "\n";

  cell(14);  // combining tril and matmul: row t of c is the sum of b[0..t]
  tg::manual_seed(42);
  a = tg::tril(tg::ones({8, 8}));
  b = tg::randint(0, 10, {8, 2}).to_float();
  c = a.matmul(b);
  std::cout << a << "\n" << b << "\n" << c << "\n\n";

  cell(16);  // average with tril: rows normalised to sum 1, so row t of c is the mean of b[0..t]
  tg::manual_seed(42);
  a = tg::tril(tg::ones({8, 8}));
  a = a / tg::sum(a, 1, /*keepdim=*/true);
  b = tg::randint(0, 10, {8, 2}).to_float();
  c = a.matmul(b);
  std::cout << a << "\n" << b << "\n" << c << "\n\n";

  // Introducing and establishing the scores / weights
  cell(15);
  Tensor tril = tg::tril(tg::ones({T, T}));

  cell(16);
  std::cout << tril << "\n";

  cell(18);
  Tensor scores = tril / tg::sum(tril, 1, /*keepdim=*/true);
  std::cout << scores << "\n";

  cell(19);
  Tensor attention2 = scores.matmul(x);  // (T, T) @ (B, T, C) -> (B, T, C)

  cell(20);
  std::cout << python_bool(tg::allclose(attention2[0], attention1[0])) << "\n";

  cell(21);
  std::cout << attention1[0] << "\n";

  cell(22);
  std::cout << attention2[0] << "\n";

  // --- Version 2: using softmax ----------------------------------------------------------------
  cell(23);
  tril = tg::tril(tg::ones({T, T}));  // 8 tokens give an 8x8 matrix
  std::cout << tril << "\n";

  cell(38);
  scores = tg::zeros({T, T});

  cell(39);
  scores = scores.masked_fill(tril == 0, -tg::kInf);

  cell(40);
  std::cout << scores << "\n";

  cell(41);
  Tensor p_attn = tg::softmax(scores, -1);  // exp(0) = 1 on the past, exp(-inf) = 0 on the future
  std::cout << p_attn << "\n";

  cell(42);
  Tensor attention3 = p_attn.matmul(x);

  cell(43);
  std::cout << attention3[0] << "\n";

  cell(44);
  std::cout << python_bool(tg::allclose(attention2[0], attention3[0])) << "\n";

  // --- Version 3: self-attention, weights that depend on the data -------------------------------
  // From here on the values are ours, not the notebook's: this cell draws x without a seed, and
  // in the notebook the generator had been used by cells that are not shown (and by re-runs),
  // so its x cannot be reproduced. Every shape still matches, and the values are the ones
  // PyTorch prints when this notebook's cells are run once, top to bottom, as here.
  cell(45);
  B = 4, T = 8, C = 2;
  x = tg::randn({B, T, C});

  cell(46);
  const int64_t head_size = 3;
  auto key = std::make_shared<tg::nn::Linear>(C, head_size);
  auto query = std::make_shared<tg::nn::Linear>(C, head_size);
  auto value = std::make_shared<tg::nn::Linear>(C, head_size);
  Tensor k = key->forward(x);    // (B, T, 3)
  Tensor q = query->forward(x);  // (B, T, 3)

  cell(47);
  std::cout << torch_size(k.sizes()) << "\n";

  cell(53);
  std::cout << torch_size(k.transpose(-2, -1).sizes()) << "\n";

  cell(54);
  Tensor matmul_qk = q.matmul(k.transpose(-2, -1));  // every query against every key

  cell(55);
  std::cout << torch_size(matmul_qk.sizes()) << "\n";

  cell(59);
  std::cout << matmul_qk[0] << "\n";

  cell(60);
  scores = matmul_qk * std::pow(static_cast<double>(k.size(-1)), -0.5);  // scale: 1 / sqrt(key size)

  // The notebook shows -inf above the diagonal here: its output was recorded after the masking
  // of In [64] had been run. The code of this cell prints the scores before masking.
  cell(63);
  std::cout << scores[0] << "\n";

  cell(64);
  tril = tg::tril(tg::ones({T, T}));
  scores = scores.masked_fill(tril == 0, -tg::kInf);  // leave this out for a bi-directional effect
  std::cout << scores[0] << "\n";

  cell(65);
  p_attn = tg::softmax(scores, -1);
  std::cout << p_attn[0] << "\n";

  cell(66);
  std::cout << torch_size(p_attn.sizes()) << "\n";

  cell(67);
  Tensor v = value->forward(x);  // we aggregate the values, not the tokens: also learnable
  std::cout << torch_size(v.sizes()) << "\n";

  cell(68);
  Tensor attention = p_attn.matmul(v);

  cell(69);
  std::cout << torch_size(attention.sizes()) << "\n";

  // --- Putting it all together: the Head class above ------------------------------------------
  cell(46);
  // The notebook only defines Head; here it is built and applied once to the x of In [45]
  // (query, key and value from the same tokens: self-attention).
  Head head(/*embed_dim=*/C, /*head_size=*/head_size, /*dropout=*/0.0);
  head.keep_attention_weights = true;
  Tensor out = head.forward(x, x, x);
  std::cout << head << "\n";
  std::cout << "output " << torch_size(out.sizes()) << ", attention weights "
            << torch_size(head.attention_weights.sizes()) << "\n";
  if (!svg.empty()) {  // the tokens are random vectors: labelled by position
    tg::save_attention_heatmaps(svg, "head_attention_weights", head.attention_weights,
                                          tg::position_labels(head.attention_weights.size(-1)), true);
  }
  return 0;
}

int main(int argc, char** argv) {
  // --svg DIR: the Head's attention weights as heatmaps, one per batch element (plots.h)
  return tg::run_program_with_svg("notebook_001_self_attention",
      "Self-attention with one head, the notebook's cells in order; --svg draws the weights.", argc, argv, run);
}
