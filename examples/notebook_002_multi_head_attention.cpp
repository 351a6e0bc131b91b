// examples/notebook_002_multi_head_attention.cpp — multi-head attention on batched data, cell by
// cell: q/k/v projections, the split into heads, scores, softmax, the heads joined again and an
// output projection; then the same as a MultiHeadAttention module with an optional causal mask,
// and finally extended to cross-attention (queries from a decoder, keys and values from an
// encoder, of a different length).
//
//   q = x Wq^T, k = x Wk^T, v = x Wv^T                       (batch, T, embed_dim)
//   split: (batch, T, num_heads, head_dim) -> (batch, num_heads, T, head_dim)
//   attention = softmax(q k^T / sqrt(head_dim)) v            (batch, num_heads, T_q, head_dim)
//   join:  (batch, T_q, num_heads * head_dim), then output_projection
//
// Every cell prints its label ("In [16]:") and then what the notebook's cell printed. The
// notebook never seeds the generator, so the weights and random inputs (and every value that
// depends on them) are our own; shapes and the cells built from fixed data (arange, triu, the
// literal scores) are the notebook's. (Our values are what PyTorch prints running these cells
// once, top to bottom, from the seed tapegrad's generator starts with, torch.Generator()'s.)
#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "io/flags.h"
#include "examples/notebook_cells.h"
#include "nn/layers.h"
#include "nn/module.h"

using notebook::cell;
using notebook::torch_size;
using tg::Tensor;

namespace notebook002 {

// The notebook's final MultiHeadAttention: self-attention when only q_input is given,
// cross-attention when k_input and v_input come from elsewhere; with mask = true a query
// position i does not see key positions after i.
//   q_input (batch, T_q, embed_dim), k_input and v_input (batch, T_k, embed_dim)  ->  (batch, T_q, embed_dim)
class MultiHeadAttention : public tg::nn::Module {
 public:
  MultiHeadAttention(int64_t num_heads_, int64_t embed_dim_, bool bias = false)
      : Module("MultiHeadAttention"), num_heads(num_heads_), embed_dim(embed_dim_) {
    if (num_heads <= 0 || embed_dim % num_heads != 0) {
      throw tg::Error("MultiHeadAttention: embed_dim (" + std::to_string(embed_dim) +
                      ") must be divisible by num_heads (" + std::to_string(num_heads) + ")");
    }
    head_dim = embed_dim / num_heads;
    wq = register_module("wq", std::make_shared<tg::nn::Linear>(embed_dim, embed_dim, bias));
    wk = register_module("wk", std::make_shared<tg::nn::Linear>(embed_dim, embed_dim, bias));
    wv = register_module("wv", std::make_shared<tg::nn::Linear>(embed_dim, embed_dim, bias));
    output_projection = register_module("output_projection", std::make_shared<tg::nn::Linear>(embed_dim, embed_dim));
  }

  using Module::forward;
  // k_input / v_input undefined: they are q_input (self-attention).
  Tensor forward(const Tensor& q_input, Tensor k_input = Tensor(), Tensor v_input = Tensor(), bool mask = false) {
    const int64_t batch = q_input.size(0);
    if (!k_input.defined()) k_input = q_input;
    if (!v_input.defined()) v_input = q_input;

    Tensor q = wq->forward(q_input);
    Tensor k = wk->forward(k_input);
    Tensor v = wv->forward(v_input);

    // The query and key sequences may have different lengths.
    const int64_t T_q = q_input.size(1), T_k = k_input.size(1);

    // Split embed_dim into (num_heads, head_dim): (batch, T, embed_dim) -> (batch, num_heads, T, head_dim)
    q = q.reshape({batch, T_q, num_heads, head_dim}).transpose(1, 2);
    k = k.reshape({batch, T_k, num_heads, head_dim}).transpose(1, 2);
    v = v.reshape({batch, T_k, num_heads, head_dim}).transpose(1, 2);

    Tensor k_transpose = k.transpose(-2, -1);  // (batch, num_heads, head_dim, T_k)
    Tensor score = q.matmul(k_transpose) / std::sqrt(static_cast<double>(head_dim));  // (batch, num_heads, T_q, T_k)
    Tensor mask_bool = mask ? tg::triu(tg::ones({T_q, T_k}), 1).to_bool() : tg::zeros({T_q, T_k}).to_bool();
    // Broadcasting would do without the unsqueezes; they spell out the (1, 1, T_q, T_k) shape.
    mask_bool = mask_bool.unsqueeze(0).unsqueeze(0);
    score = score.masked_fill(mask_bool, -tg::kInf);
    Tensor attention_score = tg::softmax(score, -1);
    if (keep_attention_weights) attention_weights = attention_score.detach();
    Tensor attention = attention_score.matmul(v);  // (batch, num_heads, T_q, head_dim)

    // Concatenate the heads: (batch, T_q, num_heads, head_dim) -> (batch, T_q, embed_dim)
    attention = attention.transpose(1, 2).reshape({batch, T_q, embed_dim});
    // The heads are only placed side by side; the projection mixes them.
    return output_projection->forward(attention);
  }

