// A model's files are compared before memory is spent on them: a config.json (or an
// adapter_config.json) that asks for more than its weights file holds is refused from the files'
// headers, in milliseconds, before any model is built; GPT-2's ignored attn.bias buffers are never
// read and the causal masks are made only when read, so a long context costs nothing until used;
// errors name the real problem (a config.json that is not JSON, another model_type, a negative
// dropout); and running out of memory is one line, never an abort. Each case checks the message
// and that the tensors' peak memory (autograd/runtime/memory.h) stayed small.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <new>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "io/flags.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "train/corpus.h"
#include "models/hf/hf_gpt2.h"
#include "train/trainer.h"
#include "examples/tiny_train_options.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::string kBase = std::string(TG_REFERENCE_DIR) + "/lora/base";  // a tiny GPT-2: 2 blocks of width 16
constexpr int64_t kSmall = 4 << 20;  // "nothing big": the tensors' peak stays under 4 MiB

// A copy of the tiny GPT-2 folder (config.json, model.safetensors and its tokenizer files).
void copy_base(const std::string& to) {
  for (const auto& entry : std::filesystem::directory_iterator(kBase))
    std::filesystem::copy_file(entry.path(), to + "/" + entry.path().filename().string());
}

// Replaces the value of every "field": <number or string> in a JSON file's text.
void set_field(const std::string& path, const std::string& field, const std::string& value) {
  const std::string text = read_bytes(path);
  const std::regex member("\"" + field + "\": (\"[^\"]*\"|[-0-9.e]+)");
  const std::string changed = std::regex_replace(text, member, "\"" + field + "\": " + value);
  ASSERT_NE(changed, text) << field << " is not in " << path;
  write_bytes(path, changed);
}

// The error fn throws, and the most tensor memory it took on the way (peak_bytes above the start).
struct Outcome {
  std::string error;
  int64_t peak = 0;
};
template <class Fn>
Outcome outcome_of(Fn fn) {
  reset_peak_memory_stats();
  const int64_t before = memory_stats().live_bytes;
  Outcome out;
  out.error = error_of(fn);
  out.peak = memory_stats().peak_bytes - before;
  return out;
}

