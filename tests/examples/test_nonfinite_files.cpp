// Files that hold an inf or a nan (nn/safetensors.h's check_finite, train/run_folder.h):
// a GPT-2 folder's weights, a run's weights, its LoRA adapters and its optimizer state are refused
// when read, naming the file, the tensor and the first bad index, before anything is written; a
// checkpoint is saved only when it is finite, the files already there left byte for byte; a
// lora_alpha whose scale overflows is refused naming the field; --merge-lora writes no non-finite
// model; and --eval-only turns a loss that is not finite into an error, never a line JSON cannot read.
// The models are tiny (tests/reference/lora/base: 2 layers of width 16; runs of width 8).
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "train/corpus.h"
#include "models/hf/hf_gpt2.h"
#include "models/lora/lora_adapters.h"
#include "train/trainer.h"
#include "examples/tiny_train_options.h"
#include "test_util.h"

namespace tg::test {
namespace {

namespace fs = std::filesystem;

const std::string kLora = std::string(TG_REFERENCE_DIR) + "/lora";
const std::string kBase = kLora + "/base", kText = kLora + "/text.txt";
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

#define SKIP_WITHOUT_EXAMPLES() \
  if (example_program("train_gpt").empty()) GTEST_SKIP() << "the examples are not built"

// Every file of a folder (and its subfolders) with its bytes: equal before and after means nothing
// was replaced, added or removed.
std::map<std::string, std::string> folder_bytes(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) out[entry.path().string()] = read_bytes(entry.path().string());
  return out;
}

// Rewrites a safetensors file (metadata kept) with element `flat` (row-major) of tensor `name` set to value.
void set_element(const std::string& path, const std::string& name, int64_t flat, double value) {
  NamedTensors tensors = load_safetensors(path);
  bool found = false;
  for (auto& [n, t] : tensors) {
    if (n != name) continue;
    t.reshape({t.numel()}).narrow(0, flat, 1).fill_(value);
    found = true;
  }
  ASSERT_TRUE(found) << name << " is not in " << path;
  save_safetensors(path, tensors, load_safetensors_metadata(path));
}

// t[index] = value, in place (a parameter too: no tape records it).
void set_at(const Tensor& t, const std::vector<int64_t>& index, double value) {
  NoGradGuard no_grad;
  Tensor element = t;
  for (int64_t i : index) element = element[i];
  element.fill_(value);
}

// A copy of the tiny GPT-2 folder (its weights and tokenizer files) in dir/name.
std::string copy_of_base(const TempFolder& dir, const std::string& name = "gpt2") {
  const std::string to = dir.file(name);
  fs::copy(kBase, to, fs::copy_options::recursive);
  return to;
}

train::TrainOptions tiny_options() { return tiny_train_options(1); }

const std::string& corpus() {
  static const std::string t = train::builtin_corpus(4000, 3);
  return t;
}

// A LoRA run (rank 2 on attn and mlp) on the tiny GPT-2, one step, saved in dir (made here).
void save_small_lora_run(const std::string& dir) {
  fs::create_directories(dir);
  train::TrainOptions o = tiny_options();
  o.lora_rank = 2;
  o.lora_alpha = 4;
  o.lora_targets = "attn,mlp";
  const models::GPTConfig config = models::hf_gpt2_config(json::parse_file(kBase + "/config.json"), kBase);
  train::Trainer trainer(o, read_bytes(kText), tokenizers::load_tokenizer(kBase), config);
  models::HfGpt2Info layout;
  models::load_hf_gpt2_weights(trainer.gpt(), kBase + "/model.safetensors", &layout);
  trainer.apply_lora(kBase);
  trainer.train_step();
  train::save_run(trainer, dir);
}

ProgramRun train_gpt(const std::vector<std::string>& args) { return run_program(example_program("train_gpt"), args); }

// --- the check itself ------------------------------------------------------------------------

TEST(NonFiniteFiles, CheckFiniteNamesTheFileTheTensorAndTheFirstBadIndex) {
  Tensor w = zeros({4, 20});
  set_at(w, {2, 5}, kInf);
  set_at(w, {1, 17}, -kInf);  // the first in row-major order
  set_at(w, {3, 17}, kNan);
  expect_error([&] { check_finite({{"ok", ones({3})}, {"h.0.attn.c_attn.weight", w}}, "model.safetensors"); },
               {"model.safetensors: tensor \"h.0.attn.c_attn.weight\" has a non-finite value (-inf) at index [1, 17]"});
  EXPECT_EQ(first_nonfinite(w.narrow(0, 2, 2)), "a non-finite value (inf) at index [0, 5]");  // a view: its own indices
  EXPECT_EQ(first_nonfinite(w.transpose(0, 1)), "a non-finite value (inf) at index [5, 2]");  // its row-major order
  EXPECT_EQ(first_nonfinite(full({}, kNan, kFloat64)), "a non-finite value (nan)");  // a 0-dim tensor has no index
  EXPECT_EQ(first_nonfinite(w.narrow(0, 3, 1).to(kBFloat16)), "a non-finite value (nan) at index [0, 17]");
  EXPECT_EQ(first_nonfinite(full({2}, 1e300, kFloat64)), std::nullopt);  // finite, though no float32
  EXPECT_EQ(first_nonfinite(zeros({2}, kInt64)), std::nullopt);
  EXPECT_EQ(first_nonfinite(zeros({0, 3})), std::nullopt);
  check_finite({{"a", ones({2, 2})}, {"b", full({}, 3.4e38)}}, "x.safetensors");  // nothing to say
}

TEST(NonFiniteFiles, TheReaderKeepsEveryValueUnlessAskedForFiniteOnes) {
  TempFolder dir;
  const std::string path = dir.file("t.safetensors");
  save_safetensors(path, {{"mask", full({2, 3}, -kInf)}, {"w", ones({2})}});
  EXPECT_EQ(load_safetensors(path)[0].second.tolist<float>()[4], -std::numeric_limits<float>::infinity());
  expect_error([&] { load_safetensors(path, {.finite_only = true}); },
               {path + ": tensor \"mask\" has a non-finite value (-inf) at index [0, 0]"});
}

// The reader counts infs and nans slice by slice (1 MiB) as it reads them: one in a later slice,
// in the very last element, in a float64, in a bfloat16 kept as it is and in one widened to
// float32 is each found and named, after a finite tensor of three slices read whole.
TEST(NonFiniteFiles, EveryValueOfALargeTensorIsCheckedWhereverItLies) {
  TempFolder dir;
  const std::string path = dir.file("big.safetensors");
  const int64_t rows = 700, cols = 1000;  // 2.8 MB as float32: three slices
  struct Case {
    ScalarType dtype;
    int64_t row, col;
    double value;
    std::string shown;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const Case& c : {Case{kFloat32, 500, 3, nan, "nan"}, Case{kFloat32, rows - 1, cols - 1, inf, "inf"},
                        Case{kFloat64, 300, 0, -inf, "-inf"}, Case{kBFloat16, rows - 1, cols - 2, nan, "nan"}}) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " " + c.shown);
    const Tensor w = zeros({rows, cols}, c.dtype);
    set_at(w, {c.row, c.col}, c.value);
    save_safetensors(path, {{"a_finite_one", ones({rows, cols})}, {"w", w}});
    const std::string message = path + ": tensor \"w\" has a non-finite value (" + c.shown + ") at index [" +
                                std::to_string(c.row) + ", " + std::to_string(c.col) + "]";
    expect_error([&] { load_safetensors(path, {.finite_only = true}); }, {message});
    if (c.dtype == kBFloat16) {  // read widened to float32, and kept bfloat16
      expect_error([&] { load_safetensors(path, {.float16_to_float32 = true, .finite_only = true}); }, {message});
      expect_error([&] {
        load_safetensors(path, {.float16_to_float32 = true,
                                .keep_16bit = [](const std::string&) { return true; },
                                .finite_only = true});
      }, {message});
    }
    EXPECT_EQ(load_safetensors(path).size(), 2u);  // without finite_only every value is read as it is
  }
  save_safetensors(path, {{"a_finite_one", ones({rows, cols})}, {"w", full({rows, cols}, 3.4e38)}});
  EXPECT_EQ(load_safetensors(path, {.finite_only = true}).size(), 2u);
}

