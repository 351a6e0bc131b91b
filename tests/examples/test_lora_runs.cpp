// LoRA runs (train_gpt --init-from DIR --lora-rank r), as a user runs them: against the PyTorch
// twin (examples/pytorch/tapegrad_twin/lora.py on hf_gpt2.py and hf_llama.py, tests/reference/make_lora_reference.py)
// step for step; the base weights untouched and the optimizer holding the adapters alone; the
// folder in peft's files, read back by generate and --eval-only, resumed bit for bit; --merge-lora's
// folder giving the adapted model's logits; and bad command lines as one-line errors.
// The base models are tests/reference/lora/base, a tiny GPT-2 (2 layers of width 16), and
// tests/reference/lora/qwen3_base, a tiny Qwen3 (2 layers, hidden 16, 4 heads of 8 on 2 kv heads),
// both with dropout 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "models/hf/hf_gpt2.h"
#include "models/hf/hf_llama.h"
#include "models/lora/gpt_lora.h"
#include "models/lora/lora_adapters.h"
#include "tokenizers/tokenizer.h"
#include "train/trainer.h"
#include "test_util.h"
#include "tiny_train_options.h"

namespace tg::test {
namespace {

#define SKIP_WITHOUT_EXAMPLES() \
  if (example_program("train_gpt").empty()) GTEST_SKIP() << "the examples are not built"

const std::string kLora = std::string(TG_REFERENCE_DIR) + "/lora";
const std::string kBase = kLora + "/base", kText = kLora + "/text.txt", kQwen3Base = kLora + "/qwen3_base";

const json::Value& reference() {
  static const json::Value doc = json::parse_file(kLora + "/lora_torch.json");
  return doc;
}

// The twin's run as train_gpt flags (lora_torch.json's "flags"), on base and the text.
std::vector<std::string> twin_flags(const std::string& base) {
  std::vector<std::string> args = {"--init-from", base, "--data", kText, "--eval-batches", "1", "--eval-every", "3",
                                   "--sample-tokens", "2", "--threads", "1"};
  for (const json::Member& m : reference()["flags"].as_object()) {
    args.push_back("--" + m.key);
    args.push_back(m.value.is_string() ? m.value.as_string() : m.value.number_text());
  }
  return args;
}

ProgramRun train_gpt(const std::vector<std::string>& args) { return run_program(example_program("train_gpt"), args); }

// A LoRA run of `steps` steps (rank 2 on attn and mlp, dropout 0.1) from base into out.
ProgramRun small_lora_run(const std::string& base, const std::string& out, int steps,
                          const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"--init-from", base, "--data", kText, "--lora-rank", "2", "--lora-targets",
                                   "attn,mlp", "--dropout", "0.1", "--batch", "2", "--context", "8", "--lr", "1e-2",
                                   "--min-lr", "1e-3", "--warmup", "1", "--steps", std::to_string(steps),
                                   "--eval-every", "2", "--eval-batches", "1", "--sample-tokens", "2", "--threads", "1",
                                   "--out", out};
  args.insert(args.end(), more.begin(), more.end());
  return train_gpt(args);
}

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors) out.push_back(name);
  return out;
}

// Every tensor of the two files: the same names, values within atol + rtol |want|.
void expect_files_close(const std::string& got, const std::string& want, double atol, double rtol) {
  const NamedTensors a = load_safetensors(got), b = load_safetensors(want);
  ASSERT_EQ(names_of(a), names_of(b));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(all_close(a[i].second, b[i].second, atol, rtol)) << a[i].first;
}

