// examples/core_demo.cpp — a walk through tapegrad's core, in the spirit of the first cells of
// an attention notebook: six 3-d token embeddings attend to each other.
//
// Every printed tensor reads like its PyTorch twin; the numbers match PyTorch to 4 decimals.
#include <cmath>
#include <iostream>

#include "autograd/ops.h"
#include "autograd/tape.h"

using tg::Tensor;

static void show(const char* title, const Tensor& t) { std::cout << "\n# " << title << "\n" << t << "\n"; }

int main() {
  // "Your journey starts with one step": one 3-d embedding per token.
  Tensor inputs = tg::tensor({{0.43, 0.15, 0.89},    // Your     (x^1)
                              {0.55, 0.87, 0.66},    // journey  (x^2)
                              {0.57, 0.85, 0.64},    // starts   (x^3)
                              {0.22, 0.58, 0.33},    // with     (x^4)
                              {0.77, 0.25, 0.10},    // one      (x^5)
                              {0.05, 0.80, 0.55}});  // step     (x^6)
  inputs.requires_grad_();  // so we can ask how the context vectors depend on the embeddings
  show("inputs (6 tokens, 3 dims)", inputs);

  // Attention scores: the dot product of every pair of tokens. inputs.t() is a view (no copy);
  // matmul hands BLIS its strides.
  Tensor attn_scores = inputs.matmul(inputs.t());
  show("attention scores = inputs @ inputs.T", attn_scores);

  {
    // Attention weights: each row normalised with softmax, so it sums to 1.
    Tensor attn_weights = attn_scores.softmax(-1);
    show("attention weights = softmax(scores, dim=-1)", attn_weights);
    show("row sums", attn_weights.sum(-1));

    // Context vectors: for each token, the weighted sum of all token embeddings.
    Tensor all_context_vecs = attn_weights.matmul(inputs);
    show("context vectors = weights @ inputs", all_context_vecs);
  }  // these tensors, and their tape entries, are gone here: the tape only holds what is alive

  // Causal attention: a token may only look at itself and the tokens before it. Mask the
  // future with -inf before the softmax, so those weights become exactly 0.
  const int64_t context_length = attn_scores.size(0);
  Tensor mask = tg::triu(tg::ones({context_length, context_length}), 1) == 1;
  show("causal mask (True = hidden)", mask);
  Tensor masked = attn_scores.masked_fill(mask, -INFINITY);
  show("masked scores", masked);
  Tensor causal_weights = masked.softmax(-1);
  show("causal attention weights", causal_weights);
  Tensor causal_context = causal_weights.matmul(inputs);
  show("causal context vectors", causal_context);

  // Backward: a scalar loss, then the tape that backward will replay (bottom to top).
  Tensor loss = causal_context.sum();
  show("loss = sum of causal context vectors", loss);
  std::cout << "\n# the tape before backward\n" << tg::tape_str();
  loss.backward();
  std::cout << "\n# the tape after backward (entries released): " << tg::tape_size() << " entries\n";
  show("d loss / d inputs", inputs.grad());
  return 0;
}