// --- a GPT-2 folder --------------------------------------------------------------------------

TEST(NonFiniteFiles, AGpt2FolderWithANanWeightIsRefusedByEveryReader) {
  TempFolder dir;
  const std::string gpt2 = copy_of_base(dir);
  set_element(gpt2 + "/model.safetensors", "transformer.h.0.attn.c_attn.weight", 3 * 48 + 17, kNan);
  const std::string message = gpt2 + "/model.safetensors: tensor \"transformer.h.0.attn.c_attn.weight\" has a "
                              "non-finite value (nan) at index [3, 17]";
  expect_error([&] { models::load_hf_gpt2(gpt2); }, {message});
  SKIP_WITHOUT_EXAMPLES();
  const auto before = folder_bytes(dir.path);
  ProgramRun r = run_program(example_program("generate"), {"--ckpt", gpt2, "--prompt", "the", "--tokens", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, "generate: " + message)) << r.output;
  r = train_gpt({"--eval-only", "--init-from", gpt2, "--data", kText});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, "train_gpt: " + message)) << r.output;
  EXPECT_EQ(r.output.find('{'), std::string::npos) << r.output;  // no JSON line
  r = train_gpt({"--init-from", gpt2, "--data", kText, "--steps", "1", "--out", dir.file("run")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, message)) << r.output;
  EXPECT_EQ(folder_bytes(dir.path), before);  // no run folder made, nothing changed
}