// As train_gpt adds them: the base's weights, then torch.manual_seed(seed) and the adapters (r 4
// on attn and mlp), in peft's order. Returns them under peft's names, after checking them equal,
// byte for byte and name for name, to the twin's kLora/<prefix>adapters_start.safetensors.
template <class Model>
NamedTensors expect_twins_first_adapters(Model& base, const std::string& prefix) {
  manual_seed(static_cast<uint64_t>(reference()["flags"]["seed"].as_int64()));
  models::apply_lora(base, models::LoRAConfig{.r = 4, .alpha = 8.0, .attn = true, .mlp = true});
  const NamedTensors ours = models::peft_adapter_tensors(base);
  const NamedTensors torch = load_safetensors(kLora + "/" + prefix + "adapters_start.safetensors");
  EXPECT_EQ(names_of(ours), names_of(torch));  // peft's names, in its order
  for (size_t i = 0; i < std::min(ours.size(), torch.size()); ++i)
    EXPECT_TRUE(same_bytes(ours[i].second, torch[i].second)) << ours[i].first;
  return ours;
}

// generate --ckpt run writes after the prompt, and train_gpt --eval-only --resume run gives a loss.
void expect_generate_and_eval_only_read(const std::string& run) {
  ProgramRun r = run_program(example_program("generate"), {"--ckpt", run, "--prompt", " the world", "--tokens", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 10), " the world");
  r = train_gpt({"--eval-only", "--resume", run});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "\"loss\": ")) << r.output;
}

TEST(LoraRuns, TheAdaptersStartAsPeftDrawsThem) {
  models::HfGpt2 base = models::load_hf_gpt2(kBase);
  const NamedTensors ours = expect_twins_first_adapters(*base.model, "");
  EXPECT_EQ(ours[0].first, "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight");
}

// train_gpt with the twin's flags from base: its losses step by step (lora_torch.json's
// losses_key) and its adapters at the end (kLora/<prefix>adapters_end.safetensors); output: the
// LoRA line train_gpt prints.
void expect_twins_run(const std::string& base, const std::string& losses_key, const std::string& prefix,
                      const std::string& output) {
  TempFolder dir;
  std::vector<std::string> args = twin_flags(base);
  args.insert(args.end(), {"--out", dir.file("run")});
  const ProgramRun r = train_gpt(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, output)) << r.output;
  std::ifstream csv(dir.file("run/loss.csv"));
  std::string line;
  std::getline(csv, line);  // the header
  const json::Value& losses = reference()[losses_key];
  for (size_t step = 0; step < losses.size(); ++step) {
    ASSERT_TRUE(std::getline(csv, line));
    const double got = std::stod(line.substr(line.find(',') + 1));
    const double want = std::bit_cast<double>(std::stoull(losses[step].as_string(), nullptr, 16));
    EXPECT_NEAR(got, want, 1e-5 * want) << "step " << step + 1;
  }
  expect_files_close(dir.file("run/adapters.safetensors"), kLora + "/" + prefix + "adapters_end.safetensors", 1e-5, 1e-5);
}

TEST(LoraRuns, TrainsAsThePyTorchTwinStepForStep) {
  SKIP_WITHOUT_EXAMPLES();
  expect_twins_run(kBase, "losses", "", "LoRA r=4, alpha=8.0 on attn,mlp: 2048 of the ");
}