  int64_t num_heads, embed_dim, head_dim;
  std::shared_ptr<tg::nn::Linear> wq, wk, wv, output_projection;
  bool keep_attention_weights = false;  // keep the last forward's attention_score below
  Tensor attention_weights;             // (batch, num_heads, T_q, T_k)
};

namespace first_version {

// The notebook's first MultiHeadAttention (In [None]): self-attention only, on sequences of a
// fixed seq_length, masked or not as chosen at construction. It is the final version's
// self-attention case, which is how it is written here: the same layers in the same order (so
// the same weights from the same seed) and the same forward.
class MultiHeadAttention : public notebook002::MultiHeadAttention {
 public:
  MultiHeadAttention(int64_t num_heads, int64_t embed_dim, int64_t seq_length_, bool bias = false, bool mask = false)
      : notebook002::MultiHeadAttention(num_heads, embed_dim, bias), seq_length(seq_length_), require_mask(mask) {
    std::cout << "All parameters are set for multihead attention\n";
  }

  Tensor forward(const Tensor& batched_input_data) override {
    if (batched_input_data.dim() != 3 || batched_input_data.size(1) != seq_length) {
      throw tg::Error("MultiHeadAttention: expected input of shape (batch, " + std::to_string(seq_length) + ", " +
                      std::to_string(embed_dim) + "), got " + tg::shape_str(batched_input_data.sizes()));
    }
    return notebook002::MultiHeadAttention::forward(batched_input_data, Tensor(), Tensor(), require_mask);
  }

  int64_t seq_length;
  bool require_mask;
};

}  // namespace first_version
}  // namespace notebook002

// A tuple of torch.Size as Python prints it: on one line when it fits in 80 columns, else one
// item per line.
static void print_sizes(const Tensor& a, const Tensor& b, const Tensor& c) {
  const std::string one_line = std::string("(") + torch_size(a.sizes()) + ", " + torch_size(b.sizes()) + ", " +
                               torch_size(c.sizes()) + ")";
  if (one_line.size() <= 80) {
    std::cout << one_line << "\n";
  } else {
    std::cout << "(" << torch_size(a.sizes()) << ",\n " << torch_size(b.sizes()) << ",\n " << torch_size(c.sizes())
              << ")\n";
  }
}