// A safetensors file whose data is all zeros without being written: the header, then the file
// made long enough (a sparse file: a gigabyte of it takes no disk). Zeros are valid in every dtype.
struct Entry {
  std::string name, dtype;
  Shape shape;
};
void write_zero_safetensors(const std::string& path, const std::vector<Entry>& entries) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const Entry& e : entries) {
    uint64_t bytes = e.dtype == "BOOL" ? 1 : e.dtype == "I64" ? 8 : 4;
    std::string shape;
    for (int64_t d : e.shape) {
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
      bytes *= static_cast<uint64_t>(d);
    }
    header += (header.size() > 1 ? "," : "") + json::quote(e.name) + ":{\"dtype\":\"" + e.dtype + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string start(8, '\0');
  for (int i = 0; i < 8; ++i) start[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  write_bytes(path, start + header);
  std::filesystem::resize_file(path, 8 + header.size() + offset);
}

// A GPT-2 folder of zeros: vocabulary 8, width 4, one head, `layers` blocks, n_positions P, each
// block with HF's attn.bias of bias_shape (BOOL, or bias_dtype).
void write_zero_gpt2(const std::string& dir, int64_t P, int64_t layers, const Shape& bias_shape,
                     const std::string& bias_dtype = "BOOL") {
  const int64_t C = 4;
  std::vector<Entry> e = {{"wte.weight", "F32", {8, C}}, {"wpe.weight", "F32", {P, C}}};
  for (int64_t i = 0; i < layers; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    e.push_back({h + "attn.bias", bias_dtype, bias_shape});
    for (const Entry& t : std::vector<Entry>{{"ln_1.weight", "F32", {C}}, {"ln_1.bias", "F32", {C}},
                                             {"attn.c_attn.weight", "F32", {C, 3 * C}}, {"attn.c_attn.bias", "F32", {3 * C}},
                                             {"attn.c_proj.weight", "F32", {C, C}}, {"attn.c_proj.bias", "F32", {C}},
                                             {"ln_2.weight", "F32", {C}}, {"ln_2.bias", "F32", {C}},
                                             {"mlp.c_fc.weight", "F32", {C, 4 * C}}, {"mlp.c_fc.bias", "F32", {4 * C}},
                                             {"mlp.c_proj.weight", "F32", {4 * C, C}}, {"mlp.c_proj.bias", "F32", {C}}})
      e.push_back({h + t.name, t.dtype, t.shape});
  }
  e.push_back({"ln_f.weight", "F32", {C}});
  e.push_back({"ln_f.bias", "F32", {C}});
  write_zero_safetensors(dir + "/model.safetensors", e);
  write_bytes(dir + "/config.json", "{\"model_type\": \"gpt2\", \"vocab_size\": 8, \"n_positions\": " + std::to_string(P) +
                                        ", \"n_embd\": 4, \"n_layer\": " + std::to_string(layers) + ", \"n_head\": 1}");
}

TEST(ModelFileSizes, AGpt2ConfigLargerThanItsWeightsIsRefusedBeforeAnyModelIsBuilt) {
  struct Case {
    std::string field, value, message;
  };
  const std::vector<Case> cases = {
      {"n_layer", "1000000000",
       "model.safetensors: tensor \"transformer.h.2.ln_1.weight\" is missing (config.json's n_layer is 1000000000; "
       "the file has 2 blocks)"},
      {"n_embd", "4096", "model.safetensors: tensor \"transformer.wte.weight\" has shape (277,16), expected (277,4096)"},
      {"vocab_size", "16777216",
       "model.safetensors: tensor \"transformer.wte.weight\" has shape (277,16), expected (16777216,16)"},
  };
  for (const Case& c : cases) {
    TempFolder dir;
    copy_base(dir.path);
    set_field(dir.file("config.json"), c.field, c.value);
    for (const auto& load : {std::function<void()>([&] { models::load_hf_gpt2(dir.path); }),
                             std::function<void()>([&] { models::load_saved_model(dir.path); })}) {
      const Outcome o = outcome_of(load);
      EXPECT_TRUE(has_part(o.error, c.message)) << o.error;
      EXPECT_LT(o.peak, kSmall) << c.field;  // no model of that config was made
    }
  }
}

TEST(ModelFileSizes, GenerateRefusesAHugeConfigInOneLine) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  copy_base(dir.path);
  set_field(dir.file("config.json"), "n_layer", "1000000000");
  const ProgramRun r = run_program(example_program("generate"), {"--ckpt", dir.path, "--prompt", "hi"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "generate: " + dir.file("model.safetensors") +
                          ": tensor \"transformer.h.2.ln_1.weight\" is missing (config.json's n_layer is 1000000000; "
                          "the file has 2 blocks)\n");
}

// n_positions 16384: each block's attn.bias in the file is a (1,1,16384,16384) mask (256 MiB of
// BOOL, 1 GiB as F32), and tapegrad's own causal mask would be 1 GiB a block. Neither is made.
TEST(ModelFileSizes, ALongContextCostsNothingUntilASequenceThatLongRuns) {
  TempFolder dir;
  const int64_t P = 16384;
  write_zero_gpt2(dir.path, P, 2, {1, 1, P, P});
  reset_peak_memory_stats();
  const int64_t before = memory_stats().live_bytes;
  models::HfGpt2 hf = models::load_hf_gpt2(dir.path);
  EXPECT_EQ(hf.config.context_length, P);
  NoGradGuard no_grad;
  const Tensor logits = hf.model->forward(from_vector(std::vector<int64_t>{1, 2, 3}, {1, 3}));
  EXPECT_EQ(logits.sizes(), (Shape{1, 3, 8}));
  EXPECT_LT(memory_stats().peak_bytes - before, kSmall);  // wpe (16384, 4) is 256 KiB
}

TEST(ModelFileSizes, TheIgnoredAttnBiasMustHaveGpt2sShapeAndDtype) {
  {
    TempFolder dir;
    write_zero_gpt2(dir.path, 16, 1, {1, 1, 8, 8});
    EXPECT_EQ(error_of([&] { models::load_hf_gpt2(dir.path); }),
              dir.file("model.safetensors") + ": tensor \"h.0.attn.bias\" has shape (1,1,8,8), expected (1,1,16,16) "
                                              "(GPT-2's causal mask for config.json's n_positions 16; its values are not read)");
  }
  {
    TempFolder dir;
    write_zero_gpt2(dir.path, 16, 1, {1, 1, 16, 16}, "I64");
    EXPECT_EQ(error_of([&] { models::load_hf_gpt2(dir.path); }),
              dir.file("model.safetensors") + ": tensor \"h.0.attn.bias\" has dtype I64; GPT-2's attention buffers are "
                                              "BOOL or floating point");
  }
  {
    TempFolder dir;
    write_zero_gpt2(dir.path, 16, 1, {1, 1, 16, 16}, "F32");
    EXPECT_NO_THROW(models::load_hf_gpt2(dir.path));  // HF's older files keep it as float
  }
}

train::TrainOptions tiny_options() { return tiny_train_options(2); }

const std::string& text() {
  static const std::string t = train::builtin_corpus(4000, 7);
  return t;
}

// A run folder of train_gpt's own (tapegrad's names), saved at step 0.
void save_tiny_run(const std::string& dir) {
  train::Trainer trainer(tiny_options(), text());
  train::save_run(trainer, dir);
}

// A run from the tiny GPT-2 (with LoRA adapters of rank 2 when lora), saved at step 0.
void save_gpt2_run(const std::string& dir, bool lora) {
  train::TrainOptions o = tiny_options();
  o.init_from = kBase;
  o.tokenizer = kBase;
  if (lora) {
    o.lora_rank = 2;
    o.lora_alpha = 2;
  }
  train::save_run(*train::start_from_gpt2_folder(o, read_bytes(kBase + "/../text.txt"), nullptr), dir);
}

TEST(ModelFileSizes, ARunsConfigLargerThanItsWeightsIsRefusedBeforeAnyModelIsBuilt) {
  TempFolder dir;
  save_tiny_run(dir.path);
  const std::string config = dir.file("config.json"), weights = dir.file("model.safetensors");
  const std::string original = read_bytes(config);
  set_field(config, "n_layers", "1000000000");  // "model": what generate and --eval-only build
  Outcome o = outcome_of([&] { models::load_saved_model(dir.path); });
  EXPECT_EQ(o.error, weights + ": tensor \"trf_blocks.2.norm1.weight\" is missing (the run's config.json has n_layers "
                               "1000000000; the file has 2 blocks)");
  EXPECT_LT(o.peak, kSmall);

  write_bytes(config, original);
  set_field(config, "emb-dim", "4096");  // "train": what --resume builds
  o = outcome_of([&] { train::resume_trainer(dir.path, train::saved_options(dir.path), text()); });
  EXPECT_TRUE(has_part(o.error, weights + ": tensor \"tok_emb.weight\" has shape ")) << o.error;
  EXPECT_TRUE(has_part(o.error, ",8), expected (")) << o.error;
  EXPECT_TRUE(has_part(o.error, ",4096) (vocab_size, context_length and emb_dim of the run's config.json)")) << o.error;
  EXPECT_LT(o.peak, kSmall);
}

TEST(ModelFileSizes, ARunFromGpt2ResumedWithAHugeShapeIsRefusedBeforeAnyModelIsBuilt) {
  TempFolder dir;
  save_gpt2_run(dir.path, false);
  set_field(dir.file("config.json"), "n_layers", "1000000000");  // the "tapegrad" member's "model"
  const Outcome o = outcome_of([&] { train::resume_trainer(dir.path, train::saved_options(dir.path), text()); });
  EXPECT_EQ(o.error, dir.file("model.safetensors") + ": tensor \"transformer.h.2.ln_1.weight\" is missing (config.json's "
                                                     "n_layer is 1000000000; the file has 2 blocks)");
  EXPECT_LT(o.peak, kSmall);
}

TEST(ModelFileSizes, AnAdapterRankLargerThanTheAdaptersFileIsRefusedBeforeAnyAdapterIsBuilt) {
  TempFolder dir;
  save_gpt2_run(dir.path, true);
  set_field(dir.file("adapter_config.json"), "r", "1000000");
  const std::string message = dir.file("adapters.safetensors") +
                              ": tensor \"base_model.model.transformer.h.0.attn.c_attn.lora_A.weight\" is float32 of "
                              "shape (2,16), expected float32 of shape (1000000,16) (this run's r and model)";
  Outcome o = outcome_of([&] { models::load_saved_model(dir.path); });  // generate, --eval-only, --merge-lora
  EXPECT_EQ(o.error, message);
  EXPECT_LT(o.peak, kSmall);
  o = outcome_of([&] { train::resume_trainer(dir.path, train::saved_options(dir.path), text()); });
  EXPECT_EQ(o.error, message);
  EXPECT_LT(o.peak, kSmall);
}

TEST(ModelFileSizes, AConfigJsonThatIsNotGpt2sSaysSoInsteadOfAMissingFile) {
  TempFolder broken, llama;
  copy_base(broken.path);
  write_bytes(broken.file("config.json"), "{\"model_type\": \"gpt2\",, }");
  const std::string error = error_of([&] { models::load_saved_model(broken.path); });
  EXPECT_TRUE(has_part(error, broken.file("config.json"))) << error;
  EXPECT_TRUE(has_part(error, "byte")) << error;
  EXPECT_FALSE(has_part(error, "is missing")) << error;

  copy_base(llama.path);  // read as a Llama folder (models/hf/hf_llama.h): its layers (llama's default 32) are not there
  set_field(llama.file("config.json"), "model_type", "\"llama\"");
  const std::string as_llama = error_of([&] { models::load_saved_model(llama.path); });
  EXPECT_EQ(as_llama, llama.file("config.json") + ": \"num_hidden_layers\" is 32 but model.safetensors holds tensors for 0 layers");
  set_field(llama.file("config.json"), "model_type", "\"mamba\"");
  EXPECT_EQ(error_of([&] { models::load_saved_model(llama.path); }),
            llama.file("config.json") + ": \"model_type\" is \"mamba\": tapegrad reads \"gpt2\", \"llama\", \"qwen2\" and \"qwen3\"");
}

TEST(ModelFileSizes, ANegativeDropoutIsRefusedNamingItsField) {
  for (const char* field : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) {
    TempFolder dir;
    copy_base(dir.path);
    set_field(dir.file("config.json"), field, "-0.1");
    EXPECT_EQ(error_of([&] { models::load_hf_gpt2(dir.path); }),
              dir.file("config.json") + ": \"" + field + "\" must be in [0, 1) (a dropout probability), got -0.1");
  }
}

// run_program (io/flags.h) ends every program: memory running out, or any other
// exception, is one line and exit code 1, naming what the program was doing.
TEST(ModelFileSizes, OutOfMemoryIsOneLineNamingWhatWasBeingDone) {
  char name[] = "demo";
  char* argv[] = {name};
  auto exit_and_line = [&](const std::function<int()>& run) {
    testing::internal::CaptureStderr();
    const int code = tg::run_program({"demo", "A demo.", {}}, 1, argv, run);
    return std::to_string(code) + " " + testing::internal::GetCapturedStderr();
  };
  EXPECT_EQ(exit_and_line([]() -> int {
              const Activity outer("training step 3");
              const Activity building("building the model of x/config.json");
              throw std::bad_alloc();
            }),
            "1 demo: out of memory while building the model of x/config.json\n");
  EXPECT_EQ(exit_and_line([]() -> int {
              const Activity generating("generating text");
              throw Error("out of memory: cannot allocate 4096 bytes");
            }),
            "1 demo: out of memory: cannot allocate 4096 bytes while generating text\n");
  EXPECT_EQ(exit_and_line([]() -> int { throw std::bad_alloc(); }), "1 demo: out of memory\n");
  EXPECT_EQ(exit_and_line([]() -> int { throw std::logic_error("boom"); }), "1 demo: unexpected error: boom\n");
}

}  // namespace
}  // namespace tg::test
