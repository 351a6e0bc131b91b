// A Qwen3 quantized to int8 (nn/quantize.h) writes, to the bit, what the same model writes with
// each weight replaced by its dequantized float32 value: a full forward, a cached decode of one
// sequence and of a batch, at 1, 2 and 7 threads. The model is sized so that every kernel of
// gemm.h runs: one token's rows, a batch's few rows times weights of 1 MiB or more, and the
// prompt's many rows (small_gemm or BLIS). Its head is tied to the embedding, as the small real
// checkpoints' are: one int8 tensor serves both.
#include <gtest/gtest.h>

#include <string>

#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "models/decode_outputs.h"
#include "models/llama.h"
#include "nn/layers.h"
#include "nn/quantize.h"
#include "test_util.h"

namespace tg {
namespace {

models::LlamaConfig small_qwen3() {
  models::LlamaConfig c;
  c.model_type = "qwen3";
  c.vocab_size = 2100;  // the head: 1.03 MiB as float32, past the few-rows kernel's 1 MiB
  c.hidden_size = 128;
  c.intermediate_size = 512;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.max_position_embeddings = 512;
  c.qk_norm = true;
  c.tie_word_embeddings = true;
  c.initializer_range = 0.1;
  return c;
}

struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

TEST(Int8Model, LogitsAreTheDequantizedFloat32ModelsToTheBitAtAnyThreadCount) {
  ThreadsGuard threads;
  manual_seed(7);
  models::LlamaForCausalLM quantized(small_qwen3()), dequantized(small_qwen3());
  dequantized.load_state_dict(quantized.state_dict());
  EXPECT_EQ(nn::quantize_int8_(quantized), 1 + 2 * 7);  // the embedding (= the head), 7 projections a layer
  {  // each weight of the float32 copy replaced by its dequantized value
    NoGradGuard no_grad;
    const NamedTensors scales = quantized.named_buffers();
    const NamedTensors weights = quantized.named_parameters();
    NamedTensors target = dequantized.named_parameters();
    for (const auto& [name, scale] : scales) {
      const std::string weight_name = name.substr(0, name.size() - std::string("_scale").size());
      for (const auto& [n, w] : weights)
        if (n == weight_name)
          for (auto& [m, t] : target)
            if (m == weight_name) t.copy_(dequantize_int8(w, scale));
    }
  }
  for (const auto& [name, p] : quantized.named_parameters()) EXPECT_EQ(p.dtype(), p.dim() == 2 ? kInt8 : kFloat32) << name;
  for (const int n : {1, 2, 7}) {
    SCOPED_TRACE("threads " + std::to_string(n));
    set_num_threads(n);
    test::expect_same(test::decode_outputs(quantized, 2100), test::decode_outputs(dequantized, 2100));
  }
}

}  // namespace
}  // namespace tg