// The notebook, cell by cell.
static int run() {
  cell(2);  // imports

  // Input of 20 samples, seq_length = 10, embed_dim = 8
  cell(16);
  int64_t n = 20, seq_len = 10, embed_dim = 8, batch = 2, no_head = 2;
  Tensor input_data = tg::arange(n * seq_len * embed_dim).to_float().reshape({n, seq_len, embed_dim});
  std::cout << torch_size(input_data.sizes()) << "\n";

  // wq, wk, wv of shape (embed_dim, embed_dim): the output keeps input_data's (batch, seq_len, embed_dim)
  cell(17);
  auto wq = std::make_shared<tg::nn::Linear>(embed_dim, embed_dim, false);
  auto wk = std::make_shared<tg::nn::Linear>(embed_dim, embed_dim, false);
  auto wv = std::make_shared<tg::nn::Linear>(embed_dim, embed_dim, false);
  print_sizes(wq->weight, wv->weight, wk->weight);

  // q, k, v of the first two samples
  cell(18);
  Tensor first_two = input_data.slice(0, 0, 2);  // input_data[:2]
  Tensor q = wq->forward(first_two), k = wk->forward(first_two), v = wv->forward(first_two);
  print_sizes(q, k, v);

  // Split the data between the heads: each head gets embed_dim / no_head of every token
  cell(22);
  // (The notebook asserts embed_dim / no_head, which is only nonzero; the remainder is what matters.)
  if (embed_dim % no_head != 0) throw tg::Error("embed_dim / no_head should leave remainder 0.");
  // As in the notebook, a plain reshape; the module below splits the embedding dim with
  // reshape + transpose instead, so that each head sees all seq_len positions of its own slice.
  q = q.reshape({batch, no_head, seq_len, embed_dim / no_head});
  k = k.reshape({batch, no_head, seq_len, embed_dim / no_head});
  v = v.reshape({batch, no_head, seq_len, embed_dim / no_head});
  print_sizes(q, k, v);

  // Attention score = softmax(Q K^T / sqrt(d)); attention = score V
  cell(33);
  Tensor K_transpose = k.transpose(-2, -1);  // swap only seq_length and the embedding dim
  const int64_t head_dim = embed_dim / no_head;
  // dim = -1: the softmax runs along the keys' seq_length axis
  // (batch, num_head, seq_length, head_dim) @ (batch, num_head, head_dim, seq_length) = (batch, num_head, seq_length, seq_length)
  Tensor attention_score = tg::softmax(q.matmul(K_transpose) / std::sqrt(static_cast<double>(head_dim)), -1);
  // (batch, num_head, seq_length, seq_length) @ (batch, num_head, seq_length, head_dim) = (batch, num_head, seq_length, head_dim)
  Tensor attention = attention_score.matmul(v);
  std::cout << attention << "\n";

  // Combine the heads: (batch, num_head, seq_length, head_dim) -> (batch, seq_length, num_head, head_dim)
  // -> (batch, seq_length, num_head * head_dim)
  cell(41);
  // The notebook prints torch.Size([2, 10, 8]) twice: its output comes from running this cell a
  // second time, when attention had already been reshaped. Run once, the first shape is the
  // heads' (2, 2, 10, 4).
  std::cout << torch_size(attention.sizes()) << "\n";
  attention = attention.transpose(2, 1);
  attention = attention.reshape({batch, seq_len, embed_dim});
  std::cout << torch_size(attention.sizes()) << "\n\n";

  // Final linear projection: mixing information across the heads
  cell(47);
  auto output_projection = std::make_shared<tg::nn::Linear>(embed_dim, embed_dim);
  Tensor mha_output = output_projection->forward(attention);

  cell("None");  // the first MultiHeadAttention class (notebook002::first_version above)

  cell(91);
  notebook002::first_version::MultiHeadAttention mha_10(/*num_heads=*/2, /*embed_dim=*/10, /*seq_length=*/8);
  std::cout << "\n";

  cell(95);
  {
    const int64_t batch_size = 2;
    Tensor data = tg::randn({100, 10, 8});
    // The notebook's DataLoader(TensorDataset(data), batch_size=2) without shuffling: the first
    // batch is data[0:2].
    notebook002::first_version::MultiHeadAttention mha(/*num_heads=*/2, /*embed_dim=*/8, /*seq_length=*/10);
    // Iterating a DataLoader first draws a 64-bit base seed (for its workers) from the generator.
    tg::default_generator().random64();
    Tensor x = data.slice(0, 0, batch_size);  // (2, 10, 8)
    Tensor out = mha.forward(x);               // (2, 10, 8)
    std::cout << torch_size(out.sizes()) << "\n" << out << "\n\n";
  }

  cell(60);
  n = 20, seq_len = 10, embed_dim = 8, batch = 2, no_head = 2;
  input_data = tg::arange(n * seq_len * embed_dim).to_float().reshape({n, seq_len, embed_dim});
  std::cout << torch_size(input_data.sizes()) << "\n";

  cell(81);  // the causal mask: true where a position would look ahead
  std::cout << tg::triu(tg::ones({6, 6}), 1).to_bool() << "\n";

  cell(82);
  Tensor scores = tg::tensor({{0.1, 0.3, 0.5, 0.7},  //
                              {0.2, 0.4, 0.6, 0.8},
                              {0.9, 0.1, 0.2, 0.3},
                              {0.3, 0.4, 0.5, 0.6}});

  cell(87);
  Tensor mask = tg::triu(tg::ones({4, 4}), 1).to_bool();
  std::cout << mask << "\n";

  cell(88);
  std::cout << scores.masked_fill(mask, -tg::kInf) << "\n";

  cell(89);  // no mask: nothing is hidden
  std::cout << tg::zeros({5, 5}).to_bool() << "\n";

  // Three kinds of attention in a transformer: multi-head, masked multi-head and cross
  // multi-head. For the last, forward takes (q_input, k_input, v_input) and the query and key
  // lengths may differ: that is the final class, notebook002::MultiHeadAttention above.
  cell(2);

  // Testing cross-attention with a simple example
  cell(3);
  {
    // 1. hyperparameters
    const int64_t batch_size = 32, embed_dim = 256, num_heads = 8;
    const int64_t decoder_seq_len = 15;  // the length of the target sequence
    const int64_t encoder_seq_len = 20;  // the length of the source sequence
    // 2. the layer
    notebook002::MultiHeadAttention mha_layer(/*num_heads=*/num_heads, /*embed_dim=*/embed_dim);
    // 3. the data: the decoder's input (the partial translation) gives the queries ...
    Tensor decoder_input = tg::randn({batch_size, decoder_seq_len, embed_dim});
    // ... the encoder's output, the context, gives the keys and values
    Tensor encoder_output = tg::randn({batch_size, encoder_seq_len, embed_dim});

    std::cout << "--- Testing Cross-Attention ---\n";
    std::cout << "Query Input Shape (from decoder):      " << torch_size(decoder_input.sizes()) << "\n";
    std::cout << "Key/Value Input Shape (from encoder):  " << torch_size(encoder_output.sizes()) << "\n\n";

    Tensor output = mha_layer.forward(/*q_input=*/decoder_input, /*k_input=*/encoder_output, /*v_input=*/encoder_output);

    std::cout << "Final Output Shape: " << torch_size(output.sizes()) << "\n";
    std::cout << "\nNotice the output sequence length matches the query's sequence length.\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  return tg::run_program(
      {"notebook_002_multi_head_attention", "Multi-head attention, the notebook's cells in order.", {}}, argc, argv, run);
}
