// examples/gradcheck_layers.cpp — every layer of tg::nn gradient-checked in float64, and every
// masked attention checked for mask leakage.
//
//   ./build/examples/gradcheck_layers              the two tables; exit status 1 if a row fails
//   ./build/examples/gradcheck_layers --leaky-demo  the leakage check on an attention whose
//                                                   causal mask is off: it must FAIL (exit 1)
//   TG_FAST_KERNELS=0 ./build/examples/gradcheck_layers   the same on the reference code (the
//                                                   notebook's steps, no fused ops); it says which ran
//
// Gradient check (tg::nn::gradcheck, nn/gradcheck.h): for each layer, the Jacobian of its output
// with respect to every parameter and every input that requires grad, by central differences
// in float64 against the tape's one backward per output element. Dropout in training is
// checked with the generator replayed, so every evaluation sees the same mask.
//
// Mask leakage: output position t of a causal attention must not depend on input positions
// t' > t, nor on padded keys, nor on another batch row. For each output element (n, t, c) one
// backward of the one-hot gradient gives row (n, t, c) of the Jacobian; every entry at a
// position the output may not see must be exactly 0. A query whose keys are all padded must
// give finite values, forward and backward.
//
// Layers, sizes and seeds are fixed: the run is the same every time and takes about a second.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "io/flags.h"
#include "models/llama.h"
#include "nn/gradcheck.h"
#include "nn/nn.h"

using tg::Tensor;
using namespace tg::nn;

// A GPT-style transformer block, pre-LayerNorm with residuals (C = d):
//   x = x + att(norm1(x))      att: causal MultiHeadAttention(C, C)
//   x = x + ff(norm2(x))       ff: Linear(C, 4C) -> GELU(tanh) -> Linear(4C, C)
struct Block : Module {
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<MultiHeadAttention> att;
  std::shared_ptr<Sequential> ff;
  Block(int64_t d, int64_t context_length, int64_t num_heads) : Module("Block") {
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(d));
    att = register_module("att", std::make_shared<MultiHeadAttention>(d, d, context_length, 0.0, num_heads));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(d));
    ff = register_module("ff", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
                                   std::make_shared<Linear>(d, 4 * d), std::make_shared<GELU>("tanh"),
                                   std::make_shared<Linear>(4 * d, d)}));
  }
  Tensor forward(const Tensor& x) override {  // x (B,T,C) -> (B,T,C)
    Tensor h = x + att->forward(norm1->forward(x));
    return h + ff->forward(norm2->forward(h));
  }
};

// The attention of today's small models (models/llama.h), C = 8, 4 query heads sharing 2 kv heads:
//   qwen2: biases on q, k and v, head_dim 2 = C / h;   qwen3: QK-norm, head_dim 6 (not C / h)
tg::models::LlamaConfig small_llama(const std::string& model_type) {
  tg::models::LlamaConfig c;
  c.model_type = model_type;
  c.vocab_size = 11;
  c.hidden_size = 8;
  c.intermediate_size = 12;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = model_type == "qwen3" ? 6 : 2;
  c.max_position_embeddings = 16;
  c.qkv_bias = model_type == "qwen2";
  c.qk_norm = model_type == "qwen3";
  return c;
}

// x (B,T,C) -> the attention at positions 0..T-1 with padded keys: RoPE's cos and sin of those
// positions in x's dtype, passed as the model passes them.
std::function<Tensor(const std::vector<Tensor>&)> padded_attention(tg::models::LlamaAttention& layer,
                                                                   const Tensor& key_padding_mask) {
  return [&layer, key_padding_mask](const std::vector<Tensor>& in) {
    const auto [cos, sin] = layer.rotary_emb.cos_sin(0, in[0].size(1), in[0].dtype());
    return layer.forward(in[0], cos, sin, nullptr, key_padding_mask);
  };
}

// --- the gradient-check table ---------------------------------------------------------------------

struct GradRow {
  std::string layer, inputs;
  int64_t parameters = 0;
  double abs_error = 0, rel_error = 0;
  bool passed = false;
};

std::vector<GradRow> grad_rows;

// Checks m w.r.t. its parameters and the inputs that require grad (`inputs` says which).
void check(const std::string& layer, Module& m, const std::vector<Tensor>& in, const std::string& inputs,
           const tg::GradcheckFn& forward = {}) {
  const tg::GradcheckResult r = tg::nn::gradcheck(m, in, forward);
  if (!r.passed) std::cout << layer << ": " << r << "\n";
  grad_rows.push_back({layer, inputs, m.num_parameters(), r.max_abs_error, r.max_rel_error, r.passed});
}

Tensor randn64(const tg::Shape& shape) { return tg::randn(shape, nullptr, tg::kFloat64).requires_grad_(); }