// A Qwen3's adapters (models/lora/llama_lora.h): A drawn as peft draws it, on q, k, v, o, gate, up and
// down in peft's order, then trained as the twin trains them.
TEST(LoraRuns, OnAQwen3TheAdaptersStartAsPeftDrawsThemAndTrainAsTheTwinStepForStep) {
  models::HfLlama base = models::load_hf_llama(kQwen3Base);
  const NamedTensors ours = expect_twins_first_adapters(*base.model, "qwen3_");
  ASSERT_EQ(ours.size(), 28u);  // A and B on 7 Linears in 2 layers
  EXPECT_EQ(ours[0].first, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  EXPECT_EQ(ours[7].first, "base_model.model.model.layers.0.self_attn.o_proj.lora_B.weight");
  EXPECT_EQ(ours[6].second.sizes(), (Shape{4, 32}));  // o_proj's A: (r, heads * head_dim), 32 against hidden 16
  EXPECT_EQ(ours[13].first, "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight");
  for (const auto& [name, p] : nn::trainable_parameters(*base.model)) EXPECT_TRUE(models::is_adapter_name(name)) << name;

  SKIP_WITHOUT_EXAMPLES();
  // 2 layers x (q 4x(16+32) + k, v 4x(16+16) each + o 4x(32+16) + gate, up 4x(16+24) each + down 4x(24+16))
  expect_twins_run(kQwen3Base, "qwen3_losses", "qwen3_", "LoRA r=4, alpha=8.0 on attn,mlp: 2240 of the ");
}

TEST(LoraRuns, TheBaseWeightsStayAsTheyWereAndOnlyTheAdaptersHaveOptimizerState) {
  train::TrainOptions o;
  o.model.context_length = 8;
  o.batch = 2;
  o.steps = 3;
  o.warmup = 1;
  o.lr = 1e-2;
  o.lora_rank = 2;
  o.lora_alpha = 4;
  o.lora_targets = "attn,mlp";
  const models::GPTConfig config = models::hf_gpt2_config(json::parse_file(kBase + "/config.json"), kBase);
  std::string text = read_bytes(kText);
  train::Trainer trainer(o, text, tokenizers::load_tokenizer(kBase), config);
  models::HfGpt2Info layout;
  models::load_hf_gpt2_weights(trainer.gpt(), kBase + "/model.safetensors", &layout);
  NamedTensors before;
  for (const auto& [name, t] : trainer.model().state_dict()) before.push_back({name, t.detach().clone()});
  trainer.apply_lora(kBase);
  for (int i = 0; i < 3; ++i) trainer.train_step();

  const NamedTensors after = trainer.model().state_dict();
  size_t base_tensors = 0;
  for (const auto& [name, t] : before) {  // every base tensor, byte for byte, and none got a gradient
    for (const auto& [n, now] : after) {
      if (n != name) continue;
      EXPECT_TRUE(same_bytes(now, t)) << name;
      EXPECT_FALSE(now.grad().defined()) << name;
      ++base_tensors;
    }
  }
  EXPECT_EQ(base_tensors, before.size());
  for (const auto& [name, t] : nn::trainable_parameters(trainer.model()))
    EXPECT_TRUE(name.find("lora") != std::string::npos) << name;
  const NamedTensors state = trainer.optimizer().state_dict();
  EXPECT_EQ(state.size(), 3 * 16u);  // step, exp_avg, exp_avg_sq of A and B at 4 places in 2 blocks
  for (const auto& [name, t] : state) EXPECT_TRUE(name.find("lora") != std::string::npos) << name;
  EXPECT_NE(models::peft_adapter_tensors(trainer.gpt())[1].second.abs().max().item<float>(), 0.0f);  // B trained
}

TEST(LoraRuns, TheFolderHoldsPeftsFilesAndGenerateAndEvalOnlyReadIt) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run");
  ProgramRun r = small_lora_run(kBase, run, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(run + "/model.safetensors"));  // the adapters alone
  const NamedTensors adapters = load_safetensors(run + "/adapters.safetensors");
  ASSERT_EQ(adapters.size(), 16u);
  EXPECT_EQ(adapters[1].first, "base_model.model.transformer.h.0.attn.c_attn.lora_B.weight");
  EXPECT_EQ(adapters[1].second.sizes(), (Shape{48, 2}));
  EXPECT_EQ(adapters[15].first, "base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight");
  EXPECT_EQ(load_safetensors_metadata(run + "/adapters.safetensors"),
            (SafetensorsMetadata{{"format", "pt"}, {"step", "2"}}));
  const json::Value config = json::parse_file(run + "/adapter_config.json");
  EXPECT_EQ(config["peft_type"].as_string(), "LORA");
  EXPECT_EQ(config["task_type"].as_string(), "CAUSAL_LM");
  EXPECT_EQ(config["r"].as_int64(), 2);
  EXPECT_EQ(config["lora_alpha"].as_double(), 2.0);  // not given: the rank
  EXPECT_TRUE(config["fan_in_fan_out"].as_bool());
  EXPECT_EQ(config["target_modules"].size(), 4u);
  EXPECT_EQ(std::filesystem::path(config["base_model_name_or_path"].as_string()),
            std::filesystem::absolute(kBase).lexically_normal());
  EXPECT_EQ(read_bytes(run + "/vocab.json"), read_bytes(kBase + "/vocab.json"));

  expect_generate_and_eval_only_read(run);
}

