// examples/notebook_003_mha_line_by_line.cpp — the MultiHeadAttention module, line by line.
//
// The text explains the book's MultiHeadAttention class one line (or a few) at a time; that
// class is tapegrad's tg::nn::MultiHeadAttention (nn/attention.h), with the same names: W_query,
// W_key, W_value, out_proj, dropout and the buffer mask. This program builds one with a seed and
// runs its forward step by step, using the module's own layers and buffer, on a small batch: two
// sequences of six random 3-d tokens. Under each of the text's headings it prints what that line
// makes (shapes as torch.Size, values as PyTorch prints them, of the batch's first sequence, and
// the whole result). Every number is the one PyTorch prints for the book's class with the same
// seed. Then it checks that the module's own forward gives the same result, and prints the
// shapes for the input the text has in mind, (30, 50, 512) with 8 heads.
//
//   keys, queries, values = W_key(x), W_query(x), W_value(x)          (b, T, d_out)
//   split the heads: view (b, T, num_heads, head_dim), transpose(1, 2)  (b, num_heads, T, head_dim)
//   attn_scores  = queries @ keys^T, -inf where mask (above the diagonal)  (b, num_heads, T, T)
//   attn_weights = dropout(softmax(attn_scores / sqrt(head_dim)))
//   context_vec  = (attn_weights @ values) joined back to (b, T, d_out), then out_proj
#include <cmath>
#include <iostream>
#include <optional>
#include <string>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "io/flags.h"
#include "io/plots.h"
#include "examples/notebook_cells.h"
#include "nn/attention.h"

using notebook::marker;
using notebook::python_bool;
using notebook::torch_size;
using tg::Tensor;

namespace {

// Every intermediate of one forward, named as in the book's code.
struct Steps {
  int64_t b = 0, num_tokens = 0, d_in = 0;
  Tensor keys, queries, values;                    // lines 22-24  (b, T, d_out)
  Tensor keys_view, queries_view, values_view;     // lines 26-28  (b, T, num_heads, head_dim)
  Tensor keys_heads, queries_heads, values_heads;  // lines 30-32  (b, num_heads, T, head_dim)
  Tensor attn_scores;                              // line 34      (b, num_heads, T, T)
  Tensor mask_bool, mask_unsqueezed;               // lines 35-36  (T, T), (1, 1, T, T)
  Tensor masked_scores;                            // line 37      (b, num_heads, T, T)
  Tensor attn_weights;                             // lines 39-40  (b, num_heads, T, T)
  Tensor dropped_weights;                          // line 41      (b, num_heads, T, T)
  Tensor context_transposed;                       // line 43      (b, T, num_heads, head_dim)
  Tensor context_joined;                           // line 45      (b, T, d_out)
  Tensor context_vec;                              // line 46      (b, T, d_out)
};

// MultiHeadAttention::forward(x), one statement per line of the book's code, keeping everything.
Steps forward_step_by_step(tg::nn::MultiHeadAttention& mha, const Tensor& x) {
  Steps s;
  s.b = x.size(0), s.num_tokens = x.size(1), s.d_in = x.size(2);  // line 21
  const int64_t b = s.b, T = s.num_tokens;

  s.keys = mha.W_key->forward(x);  // lines 22-24
  s.queries = mha.W_query->forward(x);
  s.values = mha.W_value->forward(x);

  s.keys_view = s.keys.view({b, T, mha.num_heads, mha.head_dim});  // lines 26-28
  s.values_view = s.values.view({b, T, mha.num_heads, mha.head_dim});
  s.queries_view = s.queries.view({b, T, mha.num_heads, mha.head_dim});

  s.keys_heads = s.keys_view.transpose(1, 2);  // lines 30-32
  s.queries_heads = s.queries_view.transpose(1, 2);
  s.values_heads = s.values_view.transpose(1, 2);

  s.attn_scores = s.queries_heads.matmul(s.keys_heads.transpose(2, 3));  // line 34

  s.mask_bool = mha.mask().to_bool().slice(0, 0, T).slice(1, 0, T);  // line 35: mask.bool()[:T, :T]
  s.mask_unsqueezed = s.mask_bool.unsqueeze(0).unsqueeze(0);         // line 36
  // Line 37 writes into attn_scores in place; we do it on a copy, to keep the scores before it.
  s.masked_scores = s.attn_scores.clone();
  s.masked_scores.masked_fill_(s.mask_unsqueezed, -tg::kInf);

  s.attn_weights = tg::softmax(s.masked_scores / std::pow(static_cast<double>(s.keys_heads.size(-1)), 0.5), -1);
  s.dropped_weights = mha.dropout->forward(s.attn_weights);  // line 41

  s.context_transposed = s.dropped_weights.matmul(s.values_heads).transpose(1, 2);        // line 43
  s.context_joined = s.context_transposed.contiguous().view({b, T, mha.d_out});           // line 45
  s.context_vec = mha.out_proj->forward(s.context_joined);                                // line 46
  return s;
}

}  // namespace