void check_layers() {
  tg::manual_seed(2024);
  Linear linear(4, 3), linear_no_bias(4, 3, false);
  check("Linear(4, 3)", linear, {randn64({2, 4})}, "x (2,4)");
  check("Linear(4, 3, bias=false)", linear_no_bias, {randn64({2, 4})}, "x (2,4)");
  Embedding embedding(6, 3);
  check("Embedding(6, 3)", embedding, {tg::tensor({{0, 2, 5}, {1, 2, 2}})}, "- (int64 indices)");
  LayerNorm layer_norm(5);
  check("LayerNorm(5)", layer_norm, {randn64({3, 5})}, "x (3,5)");
  Dropout dropout_eval(0.3), dropout_train(0.3);
  dropout_eval.eval();
  check("Dropout(0.3), eval", dropout_eval, {randn64({3, 4})}, "x (3,4)");
  check("Dropout(0.3), training", dropout_train, {randn64({3, 4})}, "x (3,4), mask replayed");
  GELU gelu, gelu_tanh("tanh");
  check("GELU()", gelu, {randn64({3, 4})}, "x (3,4)");
  check("GELU('tanh')", gelu_tanh, {randn64({3, 4})}, "x (3,4)");
  ReLU relu;
  check("ReLU()", relu, {randn64({3, 4})}, "x (3,4)");
  Softmax softmax(-1);
  check("Softmax(-1)", softmax, {randn64({3, 4})}, "x (3,4)");
  Sequential mlp{std::make_shared<Linear>(4, 8), std::make_shared<GELU>("tanh"), std::make_shared<Linear>(8, 2)};
  check("Sequential(Linear, GELU, Linear)", mlp, {randn64({3, 4})}, "x (3,4)");

  SelfAttention_v1 sa1(3, 2);
  check("SelfAttention_v1(3, 2)", sa1, {randn64({4, 3})}, "x (4,3)");
  SelfAttention_v2 sa2(3, 2, true);
  check("SelfAttention_v2(3, 2, qkv_bias)", sa2, {randn64({4, 3})}, "x (4,3)");
  CausalAttention causal(3, 2, 6, 0.0), causal_dropout(3, 2, 6, 0.5);
  check("CausalAttention(3, 2, 6)", causal, {randn64({2, 4, 3})}, "x (2,4,3)");
  check("CausalAttention, dropout 0.5, training", causal_dropout, {randn64({2, 4, 3})}, "x (2,4,3), mask replayed");
  MultiHeadAttentionWrapper wrapper(3, 2, 6, 0.0, 2);
  check("MultiHeadAttentionWrapper(3, 2, 6, 2 heads)", wrapper, {randn64({2, 4, 3})}, "x (2,4,3)");
  MultiHeadAttention mha(4, 4, 6, 0.0, 2, true), mha_dropout(4, 4, 6, 0.2, 2);
  check("MultiHeadAttention(4, 4, 6, 2 heads)", mha, {randn64({2, 4, 4})}, "x (2,4,4)");
  check("MultiHeadAttention, not causal", mha, {randn64({2, 4, 4})}, "x (2,4,4)",
        [&](const std::vector<Tensor>& in) { return mha.forward(in[0], {.causal = false}); });
  // batch row 1: every key padded
  const Tensor padded = tg::tensor({{false, true, false, false, true}, {true, true, true, true, true}});
  check("MultiHeadAttention, cross, causal + padding", mha, {randn64({2, 3, 4}), randn64({2, 5, 4})},
        "x (2,3,4), kv (2,5,4)", [&](const std::vector<Tensor>& in) {
          return mha.forward(in[0], {.kv = in[1], .causal = true, .key_padding_mask = padded});
        });
  check("MultiHeadAttention, cross + padding, dropout", mha_dropout, {randn64({2, 3, 4}), randn64({2, 5, 4})},
        "x, kv, mask replayed", [&](const std::vector<Tensor>& in) {
          return mha_dropout.forward(in[0], {.kv = in[1], .causal = false, .key_padding_mask = padded});
        });
  Block block(8, 6, 2);
  check("GPT block (pre-LN, causal MHA, GELU FF)", block, {randn64({2, 4, 8})}, "x (2,4,8)");

  // the blocks of today's small models (Llama, Qwen)
  RMSNorm rms_norm(5, 1e-6);
  check("RMSNorm(5)", rms_norm, {randn64({3, 5})}, "x (3,5)");
  SiLU silu;
  check("SiLU()", silu, {randn64({3, 4})}, "x (3,4)");
  tg::models::LlamaMLP swiglu(4, 6);
  check("SwiGLU feed-forward (LlamaMLP 4 -> 6)", swiglu, {randn64({2, 3, 4})}, "x (2,3,4)");
  tg::models::LlamaAttention gqa(small_llama("qwen2")), qk_norm(small_llama("qwen3"));
  check("Grouped-query attention, RoPE, qkv biases", gqa, {randn64({2, 4, 8})}, "x (2,4,8)");
  check("Qwen3 attention, QK-norm, head_dim 6", qk_norm, {randn64({2, 4, 8})}, "x (2,4,8)");
  tg::models::LlamaDecoderLayer layer(small_llama("qwen3"));
  check("Qwen3 decoder layer (RMSNorm, GQA, SwiGLU)", layer, {randn64({2, 4, 8})}, "x (2,4,8)");
}

