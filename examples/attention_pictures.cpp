// examples/attention_pictures.cpp — pictures of causal attention: the book's CausalAttention
// (seed 123, d_in 3, d_out 2) on the six tokens of "Your journey starts with one step".
//
//   attention_pictures                prints the attention weights
//   attention_pictures --svg DIR      also draws them: DIR/causal_attention_weights.svg
//                                     (docs/causal_attention_weights.svg is this picture)
//   attention_pictures --dot FILE     also writes the graph backward walks from the context
//                                     vectors, parameters named as in state_dict (dot -Tsvg FILE)
#include <iostream>

#include "autograd/graph_dot.h"
#include "autograd/ops.h"
#include "io/flags.h"
#include "io/atomic_file.h"
#include "io/plots.h"
#include "examples/your_journey.h"
#include "nn/attention.h"

using tg::Tensor;

static int run(const tg::PictureOptions& o) {
  const std::vector<std::string> tokens = tg::examples::your_journey_tokens();
  Tensor inputs = tg::examples::your_journey_inputs();  // (6, 3)
  Tensor batch = tg::stack({inputs, inputs});        // (2, 6, 3), as in the book

  tg::manual_seed(123);
  tg::nn::CausalAttention ca(3, 2, 6, 0.0);
  ca.keep_attention_weights = true;
  Tensor context_vecs = ca(batch);  // (2, 6, 2)
  std::cout << "# attention weights of the first batch element (rows: queries, columns: keys)\n"
            << ca.attention_weights[0] << "\n";

  if (!o.svg.empty()) {
    const tg::OutputFolder dir(o.svg, "--svg");
    for (const std::string& p : tg::save_attention_heatmaps(dir.path(), "causal_attention_weights",
                                                                      ca.attention_weights[0], tokens, true))
      std::cout << "(wrote " << p << ")\n";
  }
  if (!o.dot.empty()) {
    tg::TensorNames names = ca.named_parameters();  // W_query.weight, W_key.weight, W_value.weight
    names.push_back({"context_vecs", context_vecs});
    tg::write_file_atomically(o.dot, tg::graph_dot(context_vecs, names), "--dot");
    std::cout << "(wrote " << o.dot << "; draw it with: dot -Tsvg " << o.dot << " > graph.svg)\n";
  }
  return 0;
}

int main(int argc, char** argv) {
  tg::PictureOptions o;
  return tg::run_program({"attention_pictures", "Pictures of causal attention on \"Your journey starts with one step\".", tg::picture_flags(o)}, argc, argv,
                                   [&] { return run(o); });
}