TEST(LoraRuns, AResumedRunContinuesBitForBit) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  ProgramRun r = small_lora_run(kBase, dir.file("straight"), 4);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = small_lora_run(kBase, dir.file("resumed"), 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // the half run as one of 4 steps stopped after 2 (the same rates so far: the warmup's and the
  // cosine's first), resumed with the straight run's --steps
  plan_steps(dir.file("resumed"), 4);
  r = train_gpt({"--resume", dir.file("resumed"), "--steps", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* file : {"adapters.safetensors", "optimizer.safetensors"}) {
    const NamedTensors a = load_safetensors(dir.file("straight/") + file), b = load_safetensors(dir.file("resumed/") + file);
    ASSERT_EQ(names_of(a), names_of(b)) << file;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bytes(a[i].second, b[i].second)) << file << ": " << a[i].first;
  }
  EXPECT_EQ(load_safetensors_metadata(dir.file("resumed/optimizer.safetensors")),
            load_safetensors_metadata(dir.file("straight/optimizer.safetensors")));  // the generators too
}

TEST(LoraRuns, CheckpointingActivationsTrainsTheSameAdaptersBitForBit) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  // dropout 0.1: the replays draw the same masks; the first block's input needs no gradient (the
  // embeddings are frozen), so that block runs as it is
  for (const char* mode : {"none", "every", "ffn"}) {
    const ProgramRun r = small_lora_run(kBase, dir.file(mode), 3, {"--checkpoint-activations", mode});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const NamedTensors none = load_safetensors(dir.file("none/adapters.safetensors"));
  for (const char* mode : {"every", "ffn"}) {
    const NamedTensors other = load_safetensors(dir.file(mode) + "/adapters.safetensors");
    ASSERT_EQ(names_of(other), names_of(none));
    for (size_t i = 0; i < none.size(); ++i)
      EXPECT_TRUE(same_bytes(other[i].second, none[i].second)) << mode << ": " << none[i].first;
  }
}

