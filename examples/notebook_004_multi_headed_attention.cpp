// examples/notebook_004_multi_headed_attention.cpp — "Encoder-Decoder Attention and
// Multi-headed Attention", cell by cell.
//
// An Attention module whose queries, keys and values may come from different encodings (self-
// attention when they are the same, encoder-decoder attention when they are not), with an
// optional mask filled with -1e9, and multi-headed attention as several such heads whose
// outputs are concatenated. Three tokens of two dimensions, seed 42.
//
//   q = W_q(q_enc), k = W_k(k_enc), v = W_v(v_enc)          (tokens, d_model) each
//   probs = softmax(q k^T / sqrt(d_model)) along col_dim    (tokens, tokens), masked entries -1e9
//   out   = probs @ v                                       (tokens, d_model)
//   multi-headed: cat(head_1, ..., head_n) along col_dim    (tokens, n * d_model)
//
// Every cell prints its label ("In [20]:") and then what the notebook's cell printed; every
// number of cells 17 to 34 is the notebook's.
#include <cmath>
#include <iostream>
#include <optional>
#include <memory>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "io/flags.h"
#include "io/plots.h"
#include "examples/notebook_cells.h"
#include "nn/layers.h"
#include "nn/module.h"

using notebook::cell;
using notebook::print_generator;
using tg::Tensor;

constexpr int SEED = 42;  // the notebook's SEED

// Self-attention or masked self-attention, as the notebook's class. row_dim and col_dim name
// the token dims of the (tokens, d_model) encodings: keys are transposed over them and the
// softmax runs along col_dim.
class Attention : public tg::nn::Module {
 public:
  explicit Attention(int64_t d_model_, int64_t row_dim_ = 0, int64_t col_dim_ = 1)
      : Module("Attention"), row_dim(row_dim_), col_dim(col_dim_), d_model(d_model_) {
    W_q = register_module("W_q", std::make_shared<tg::nn::Linear>(d_model, d_model, false));
    W_k = register_module("W_k", std::make_shared<tg::nn::Linear>(d_model, d_model, false));
    W_v = register_module("W_v", std::make_shared<tg::nn::Linear>(d_model, d_model, false));
  }

  // mask: bool, true where a query must not see a key; undefined for no mask.
  using Module::forward;
  Tensor forward(const Tensor& q_encodings_matrix, const Tensor& k_encodings_matrix,
                 const Tensor& v_encodings_matrix, const Tensor& mask = Tensor()) {
    // the query, key and value matrices from their encodings and weights
    Tensor q = W_q->forward(q_encodings_matrix);
    Tensor k = W_k->forward(k_encodings_matrix);
    Tensor v = W_v->forward(v_encodings_matrix);

    Tensor similarity_scores = tg::matmul(q, k.transpose(row_dim, col_dim));
    Tensor scaled_similarity_scores = similarity_scores / std::pow(static_cast<double>(k.size(-1)), 0.5);

    // A large negative number instead of -inf: exp(-1e9 - max) is exactly 0 in float32 as well.
    if (mask.defined()) scaled_similarity_scores = scaled_similarity_scores.masked_fill(mask, -1e9);

    Tensor attention_probs = tg::softmax(scaled_similarity_scores, col_dim);
    if (keep_attention_weights) attention_weights = attention_probs.detach();
    return attention_probs.matmul(v);
  }

  int64_t row_dim, col_dim, d_model;
  std::shared_ptr<tg::nn::Linear> W_q, W_k, W_v;
  bool keep_attention_weights = false;  // keep the last forward's probs (tokens, tokens) below
  Tensor attention_weights;
};

// num_heads Attention heads on the same encodings, their outputs concatenated along col_dim.
class MultiHeadedAttention : public tg::nn::Module {
 public:
  explicit MultiHeadedAttention(int64_t d_model_, int64_t row_dim_ = 0, int64_t col_dim_ = 1, int64_t num_heads = 1)
      : Module("MultiHeadedAttention"), row_dim(row_dim_), col_dim(col_dim_), d_model(d_model_) {
    heads = register_module("heads", std::make_shared<tg::nn::ModuleList>());
    for (int64_t h = 0; h < num_heads; ++h) heads->push_back(std::make_shared<Attention>(d_model, row_dim, col_dim));
  }

