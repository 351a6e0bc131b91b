// examples/core_demo.cpp — a walk through tapegrad's core, in the spirit of the first cells of
// an attention notebook: six 3-d token embeddings attend to each other.
//
// Every printed tensor reads like its PyTorch twin; the numbers match PyTorch to 4 decimals.
//
//   core_demo                 prints the walk, writes nothing
//   core_demo --svg DIR       also draws the attention weights as heatmaps in DIR
//   core_demo --dot FILE      also writes the graph backward walks (Graphviz: dot -Tsvg FILE > graph.svg)
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>

#include "autograd/graph_dot.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "io/flags.h"
#include "io/atomic_file.h"
#include "io/plots.h"
#include "examples/your_journey.h"

using tg::Tensor;

static void show(const char* title, const Tensor& t) { std::cout << "\n# " << title << "\n" << t << "\n"; }
static void report(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) std::cout << "(wrote " << p << ")\n";
}

static int run(const tg::PictureOptions& o) {
  std::optional<tg::OutputFolder> svg_folder;  // removed again if the demo fails before writing into it
  if (!o.svg.empty()) svg_folder.emplace(o.svg, "--svg");
  const std::string svg_dir = svg_folder ? svg_folder->path() : "";
  const std::vector<std::string> tokens = tg::examples::your_journey_tokens();

  // "Your journey starts with one step": one 3-d embedding per token.
  Tensor inputs = tg::examples::your_journey_inputs();  // (6, 3)
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
    if (!svg_dir.empty()) report(tg::save_attention_heatmaps(svg_dir, "attention_weights", attn_weights, tokens, false));
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
  if (!svg_dir.empty()) report(tg::save_attention_heatmaps(svg_dir, "causal_attention_weights", causal_weights, tokens, true));
  Tensor causal_context = causal_weights.matmul(inputs);
  show("causal context vectors", causal_context);

  // Backward: a scalar loss, then the tape that backward will replay (bottom to top).
  Tensor loss = causal_context.sum();
  show("loss = sum of causal context vectors", loss);
  std::cout << "\n# the tape before backward\n" << tg::tape_str();
  if (!o.dot.empty()) {
    const tg::TensorNames names{{"inputs", inputs}, {"causal_weights", causal_weights}, {"loss", loss}};
    tg::write_file_atomically(o.dot, tg::graph_dot(loss, names), "--dot");
    std::cout << "\n(wrote the graph to " << o.dot << "; draw it with: dot -Tsvg " << o.dot
              << " > graph.svg)\n";
  }
  loss.backward();
  std::cout << "\n# the tape after backward (entries released): " << tg::tape_size() << " entries\n";
  show("d loss / d inputs", inputs.grad());
  return 0;
}

int main(int argc, char** argv) {
  tg::PictureOptions o;
  return tg::run_program({"core_demo", "A walk through tapegrad's core: six tokens attend to each other.", tg::picture_flags(o)}, argc, argv,
                                   [&] { return run(o); });
}