TEST(LoraRuns, MergeLoraWritesAGpt2FolderWithTheAdaptedModelsLogits) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run"), merged = dir.file("merged");
  ProgramRun r = small_lora_run(kBase, run, 3);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = train_gpt({"--resume", run, "--merge-lora", merged});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const models::HfGpt2 plain = models::load_hf_gpt2(merged);  // a Hugging Face GPT-2 folder
  EXPECT_TRUE(plain.info.prefixed);                               // in the base's layout
  EXPECT_EQ(json::parse_file(merged + "/config.json")["n_embd"].as_int64(), 16);
  models::SavedModel adapted = models::load_saved_model(run);
  const Tensor ids = from_vector(std::vector<int64_t>{3, 17, 256, 40, 9, 270, 12, 5}, {1, 8});
  NoGradGuard no_grad;
  const Tensor want = adapted.model->forward(ids), got = plain.model->forward(ids);
  EXPECT_TRUE(all_close(got, want, 1e-5, 1e-5));
  const models::HfGpt2 base = models::load_hf_gpt2(kBase);
  EXPECT_FALSE(all_close(base.model->forward(ids), want, 1e-4, 0));  // the adapters did change the logits
  r = run_program(example_program("generate"), {"--ckpt", merged, "--prompt", " the", "--tokens", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// --merge-lora makes each weight of the file as the file reaches it: merged, transposed to
// Conv1D's orientation, c_attn fused from W_query, W_key and W_value with the fused update's rows.
// Beside the run's model it holds about one such matrix, never a merged copy of the model (it made
// two: the merged weights, then a model built from them), and writes the bytes the eager merge does.
TEST(LoraRuns, AGpt2MergeHoldsOneMergedWeightAtATime) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run"), merged = dir.file("merged");
  const ProgramRun r = small_lora_run(kBase, run, 3);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  NamedTensors expected;
  int64_t model_bytes = 0, largest = 0;  // the run's model; the largest tensor of the file
  {
    const models::SavedModel saved = models::load_saved_model(run);
    for (const auto& [name, p] : saved.model->named_parameters()) model_bytes += static_cast<int64_t>(p.nbytes());
    models::GPTModel plain(saved.config);  // the merge made all at once, then written
    plain.load_state_dict(models::merged_state_dict(dynamic_cast<const models::GPTModel&>(*saved.model)));
    expected = models::hf_gpt2_tensors(plain, saved.base_layout.prefixed);
    for (const auto& [name, t] : expected) largest = std::max<int64_t>(largest, static_cast<int64_t>(t.nbytes()));
  }
  const int64_t live = memory_stats().live_bytes;
  reset_peak_memory_stats();
  train::save_merged_model(run, merged);
  const int64_t peak = memory_stats().peak_bytes - live, bound = model_bytes + 2 * largest;
  EXPECT_LE(peak, bound) << "the model " << model_bytes << " bytes, the file's largest tensor " << largest;
  int64_t file_bytes = 0;
  for (const auto& [name, t] : expected) file_bytes += static_cast<int64_t>(t.nbytes());
  ASSERT_LT(bound, model_bytes + file_bytes);  // a merged copy of the model would be caught
  const NamedTensors written = load_safetensors(merged + "/model.safetensors");
  ASSERT_EQ(written.size(), expected.size());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(written[i].first, expected[i].first);
    EXPECT_TRUE(same_bytes(written[i].second, expected[i].second)) << expected[i].first;
  }
}

// A full run from GPT-2 saves its checkpoint in GPT-2's layout a tensor at a time: each matrix
// transposed to Conv1D's orientation (c_attn fused) as the file reaches it, checked and written,
// so the save holds one such copy beside the model, never a transposed copy of all of them.
TEST(LoraRuns, ARunFromGpt2SavesItsLayoutAMatrixAtATime) {
  TempFolder dir;
  train::TrainOptions o = tiny_train_options(1);
  o.init_from = o.tokenizer = kBase;
  o.threads = 1;
  const std::unique_ptr<train::Trainer> trainer = train::start_from_gpt2_folder(o, read_bytes(kText), nullptr);
  trainer->train_step();
  int64_t copies = 0, c_attn = 0;  // the bytes of every transposed matrix; of the largest, fused
  for (const auto& [name, t] : models::hf_gpt2_tensors(trainer->gpt(), false))
    if (t.dim() == 2 && name.find("wte") == std::string::npos && name.find("wpe") == std::string::npos) {
      copies += static_cast<int64_t>(t.nbytes());
      c_attn = std::max<int64_t>(c_attn, static_cast<int64_t>(t.nbytes()));
    }
  const int64_t live = memory_stats().live_bytes;
  reset_peak_memory_stats();
  train::save_run(*trainer, dir.path);
  const int64_t peak = memory_stats().peak_bytes - live, bound = 2 * c_attn + 4096;  // its cat and transpose, and scalars
  EXPECT_LE(peak, bound) << "every transposed matrix: " << copies << " bytes";
  ASSERT_LT(bound, copies);  // a copy of every matrix would be caught
  EXPECT_EQ(names_of(load_safetensors(dir.file("model.safetensors"))),
            names_of(models::hf_gpt2_tensors(trainer->gpt(), trainer->origin.gpt2_layout->prefixed)));
}