TEST(NonFiniteFiles, EvalOnlyWhoseLossIsNotFiniteIsAnErrorNotALineJsonCannotRead) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string gpt2 = copy_of_base(dir);
  // finite weights whose sum overflows float32: every embedding is inf, every output nan
  NamedTensors tensors = load_safetensors(gpt2 + "/model.safetensors");
  for (auto& [name, t] : tensors)
    if (name == "transformer.wte.weight" || name == "transformer.wpe.weight") t.fill_(3e38);
  save_safetensors(gpt2 + "/model.safetensors", tensors, {{"format", "pt"}});
  const std::string text = dir.file("text.txt");
  write_bytes(text, read_bytes(kText).substr(0, 300));
  const ProgramRun r = train_gpt({"--eval-only", "--init-from", gpt2, "--data", text});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, "train_gpt: --eval-only: " + text + ": the loss is nan (perplexity nan): not a "
                                 "finite number; " + gpt2 + "'s weights are finite, but its outputs overflow on this text"))
      << r.output;
  EXPECT_EQ(r.output.find('{'), std::string::npos) << r.output;
}

// --- a run's weights and optimizer state -----------------------------------------------------

TEST(NonFiniteFiles, ARunWithANanWeightIsRefusedWhenResumedOrRead) {
  TempFolder dir;
  {
    train::Trainer t(tiny_options(), corpus());
    t.train_step();
    train::save_run(t, dir.path);
  }
  set_element(dir.file("model.safetensors"), "trf_blocks.0.att.W_query.weight", 1 * 8 + 2, kInf);
  const auto before = folder_bytes(dir.path);
  const std::string message =
      dir.file("model.safetensors") + ": tensor \"trf_blocks.0.att.W_query.weight\" has a non-finite value (inf) at index [1, 2]";
  expect_error([&] { train::resume_trainer(dir.path, train::saved_options(dir.path), corpus()); }, {message});
  expect_error([&] { models::load_saved_model(dir.path); }, {message});
  EXPECT_EQ(folder_bytes(dir.path), before);
}

TEST(NonFiniteFiles, ANanOptimizerStateIsRefusedBeforeAnyStepAndNothingIsReplaced) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run");
  const std::vector<std::string> tiny = {"--layers", "1", "--emb-dim", "8", "--heads", "2", "--context", "8",
                                         "--batch", "2", "--eval-every", "2", "--eval-batches", "1",
                                         "--sample-tokens", "2", "--threads", "1"};
  std::vector<std::string> args = {"--steps", "2", "--out", run};
  args.insert(args.end(), tiny.begin(), tiny.end());
  ProgramRun r = train_gpt(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  set_element(run + "/optimizer.safetensors", "trf_blocks.0.att.W_query.weight.exp_avg_sq", 1 * 8 + 2, kNan);
  const auto before = folder_bytes(dir.path);
  // once, the step ran on, wrote an all-nan model.safetensors over the good one and failed after
  r = train_gpt({"--resume", run, "--steps", "4"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, "train_gpt: " + run + "/optimizer.safetensors: tensor "
                                 "\"trf_blocks.0.att.W_query.weight.exp_avg_sq\" has a non-finite value (nan) at index [1, 2]"))
      << r.output;
  EXPECT_EQ(folder_bytes(dir.path), before);
}

// A run saved at step 1, then its model or optimizer made non-finite in memory: save_run
// refuses, naming the tensor, and leaves every file of the folder as it was.
TEST(NonFiniteFiles, ACheckpointIsSavedOnlyWhenItIsFinite) {
  TempFolder dir;
  train::Trainer t(tiny_options(), corpus());
  t.train_step();
  train::save_run(t, dir.path);
  t.train_step();
  const auto before = folder_bytes(dir.path);
  Tensor weight, moment;
  for (const auto& [name, p] : t.model().state_dict())
    if (name == "trf_blocks.0.ff.layers.0.weight") weight = p;
  for (const auto& [name, s] : t.optimizer().state_dict())
    if (name == "final_norm.bias.exp_avg") moment = s;
  ASSERT_TRUE(weight.defined() && moment.defined());
  const std::string kept = "; the files in " + dir.path + " are left as they were";
  set_at(weight, {5, 3}, kNan);
  expect_error([&] { train::save_run(t, dir.path); },
               {"step 2: the checkpoint is not saved: " + dir.file("model.safetensors") +
                ": tensor \"trf_blocks.0.ff.layers.0.weight\" has a non-finite value (nan) at index [5, 3]" + kept});
  EXPECT_EQ(folder_bytes(dir.path), before);
  set_at(weight, {5, 3}, 0.0);
  set_at(moment, {6}, -kInf);
  expect_error([&] { train::save_run(t, dir.path); },
               {"step 2: the checkpoint is not saved: " + dir.file("optimizer.safetensors") +
                ": tensor \"final_norm.bias.exp_avg\" has a non-finite value (-inf) at index [6]" + kept});
  EXPECT_EQ(folder_bytes(dir.path), before);
  set_at(moment, {6}, 0.0);
  train::save_run(t, dir.path);  // finite again: saved
  EXPECT_NE(folder_bytes(dir.path), before);
}