// The notebook, cell by cell. svg: the folder for the pictures, or "" for none.
static int run(const std::string& svg) {
  marker("Line 1, Class Definition:");  // tg::nn::MultiHeadAttention, a tg::nn::Module

  marker("Line 2, Constructor:");
  tg::manual_seed(123);
  tg::nn::MultiHeadAttention mha(/*d_in=*/3, /*d_out=*/4, /*context_length=*/6, /*dropout=*/0.1, /*num_heads=*/2);
  std::cout << mha << "\n";

  marker("Line 3, Superclass Initialization:");  // the Module base: parameters, buffers, submodules

  marker("Line 4, Dimension Assertion:");
  // In tapegrad an error, not an assert: d_out = 5 cannot be split into 2 heads.
  try {
    tg::nn::MultiHeadAttention bad(3, 5, 6, 0.1, 2);
  } catch (const tg::Error& e) {
    std::cout << e.what() << "\n";
  }

  marker("Lines 6-14, Parameter Definitions:");
  std::cout << mha.d_out << " " << mha.num_heads << " " << mha.head_dim << "\n";  // d_out, num_heads, head_dim
  for (const auto& [name, p] : mha.named_parameters()) std::cout << name << " " << torch_size(p.sizes()) << "\n";
  std::cout << "Parameter containing:\n" << mha.W_query->weight << "\n";  // print(mha.W_query.weight)

  marker("Line 15-19, Mask Buffer Registration:");
  std::cout << mha.mask() << "\n";

  marker("Line 20, Forward Method Definition:");
  // A batch of two sequences of six 3-d tokens, drawn after the module's weights.
  Tensor x = tg::rand({2, 6, 3});  // (b, T, d_in)
  std::cout << torch_size(x.sizes()) << "\n" << x[0] << "\n";
  // Dropout draws from the generator: keep its state, to replay the same draws in mha(x) below.
  const tg::Generator generator_before_forward = tg::default_generator();
  const Steps s = forward_step_by_step(mha, x);

  marker("Line 21, Input Shape Extraction:");
  std::cout << s.b << " " << s.num_tokens << " " << s.d_in << "\n";

  marker("Lines 22-24, Query/Key/Value Projections:");
  std::cout << torch_size(s.keys.sizes()) << "\n" << s.keys[0] << "\n" << s.queries[0] << "\n" << s.values[0] << "\n";

  marker("Lines 26-28, Reshaping for Multi-Head Attention:");
  std::cout << torch_size(s.keys_view.sizes()) << "\n" << s.keys_view[0] << "\n";

  marker("Lines 30-32, Transposition for Attention Calculation:");
  std::cout << torch_size(s.keys_heads.sizes()) << "\n" << s.keys_heads[0] << "\n";

  marker("Line 34, Attention Score Calculation:");
  std::cout << torch_size(s.attn_scores.sizes()) << "\n" << s.attn_scores[0] << "\n";

  marker("Lines 35-37, Attention Mask Application:");
  std::cout << s.mask_bool << "\n" << torch_size(s.mask_unsqueezed.sizes()) << "\n" << s.masked_scores[0] << "\n";

  marker("Lines 39-41, Softmax and Dropout on Attention Scores:");
  // Each row sums to 1; dropout then zeroes about 10% of the weights and scales the rest by 1/0.9.
  std::cout << s.attn_weights[0] << "\n" << s.attn_weights[0].sum(-1) << "\n" << s.dropped_weights[0] << "\n";
  if (!svg.empty()) {  // each head's weights, before dropout
    tg::save_attention_heatmaps(svg, "mha_attention_weights", s.attn_weights,
                                          tg::position_labels(s.attn_weights.size(-1)), true);
  }

  marker("Lines 43, Context Vector Calculation:");
  // The text says (b, num_heads, T, head_dim); after transpose(1, 2) it is (b, T, num_heads, head_dim).
  std::cout << torch_size(s.context_transposed.sizes()) << "\n" << s.context_transposed[0] << "\n";

  marker("Line 45, Reshaping Context Vectors:");
  std::cout << torch_size(s.context_joined.sizes()) << "\n" << s.context_joined[0] << "\n";

  marker("Line 46, Output Projection:");
  std::cout << torch_size(s.context_vec.sizes()) << "\n" << s.context_vec << "\n";

  marker("The module's forward, in one call:");
  // With the generator rewound, dropout draws the same mask, so mha(x) is the result above.
  tg::default_generator() = generator_before_forward;
  mha.keep_attention_weights = true;
  Tensor context_vec = mha(x);
  std::cout << python_bool(tg::allclose(context_vec, s.context_vec)) << " "
            << python_bool(tg::allclose(mha.attention_weights, s.dropped_weights)) << "\n";

  marker("The text's shapes: x of (30, 50, 512), 8 heads:");
  tg::nn::MultiHeadAttention big(/*d_in=*/512, /*d_out=*/512, /*context_length=*/50, /*dropout=*/0.1, /*num_heads=*/8);
  const Steps t = forward_step_by_step(big, tg::randn({30, 50, 512}));
  for (const auto& [line, tensor] : {std::pair{"22-24", t.keys}, {"26-28", t.keys_view}, {"30-32", t.keys_heads},
                                     {"34", t.attn_scores}, {"43", t.context_transposed}, {"45", t.context_joined},
                                     {"46", t.context_vec}}) {
    std::cout << line << " " << torch_size(tensor.sizes()) << "\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  // --svg DIR: attention weights as heatmaps (io/plots.h)
  return tg::run_program_with_svg("notebook_003_mha_line_by_line",
      "Multi-head attention line by line, the notebook's cells in order; --svg draws the weights.", argc, argv, run);
}
