// A bfloat16 or float16 checkpoint kept at its own size (models/hf/hf_folder.h:
// WeightsDtype::kCheckpoint): its matrices stay bfloat16 (float16) and frozen, the norms float32,
// and every logit is the float32 path's
// to the bit, on a full forward, a cached decode of one sequence and of a batch, at 1, 2 and 7
// threads. The model is sized so that every kernel of gemm.h runs: one token's rows, a batch's
// few rows times weights of 1 MiB or more, and the prompt's many rows (small_gemm or BLIS).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "models/hf/hf_llama.h"
#include "models/kv_cache.h"
#include "nn/safetensors.h"
#include "test_util.h"
#include "models/decode_outputs.h"

namespace tg {
namespace {

// A Qwen3 of 2 layers, width 128, a SwiGLU of 512 and 2,100 ids (its head 1.03 MiB as float32,
// past the few-rows kernel's 1 MiB), drawn from seed 7, written as a BF16 folder into dir (every
// value then a bfloat16 exactly), or an F16 one (each value the nearest float16).
constexpr int64_t kVocab = 2100;
void write_16bit_folder(const std::string& dir, bool tied, ScalarType dtype = kBFloat16) {
  models::LlamaConfig c;
  c.model_type = "qwen3";
  c.vocab_size = kVocab;
  c.hidden_size = 128;
  c.intermediate_size = 512;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.max_position_embeddings = 512;
  c.qk_norm = true;
  c.tie_word_embeddings = tied;
  c.initializer_range = 0.1;
  manual_seed(7);
  models::LlamaForCausalLM model(c);
  NamedTensors tensors = models::hf_llama_tensors(model);
  for (auto& [name, t] : tensors) t = dtype == kFloat16 ? test::nearest_float16(t) : t.to(kBFloat16);
  std::filesystem::create_directories(dir);
  save_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
  std::ofstream(dir + "/config.json") << models::hf_llama_config_json(c, json::Value());
}

struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

TEST(Bf16Checkpoint, LogitsAreTheFloat32PathsToTheBitAtAnyThreadCount) {
  ThreadsGuard threads;
  for (const auto& [tied, dtype] : {std::pair{true, kBFloat16}, {false, kBFloat16}, {true, kFloat16}}) {
    SCOPED_TRACE(std::string(tied ? "tied head, " : "own head, ") + dtype_name(dtype));
    const test::TempFolder folder;
    const std::string dir = folder.path;
    write_16bit_folder(dir, tied, dtype);
    models::HfLlama wide = models::load_hf_llama(dir, models::WeightsDtype::kFloat32);
    models::HfLlama kept = models::load_hf_llama(dir, models::WeightsDtype::kCheckpoint);
    for (const int n : {1, 2, 7}) {
      SCOPED_TRACE("threads " + std::to_string(n));
      set_num_threads(n);
      test::expect_same(test::decode_outputs(*kept.model, kVocab), test::decode_outputs(*wide.model, kVocab));
    }
  }
}

TEST(Bf16Checkpoint, TheMatricesStayBfloat16AndFrozenTheNormsFloat32) {
  for (const ScalarType dtype : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const test::TempFolder folder;
    const std::string dir = folder.path;
    write_16bit_folder(dir, false, dtype);
    const models::HfLlama wide = models::load_hf_llama(dir);
    const models::HfLlama kept = models::load_hf_llama(dir, models::WeightsDtype::kCheckpoint);
    int64_t wide_bytes = 0, kept_bytes = 0;
    for (const auto& [name, p] : kept.model->named_parameters()) {
      SCOPED_TRACE(name);
      EXPECT_EQ(p.dtype(), p.dim() == 2 ? dtype : kFloat32);
      EXPECT_EQ(p.requires_grad(), p.dim() != 2);
      kept_bytes += static_cast<int64_t>(p.nbytes());
    }
    for (const auto& [name, p] : wide.model->named_parameters()) {
      EXPECT_EQ(p.dtype(), kFloat32) << name;
      wide_bytes += static_cast<int64_t>(p.nbytes());
    }
    EXPECT_LT(kept_bytes, wide_bytes * 51 / 100);  // half, and the norms' few kB
    EXPECT_EQ(wide.info.converted_dtypes, std::vector<std::string>{dtype == kFloat16 ? "F16" : "BF16"});
    EXPECT_TRUE(kept.info.converted_dtypes.empty());
  }
  // a float32 folder is float32 either way
  const std::string f32_dir = std::string(TG_REFERENCE_DIR) + "/hf_llama/qwen2/f32";
  for (const auto& [name, p] : models::load_hf_llama(f32_dir, models::WeightsDtype::kCheckpoint).model->named_parameters())
    EXPECT_EQ(p.dtype(), kFloat32) << name;
}

TEST(Bf16Checkpoint, TheDtypeFlagsValues) {
  EXPECT_EQ(models::weights_dtype_from_flag("auto"), models::WeightsDtype::kCheckpoint);
  EXPECT_EQ(models::weights_dtype_from_flag("float32"), models::WeightsDtype::kFloat32);
  test::expect_error([] { models::weights_dtype_from_flag("bf16"); }, {"--dtype", "\"bf16\"", "auto", "float32"});
}

}  // namespace
}  // namespace tg