// A Qwen3 LoRA run as a user runs it: peft's files for a Llama, generate and --eval-only read it, it
// resumes bit for bit, and --merge-lora writes a Qwen3 folder with the adapted model's logits.
TEST(LoraRuns, AQwen3RunHasPeftsFilesResumesBitForBitAndMergesIntoAQwen3Folder) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("resumed"), merged = dir.file("merged");
  ProgramRun r = small_lora_run(kQwen3Base, dir.file("straight"), 4);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = small_lora_run(kQwen3Base, run, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::Value config = json::parse_file(run + "/adapter_config.json");
  EXPECT_FALSE(config["fan_in_fan_out"].as_bool());  // nn.Linear's (out, in)
  std::vector<std::string> targets;
  for (const json::Value& t : config["target_modules"].as_array()) targets.push_back(t.as_string());
  EXPECT_EQ(targets, (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                               "down_proj"}));
  EXPECT_EQ(json::parse_file(run + "/config.json")["model_type"].as_string(), "qwen3");
  EXPECT_FALSE(std::filesystem::exists(run + "/model.safetensors"));  // the adapters alone

  plan_steps(run, 4);  // a run of 4 stopped after 2 (the same rates so far)
  r = train_gpt({"--resume", run, "--steps", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* file : {"adapters.safetensors", "optimizer.safetensors"}) {
    const NamedTensors a = load_safetensors(dir.file("straight/") + file), b = load_safetensors(run + "/" + file);
    ASSERT_EQ(names_of(a), names_of(b)) << file;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bytes(a[i].second, b[i].second)) << file << ": " << a[i].first;
  }
  expect_generate_and_eval_only_read(run);

  r = train_gpt({"--resume", run, "--merge-lora", merged});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "(a Hugging Face qwen3 folder)")) << r.output;
  const models::HfLlama plain = models::load_hf_llama(merged);
  EXPECT_EQ(json::parse_file(merged + "/config.json")["head_dim"].as_int64(), 8);  // the base's fields
  EXPECT_FALSE(json::parse_file(merged + "/config.json").contains("tapegrad"));
  EXPECT_EQ(read_bytes(merged + "/vocab.json"), read_bytes(kQwen3Base + "/vocab.json"));
  models::SavedModel adapted = models::load_saved_model(run);
  const Tensor ids = from_vector(std::vector<int64_t>{3, 17, 256, 40, 9, 270, 12, 5}, {1, 8});
  NoGradGuard no_grad;
  const Tensor want = adapted.model->forward(ids), got = plain.model->forward(ids);
  EXPECT_TRUE(all_close(got, want, 1e-5, 1e-5));
  EXPECT_FALSE(all_close(models::load_hf_llama(kQwen3Base).model->forward(ids), want, 1e-4, 0));  // they changed it

  // GPT-2's adapter_config.json beside a Qwen3's run: not one run
  std::string text = read_bytes(run + "/adapter_config.json");
  const std::string ours = "[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"]";
  ASSERT_NE(text.find(ours), std::string::npos) << text;
  text.replace(text.find(ours), ours.size(), "[\"c_attn\", \"attn.c_proj\"]");
  write_bytes(run + "/adapter_config.json", text);
  r = train_gpt({"--resume", run, "--steps", "5"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, "adapter_config.json: \"target_modules\" are GPT-2's but the run's config.json is a "
                                 "Llama / Qwen model's")) << r.output;
}