// --- the mask-leakage table -------------------------------------------------------------------------

// May output position (n, t) depend on position (n2, t2) of input k?
using MaySee = std::function<bool(size_t k, int64_t n, int64_t t, int64_t n2, int64_t t2)>;

struct LeakRow {
  std::string layer;
  int64_t forbidden = 0;     // Jacobian entries that must be exactly 0
  double worst = 0;          // the largest |entry| among them
  bool finite = true;        // output and every gradient free of NaN and Inf
  bool passed = false;
};

std::vector<LeakRow> leak_rows;

bool all_finite(const Tensor& t) {
  for (double v : t.tolist<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

// Output y (b, T, C) = forward(inputs), each input (b, T_k, d) requiring grad. One backward per
// output element (n, t, c); every entry of the inputs' gradients at a position (n2, t2) that
// may_see refuses must be exactly zero.
void check_leakage(const std::string& layer, Module& m, const std::vector<Tensor>& inputs,
                   const std::function<Tensor(const std::vector<Tensor>&)>& forward, const MaySee& may_see) {
  LeakRow row{layer};
  m.zero_grad();
  Tensor y = forward(inputs);
  row.finite = all_finite(y);
  const int64_t B = y.size(0), T = y.size(1), C = y.size(2);
  for (int64_t n = 0; n < B; ++n) {
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t c = 0; c < C; ++c) {
        std::vector<double> one_hot(static_cast<size_t>(y.numel()), 0.0);
        one_hot[static_cast<size_t>((n * T + t) * C + c)] = 1.0;
        for (const Tensor& x : inputs) x.zero_grad();
        y.backward(tg::from_vector(one_hot, y.sizes(), y.dtype()), /*retain_graph=*/true);
        for (size_t k = 0; k < inputs.size(); ++k) {
          const Tensor g = inputs[k].grad();  // (b, T_k, d)
          const std::vector<double> values = g.tolist<double>();
          const int64_t T_k = g.size(1), d = g.size(2);
          for (size_t i = 0; i < values.size(); ++i) {
            row.finite = row.finite && std::isfinite(values[i]);
            const int64_t n2 = static_cast<int64_t>(i) / (T_k * d), t2 = static_cast<int64_t>(i) / d % T_k;
            if (may_see(k, n, t, n2, t2)) continue;
            ++row.forbidden;
            row.worst = std::max(row.worst, std::abs(values[i]));
          }
        }
      }
    }
  }
  for (const Tensor& p : m.parameters()) row.finite = row.finite && all_finite(p.grad());
  m.zero_grad();
  row.passed = row.forbidden > 0 && row.worst == 0 && row.finite;
  leak_rows.push_back(row);
}

Tensor randn32(const tg::Shape& shape) { return tg::randn(shape).requires_grad_(); }

// Output t sees inputs t2 <= t of its own batch row (a causal self-attention, a GPT block).
bool causal_self(size_t, int64_t n, int64_t t, int64_t n2, int64_t t2) { return n2 == n && t2 <= t; }