// --- LoRA adapters and adapter_config.json ---------------------------------------------------

TEST(NonFiniteFiles, NanAdaptersAreRefusedAndMergeLoraWritesNothing) {
  TempFolder dir;
  const std::string run = dir.file("run"), merged = dir.file("merged");
  save_small_lora_run(run);
  const std::string adapter = "base_model.model.transformer.h.1.mlp.c_fc.lora_B.weight";  // (64, 2)
  set_element(run + "/adapters.safetensors", adapter, 7 * 2 + 1, kNan);
  const auto before = folder_bytes(dir.path);
  const std::string message =
      run + "/adapters.safetensors: tensor \"" + adapter + "\" has a non-finite value (nan) at index [7, 1]";
  expect_error([&] { models::load_saved_model(run); }, {message});
  expect_error([&] { train::resume_trainer(run, train::saved_options(run), read_bytes(kText)); }, {message});
  expect_error([&] { train::save_merged_model(run, merged); }, {message});
  EXPECT_EQ(folder_bytes(dir.path), before);
  EXPECT_FALSE(fs::exists(merged));
}

TEST(NonFiniteFiles, AnAdaptersSaveIsRefusedWhenOneIsNotFinite) {
  TempFolder dir;
  save_small_lora_run(dir.path);
  const auto before = folder_bytes(dir.path);
  train::TrainOptions o = train::saved_options(dir.path);
  std::unique_ptr<train::Trainer> t = train::resume_trainer(dir.path, o, read_bytes(kText));
  for (const auto& [name, p] : t->model().state_dict())
    if (name == "trf_blocks.0.att.qkv_lora.lora_A.weight") set_at(p, {1, 4}, kInf);
  expect_error([&] { train::save_run(*t, dir.path); },
               {"step 1: the checkpoint is not saved: " + dir.file("adapters.safetensors") +
                ": tensor \"base_model.model.transformer.h.0.attn.c_attn.lora_A.weight\" has a non-finite value (inf) "
                "at index [1, 4]"});
  EXPECT_EQ(folder_bytes(dir.path), before);
}

TEST(NonFiniteFiles, ALoraAlphaWhoseScaleOverflowsIsRefusedNamingTheField) {
  TempFolder dir;
  const std::string run = dir.file("run"), merged = dir.file("merged");
  save_small_lora_run(run);
  const std::string config = run + "/adapter_config.json";
  std::string text = read_bytes(config);
  const std::string alpha = "\"lora_alpha\": 4,";
  ASSERT_NE(text.find(alpha), std::string::npos) << text;
  text.replace(text.find(alpha), alpha.size(), "\"lora_alpha\": 1e308,");
  write_bytes(config, text);
  const auto before = folder_bytes(dir.path);
  const std::string message = config + ": \"lora_alpha\" / \"r\" = 5e+307, the adapters' scale, is beyond float32's "
                              "range: \"lora_alpha\" is too large";
  expect_error([&] { models::read_adapter_config(config); }, {message});
  expect_error([&] { models::load_saved_model(run); }, {message});
  expect_error([&] { train::save_merged_model(run, merged); }, {message});
  EXPECT_EQ(folder_bytes(dir.path), before);
  EXPECT_FALSE(fs::exists(merged));
}

TEST(NonFiniteFiles, MergeLoraNeverWritesANonFiniteModel) {
  TempFolder dir;
  const std::string run = dir.file("run"), merged = dir.file("merged");
  save_small_lora_run(run);
  // finite adapters whose product overflows float32: B A is 2 * 1e20 * 1e20 in every element
  NamedTensors adapters = load_safetensors(run + "/adapters.safetensors");
  for (auto& [name, t] : adapters) t.fill_(1e20);
  save_safetensors(run + "/adapters.safetensors", adapters, load_safetensors_metadata(run + "/adapters.safetensors"));
  const auto before = folder_bytes(dir.path);
  expect_error([&] { train::save_merged_model(run, merged); },
               {"--merge-lora " + merged + ": nothing written: the merged model: tensor \"trf_blocks.0.att.W_query.weight\" "
                "has a non-finite value (inf) at index [0, 0] (" + run + "'s adapters added to its base)"});
  EXPECT_EQ(folder_bytes(dir.path), before);
  EXPECT_FALSE(fs::exists(merged));
}

}  // namespace
}  // namespace tg::test