// An F16 base (its matrices float16, as an older checkpoint's): kept float16 under the default
// --dtype auto, frozen beneath the adapters; the run trains, and --merge-lora writes the merged
// (float32) weights, whose logits are the adapted model's.
TEST(LoraRuns, AnF16BaseStaysFloat16AndMerges) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string base = dir.file("f16_base"), run = dir.file("run"), merged = dir.file("merged");
  std::filesystem::create_directories(base);
  for (const char* file : {"config.json", "vocab.json", "merges.txt"})
    std::filesystem::copy_file(kQwen3Base + "/" + file, base + "/" + file);
  NamedTensors tensors = load_safetensors(kQwen3Base + "/model.safetensors");
  for (auto& [name, t] : tensors)
    if (t.dim() == 2) t = test::nearest_float16(t);
  save_safetensors(base + "/model.safetensors", tensors);
  ProgramRun r = small_lora_run(base, run, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  models::SavedModel adapted = models::load_saved_model(run, models::WeightsDtype::kCheckpoint);
  int64_t kept = 0;
  for (const auto& [name, p] : adapted.model->named_parameters()) kept += p.dtype() == kFloat16;
  EXPECT_GT(kept, 0);
  r = train_gpt({"--resume", run, "--merge-lora", merged});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const models::HfLlama plain = models::load_hf_llama(merged);
  const Tensor ids = from_vector(std::vector<int64_t>{3, 17, 256, 40, 9, 270, 12, 5}, {1, 8});
  NoGradGuard no_grad;
  EXPECT_TRUE(all_close(plain.model->forward(ids), adapted.model->forward(ids), 1e-5, 1e-5));
}

// The files of a folder, name -> bytes.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    out[entry.path().filename().string()] = read_bytes(entry.path().string());
  return out;
}

// --merge-lora into a folder that holds another model (a sharded Qwen3's files): refused, naming
// what would be replaced, with every byte left as it was; with --overwrite, the folder is the
// merged model alone (no shard or index of the old one), its other files kept.
TEST(LoraRuns, MergeLoraRefusesAFolderHoldingAModelUnlessOverwrite) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run"), fresh = dir.file("fresh"), other = dir.file("other");
  ProgramRun r = small_lora_run(kBase, run, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = train_gpt({"--resume", run, "--merge-lora", fresh});  // into a new folder: as before
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::filesystem::copy(kQwen3Base, other);
  std::filesystem::rename(other + "/model.safetensors", other + "/model-00001-of-00001.safetensors");
  write_bytes(other + "/model.safetensors.index.json",
              "{\"metadata\": {}, \"weight_map\": {\"model.norm.weight\": \"model-00001-of-00001.safetensors\"}}");
  write_bytes(other + "/README.md", "notes\n");
  const std::map<std::string, std::string> before = files_of(other);

  r = train_gpt({"--resume", run, "--merge-lora", other});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has_part(r.output, "train_gpt: --merge-lora " + other + ": the folder holds a model already (config.json, "
                                 "merges.txt, model-00001-of-00001.safetensors, model.safetensors.index.json, "
                                 "vocab.json); give --overwrite to replace it, or a new folder")) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_EQ(files_of(other), before);  // nothing changed

  r = train_gpt({"--resume", run, "--merge-lora", other, "--overwrite"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::string> want = files_of(fresh);
  want["README.md"] = "notes\n";
  EXPECT_EQ(files_of(other), want);  // the merged model alone, and the notes
  for (const auto& entry : std::filesystem::directory_iterator(dir.path))  // no folder left beside it
    EXPECT_FALSE(entry.path().filename().string().ends_with(".merging")) << entry.path();
  EXPECT_TRUE(models::is_hf_gpt2_folder(other));

  r = train_gpt({"--resume", run, "--overwrite"});  // --overwrite alone
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has_part(r.output, "--overwrite goes with --merge-lora DIR")) << r.output;
}