void check_masks(bool leaky_demo) {
  tg::manual_seed(7);
  MultiHeadAttention mha(4, 4, 6, 0.0, 2);
  if (leaky_demo) {  // the causal mask is off, but the check demands it
    check_leakage("MultiHeadAttention, causal off (demo)", mha, {randn32({2, 4, 4})},
                  [&](const std::vector<Tensor>& in) { return mha.forward(in[0], {.causal = false}); }, causal_self);
    return;
  }
  auto one_input = [](Module& m) { return [&m](const std::vector<Tensor>& in) { return m.forward(in[0]); }; };
  CausalAttention causal(3, 2, 6, 0.0);
  check_leakage("CausalAttention", causal, {randn32({2, 5, 3})}, one_input(causal), causal_self);
  MultiHeadAttentionWrapper wrapper(3, 2, 6, 0.0, 2);
  check_leakage("MultiHeadAttentionWrapper", wrapper, {randn32({2, 5, 3})}, one_input(wrapper), causal_self);
  check_leakage("MultiHeadAttention", mha, {randn32({2, 5, 4})}, one_input(mha), causal_self);

  // key j of batch row n is padding where padding_mask[n][j]; row 1 is all padding
  const Tensor padding_mask = tg::tensor({{false, true, false, false, true}, {true, true, true, true, true}});
  auto padded = [&](int64_t n, int64_t j) { return padding_mask.at({n, j}) != 0; };
  check_leakage("MultiHeadAttention, causal + padding", mha, {randn32({2, 5, 4})},
                [&](const std::vector<Tensor>& in) { return mha.forward(in[0], {.key_padding_mask = padding_mask}); },
                [&](size_t, int64_t n, int64_t t, int64_t n2, int64_t t2) {
                  return n2 == n && (t2 == t || (t2 < t && !padded(n, t2)));  // its own query, visible keys
                });
  // cross-attention: x (queries) at its own position only; kv at visible, unpadded keys
  auto cross = [&](bool causal_mask) {
    return [&, causal_mask](size_t k, int64_t n, int64_t t, int64_t n2, int64_t t2) {
      if (n2 != n) return false;
      if (k == 0) return t2 == t;
      return !padded(n, t2) && (!causal_mask || t2 <= t);
    };
  };
  check_leakage("MultiHeadAttention, cross, causal + padding", mha, {randn32({2, 3, 4}), randn32({2, 5, 4})},
                [&](const std::vector<Tensor>& in) {
                  return mha.forward(in[0], {.kv = in[1], .key_padding_mask = padding_mask});
                },
                cross(true));
  check_leakage("MultiHeadAttention, cross, padding", mha, {randn32({2, 3, 4}), randn32({2, 5, 4})},
                [&](const std::vector<Tensor>& in) {
                  return mha.forward(in[0], {.kv = in[1], .causal = false, .key_padding_mask = padding_mask});
                },
                cross(false));
  Block block(8, 6, 2);
  check_leakage("GPT block", block, {randn32({2, 5, 8})}, one_input(block), causal_self);
  tg::models::LlamaAttention gqa(small_llama("qwen3"));
  check_leakage("Grouped-query attention (RoPE, QK-norm)", gqa, {randn32({2, 5, 8})}, one_input(gqa), causal_self);
  check_leakage("Grouped-query attention, causal + padding", gqa, {randn32({2, 5, 8})},
                padded_attention(gqa, padding_mask), [&](size_t, int64_t n, int64_t t, int64_t n2, int64_t t2) {
                  return n2 == n && (t2 == t || (t2 < t && !padded(n, t2)));
                });
  tg::models::LlamaDecoderLayer layer(small_llama("llama"));
  check_leakage("Llama decoder layer", layer, {randn32({2, 5, 8})}, one_input(layer), causal_self);
}

// --- printing ---------------------------------------------------------------------------------------

bool print_tables() {
  bool ok = true;
  std::printf("fast kernels: %s\n\n", tg::fast_kernels() ? "on" : "off (TG_FAST_KERNELS=0: the reference code)");
  if (!grad_rows.empty()) {
    std::printf("Gradient check in float64 (|analytical - numerical| <= 1e-5 + 1e-3 |numerical|)\n\n");
    std::printf("%-44s %10s  %-24s %12s %12s  %s\n", "layer", "parameters", "inputs checked", "worst abs",
                "worst rel", "result");
    for (const GradRow& r : grad_rows) {
      std::printf("%-44s %10lld  %-24s %12.3e %12.3e  %s\n", r.layer.c_str(), static_cast<long long>(r.parameters),
                  r.inputs.c_str(), r.abs_error, r.rel_error, r.passed ? "PASS" : "FAIL");
      ok = ok && r.passed;
    }
  }
  std::printf("\nMask leakage: Jacobian entries an output may not see (later tokens, padded keys, other rows)\n\n");
  std::printf("%-44s %10s %12s  %-9s  %s\n", "layer", "entries", "max |J|", "NaN-free", "result");
  for (const LeakRow& r : leak_rows) {
    std::printf("%-44s %10lld %12.3e  %-9s  %s\n", r.layer.c_str(), static_cast<long long>(r.forbidden), r.worst,
                r.finite ? "yes" : "NO", r.passed ? "PASS" : "FAIL");
    ok = ok && r.passed;
  }
  return ok;
}

int run(bool leaky_demo) {
  const auto start = std::chrono::steady_clock::now();
  if (!leaky_demo) check_layers();
  check_masks(leaky_demo);
  const bool ok = print_tables();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n%s in %.2f s\n", ok ? "all checks PASS" : "some checks FAIL", seconds);
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  bool leaky_demo = false;
  const tg::Program program{
      "gradcheck_layers", "Checks every layer's gradients against finite differences, and that no mask leaks.",
      {tg::switch_flag("leaky-demo", &leaky_demo, "only the mask check, on a layer that leaks on purpose")}};
  return tg::run_program(program, argc, argv, [&] { return run(leaky_demo); });
}