  using Module::forward;
  Tensor forward(const Tensor& q_encodings_matrix, const Tensor& k_encodings_matrix,
                 const Tensor& v_encodings_matrix, const Tensor& mask = Tensor()) {
    (void)mask;  // as in the notebook, the heads are called without the mask
    std::vector<Tensor> multi_headed_attention_scores;
    for (const auto& head : heads->children()) {
      multi_headed_attention_scores.push_back(
          dynamic_cast<Attention&>(*head).forward(q_encodings_matrix, k_encodings_matrix, v_encodings_matrix));
    }
    // concatenate the heads' outputs
    return tg::cat(multi_headed_attention_scores, col_dim);
  }

  Attention& head(size_t i) const { return dynamic_cast<Attention&>(*(*heads)[i]); }

  int64_t row_dim, col_dim, d_model;
  std::shared_ptr<tg::nn::ModuleList> heads;
};

// The notebook, cell by cell. svg: the folder for the pictures, or "" for none.
static int run(const std::string& svg) {
  cell(1);  // imports, SEED = 42
  cell(2);  // class Attention (above)
  cell(3);  // class MultiHeadedAttention (above)

  // The input encodings for self-attention, masked self-attention and multi-headed attention
  cell(4);
  Tensor q_encodings_matrix = tg::tensor({{1.16, 0.23}, {0.57, 1.36}, {4.41, -2.16}});
  Tensor k_encodings_matrix = tg::tensor({{1.16, 0.23}, {0.57, 1.36}, {4.41, -2.16}});
  Tensor v_encodings_matrix = tg::tensor({{1.16, 0.23}, {0.57, 1.36}, {4.41, -2.16}});

  cell(17);  // set the seed before building the module, so its weights are the notebook's
  tg::manual_seed(SEED);
  print_generator(tg::default_generator());

  // --- Testing the Attention class: self-attention ----------------------------------------------
  cell(18);
  Attention self_attention(/*d_model=*/2, /*row_dim=*/0, /*col_dim=*/1);
  self_attention.keep_attention_weights = true;

  cell(19);
  Tensor attention_scores = self_attention.forward(q_encodings_matrix, k_encodings_matrix, v_encodings_matrix);

  cell(20);
  std::cout << attention_scores << "\n";
  if (!svg.empty()) {
    tg::save_attention_heatmaps(svg, "self_attention_weights", self_attention.attention_weights,
                                          tg::position_labels(self_attention.attention_weights.size(-1)), false);
  }

  // --- Masked self-attention ---------------------------------------------------------------------
  cell(22);
  const int64_t n = q_encodings_matrix.size(0);
  Tensor mask = tg::tril(tg::ones({n, n}));
  std::cout << mask << "\n";

  cell(23);
  mask = mask == 0;  // true above the diagonal: a token does not see the ones after it
  std::cout << mask << "\n";

  cell(29);
  Tensor masked_attention_scores =
      self_attention.forward(q_encodings_matrix, k_encodings_matrix, v_encodings_matrix, mask);

  cell(30);
  std::cout << masked_attention_scores << "\n";

  // --- Multi-headed self-attention ---------------------------------------------------------------
  cell(31);
  tg::manual_seed(42);
  print_generator(tg::default_generator());

  cell(32);
  // Head 0 draws its weights first from the same seed, so it is self_attention again: the first
  // two columns of the result below equal In [20].
  MultiHeadedAttention multi_headed_attention(/*d_model=*/2, /*row_dim=*/0, /*col_dim=*/1, /*num_heads=*/2);

  cell(33);
  Tensor mha_scores = multi_headed_attention.forward(q_encodings_matrix, k_encodings_matrix, v_encodings_matrix);

  cell(34);
  std::cout << mha_scores << "\n";
  return 0;
}

int main(int argc, char** argv) {
  // --svg DIR: attention weights as heatmaps (io/plots.h)
  return tg::run_program_with_svg("notebook_004_multi_headed_attention",
      "Multi-headed attention from single heads, the notebook's cells in order; --svg draws the weights.", argc, argv, run);
}