// --lora-rank above the smallest adapted matrix's min(in, out) adds nothing: refused, naming the
// limit and the matrix, before the model or an adapter takes memory (and nothing written).
TEST(LoraRuns, ARankPastTheSmallestAdaptedMatrixIsRefused) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  struct Case {
    std::string base, rank, targets, message;
  };
  const std::vector<Case> cases = {
      {kBase, "1000000", "attn", "--lora-rank 1000000: above the smallest adapted matrix's min(in, out) = 16 "
                                 "(transformer.h.0.attn.c_attn, 16 in x 48 out): a rank past it adds nothing"},
      {kBase, "17", "mlp", "--lora-rank 17: above the smallest adapted matrix's min(in, out) = 16 "
                           "(transformer.h.0.mlp.c_fc, 16 in x 64 out)"},
      {kQwen3Base, "17", "attn,mlp", "--lora-rank 17: above the smallest adapted matrix's min(in, out) = 16 "
                                     "(model.layers.0.self_attn.q_proj, 16 in x 32 out)"},
  };
  for (const Case& c : cases) {
    const ProgramRun r = train_gpt({"--init-from", c.base, "--data", kText, "--lora-rank", c.rank, "--lora-targets",
                                    c.targets, "--out", dir.file("out")});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(has_part(r.output, c.message)) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("out")));
  }
  ProgramRun r = train_gpt({"--init-from", kQwen3Base, "--data", kText, "--lora-rank", "16", "--steps", "1", "--batch",
                            "2", "--context", "8", "--eval-batches", "1", "--sample-tokens", "1", "--threads", "1",
                            "--out", dir.file("at_the_limit")});  // the limit itself trains
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // the library refuses it too
  models::HfGpt2 gpt = models::load_hf_gpt2(kBase);
  expect_error([&] { models::apply_lora(*gpt.model, models::LoRAConfig{.r = 17, .alpha = 17.0, .attn = true}); },
               {"apply_lora: r = 17: above the smallest adapted matrix's min(in, out) = 16"});
  EXPECT_FALSE(models::has_lora(*gpt.model));
}

TEST(LoraRuns, AGoneBaseModelIsAnErrorNamingItsPath) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string base = dir.file("base"), run = dir.file("run");
  std::filesystem::copy(kBase, base);
  ProgramRun r = small_lora_run(base, run, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::filesystem::rename(base, dir.file("moved"));
  for (const ProgramRun& gone :
       {train_gpt({"--resume", run, "--steps", "3"}), run_program(example_program("generate"), {"--ckpt", run}),
        train_gpt({"--resume", run, "--merge-lora", dir.file("merged")})}) {
    EXPECT_EQ(gone.exit_code, 1) << gone.output;
    EXPECT_TRUE(has_part(gone.output, "run/adapter_config.json: the base model " +
                                          std::filesystem::absolute(base).lexically_normal().string() + " (base_model_name_or_path) is gone"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("merged")));
}

TEST(LoraRuns, BadCommandLinesAreOneLineErrorsNamingTheFlag) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string full = dir.file("full");  // a run from GPT-2 that trains every weight
  ProgramRun r = train_gpt({"--init-from", kBase, "--data", kText, "--steps", "1", "--batch", "2", "--context", "8",
                            "--sample-tokens", "1", "--eval-batches", "1", "--threads", "1", "--out", full});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--init-from", kBase, "--data", kText, "--lora-rank", "0"}, 2, "--lora-rank 0: the rank must be at least 1"},
      {{"--init-from", kBase, "--data", kText, "--lora-rank", "-4"}, 2, "--lora-rank -4: the rank must be at least 1"},
      {{"--init-from", kBase, "--data", kText, "--lora-rank", "2", "--lora-targets", "attn,ffn"}, 2,
       "--lora-targets: unknown LoRA target \"ffn\""},
      {{"--init-from", kBase, "--data", kText, "--lora-rank", "2", "--lora-alpha", "0"}, 2,
       "--lora-alpha must be positive"},
      {{"--data", kText, "--lora-rank", "2"}, 2, "--lora-rank needs --init-from DIR"},
      {{"--init-from", kBase, "--data", kText, "--lora-targets", "mlp"}, 2, "--lora-targets needs --lora-rank"},
      {{"--merge-lora", dir.file("m")}, 2, "--merge-lora OUT needs --resume RUN"},
      {{"--resume", full, "--merge-lora", dir.file("m")}, 2, "--merge-lora: " + full + " has no LoRA adapters"},
      {{"--resume", kBase, "--merge-lora", dir.file("m")}, 2, "has no LoRA adapters"},
  };
  for (const Case& c : cases) {
    r = train_gpt(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.output;
    EXPECT_TRUE(has_part(r.output, c.message)) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("m")));
}

}  // namespace
}  // namespace tg::test
