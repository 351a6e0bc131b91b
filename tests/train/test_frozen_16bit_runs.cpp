// A run from a BF16 or F16 Llama / Qwen folder keeps the weights that never train in the file's
// dtype (train/run_folder.cpp, trained_names): a classifier's body below --train-layers last, and
// a LoRA's base, on a fresh start and on --resume alike. The weights that train are float32
// masters. Widening a 16-bit value is exact, so the run is --dtype float32's to the bit: the same
// losses, the same trained weights, the same optimizer state; its checkpoint holds the frozen
// matrices in their own dtype, and resumes bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/runtime/memory.h"
#include "models/hf/hf_llama.h"
#include "models/lora/llama_lora.h"
#include "models/saved_model.h"
#include "nn/safetensors.h"
#include "train/run_folder.h"
#include "train/trainer.h"
#include "train/resumed_run.h"
#include "test_util.h"

namespace tg {
namespace {

const std::string kQwen3Base = std::string(TG_REFERENCE_DIR) + "/lora/qwen3_base";  // 2 layers of width 16
const std::string kMessages = std::string(TG_REFERENCE_DIR) + "/../../examples/data/messages.tsv";

// The tests' tiny Qwen3 written into dir with its matrices as dtype (bfloat16: rounded; float16:
// the nearest half), its norms float32, as a real checkpoint holds them; untied, its head a
// weight of its own (the embedding's values, transposed, so that it differs).
void write_16bit_base(const std::string& dir, ScalarType dtype, bool tied) {
  std::filesystem::create_directories(dir);
  for (const char* file : {"vocab.json", "merges.txt"})
    std::filesystem::copy_file(kQwen3Base + "/" + file, dir + "/" + file);
  std::string config = test::read_bytes(kQwen3Base + "/config.json");
  const std::string tie = "\"tie_word_embeddings\": true";
  if (!tied) config.replace(config.find(tie), tie.size(), "\"tie_word_embeddings\": false");
  test::write_bytes(dir + "/config.json", config);
  NamedTensors tensors = load_safetensors(kQwen3Base + "/model.safetensors");
  if (!tied) {
    for (const auto& [name, t] : NamedTensors(tensors))
      if (name == "model.embed_tokens.weight") tensors.push_back({"lm_head.weight", t * 0.5});
  }
  for (auto& [name, t] : tensors)
    if (t.dim() == 2) t = dtype == kFloat16 ? test::nearest_float16(t) : t.to(kBFloat16);
  save_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
}

// A --task classify run on the shipped messages from base, as train_gpt makes it.
train::TrainOptions classify_options(const std::string& base, const std::string& dtype) {
  train::TrainOptions o;
  o.task = "classify";
  o.data = kMessages;
  o.columns = "label,text";
  o.train_layers = "last";
  o.init_from = o.tokenizer = base;
  o.dtype = dtype;
  o.batch = 4;
  o.model.context_length = 24;
  o.steps = 6;
  o.warmup = 1;
  o.eval_batches = 1;
  o.threads = 1;
  return o;
}

std::unique_ptr<train::Trainer> start(const train::TrainOptions& o) {
  return train::start_from_llama_folder(o, test::read_bytes(o.data), nullptr);
}

// Which of the body's weights are held in 16 bits, and that exactly the others train.
std::vector<std::string> sixteen_bit_names(train::Trainer& t) {
  std::vector<std::string> names;
  for (const auto& [name, p] : t.model().named_parameters()) {
    if (is_16bit(p.dtype())) names.push_back(name);
    EXPECT_FALSE(is_16bit(p.dtype()) && p.requires_grad()) << name;
  }
  return names;
}

struct Case {
  ScalarType dtype;
  bool tied;
};

class Frozen16BitRuns : public ::testing::TestWithParam<Case> {};

TEST_P(Frozen16BitRuns, AClassifiersFrozenBodyStays16BitAndTrainsAsFloat32sToTheBit) {
  const auto [dtype, tied] = GetParam();
  test::TempFolder dir;
  const std::string base = dir.file("base");
  write_16bit_base(base, dtype, tied);
  std::vector<std::vector<double>> losses;
  std::vector<NamedTensors> weights, moments;
  for (const std::string flag : {"auto", "float32"}) {
    SCOPED_TRACE("--dtype " + flag);
    const std::unique_ptr<train::Trainer> t = start(classify_options(base, flag));
    std::vector<std::string> kept = sixteen_bit_names(*t);
    if (flag == "float32") {
      EXPECT_TRUE(kept.empty());
    } else {  // the embedding and layer 0's seven matrices (and an untied head); layer 1 and the norm train
      std::vector<std::string> want = {"model.embed_tokens.weight"};
      for (const char* m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                            "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
        want.push_back("model.layers.0." + std::string(m) + ".weight");
      if (!tied) want.push_back("lm_head.weight");
      std::sort(kept.begin(), kept.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(kept, want);
      for (const auto& [name, p] : t->model().named_parameters())
        if (p.dtype() != kFloat32) EXPECT_EQ(p.dtype(), dtype) << name;
    }
    losses.emplace_back();
    for (int i = 0; i < 4; ++i) losses.back().push_back(t->train_step().loss);
    NamedTensors trained;
    for (const auto& [name, p] : t->model().named_parameters())
      if (p.requires_grad()) trained.push_back({name, p});
    weights.push_back(trained);
    moments.push_back(t->optimizer().state_dict());
  }
  EXPECT_EQ(losses[0], losses[1]);  // exact
  for (const auto& pair : {std::pair{weights[0], weights[1]}, std::pair{moments[0], moments[1]}}) {
    ASSERT_EQ(pair.first.size(), pair.second.size());
    for (size_t k = 0; k < pair.first.size(); ++k)
      EXPECT_TRUE(test::same_bytes(pair.first[k].second, pair.second[k].second)) << pair.first[k].first;
  }
}

TEST_P(Frozen16BitRuns, AClassifiersCheckpointHoldsTheFrozenMatricesIn16BitsAndResumesBitForBit) {
  const auto [dtype, tied] = GetParam();
  test::TempFolder dir;
  const std::string base = dir.file("base"), run = dir.file("run");
  write_16bit_base(base, dtype, tied);
  std::filesystem::create_directories(run);
  const train::TrainOptions o = classify_options(base, "auto");
  const std::unique_ptr<train::Trainer> resumed = test::expect_resumed_run_equals_straight(
      [&] { return start(o); }, test::read_bytes(o.data), 2, run);
  EXPECT_EQ(sixteen_bit_names(*resumed).size(), tied ? 8u : 9u);
  size_t in_16_bits = 0;
  for (const SafetensorsEntry& e : safetensors_entries(run + "/model.safetensors")) in_16_bits += e.dtype == dtype;
  EXPECT_EQ(in_16_bits, tied ? 8u : 9u);
  // --dtype float32 on resume widens them, and goes on the same
  train::TrainOptions widened = train::saved_options(run);
  widened.dtype = "float32";
  const std::unique_ptr<train::Trainer> wide = train::resume_trainer(run, widened, test::read_bytes(o.data));
  EXPECT_TRUE(sixteen_bit_names(*wide).empty());
}

TEST_P(Frozen16BitRuns, AResumedLoraRunKeepsItsBase16Bit) {
  const auto [dtype, tied] = GetParam();
  test::TempFolder dir;
  const std::string base = dir.file("base"), run = dir.file("run");
  write_16bit_base(base, dtype, tied);
  std::filesystem::create_directories(run);
  train::TrainOptions o = classify_options(base, "auto");
  o.task = "lm";
  o.data = "";
  o.columns = "";
  o.train_layers = "all";
  o.lora_rank = 2;
  o.lora_alpha = 2;
  const std::string text = test::read_bytes(std::string(TG_REFERENCE_DIR) + "/lora/text.txt");
  const std::unique_ptr<train::Trainer> resumed = test::expect_resumed_run_equals_straight(
      [&] { return train::start_from_llama_folder(o, text, nullptr); }, text, 2, run);
  size_t kept = 0;
  for (const auto& [name, p] : resumed->model().named_parameters()) kept += p.dtype() == dtype;
  EXPECT_EQ(kept, tied ? 15u : 16u);  // the embedding and both layers' seven matrices (and the head)
}

// A LoRA run of the 16-bit base, saved in run (two steps on the shipped LoRA text).
void save_lora_run(const std::string& base, const std::string& run) {
  std::filesystem::create_directories(run);
  train::TrainOptions o = classify_options(base, "auto");
  o.task = "lm";
  o.data = o.columns = "";
  o.train_layers = "all";
  o.lora_rank = o.lora_alpha = 2;
  const std::string text = test::read_bytes(std::string(TG_REFERENCE_DIR) + "/lora/text.txt");
  const std::unique_ptr<train::Trainer> trainer = train::start_from_llama_folder(o, text, nullptr);
  for (int i = 0; i < 2; ++i) trainer->train_step();
  train::save_run(*trainer, run);
}

int64_t bytes_of(const NamedTensors& tensors) {
  int64_t n = 0;
  for (const auto& [name, t] : tensors) n += static_cast<int64_t>(t.nbytes());
  return n;
}

// --merge-lora merges and widens one weight at a time, as the file reaches it, beside the run's
// model read as its files hold it (the base 16-bit): never a float32 copy of the whole model (it
// made two: the merged weights, then a model built from them). The file is the one a merge made
// all at once would write: every tensor the base's, widened, with (alpha / r) B A added where an
// adapter is.
TEST_P(Frozen16BitRuns, AMergeHoldsOneFloat32WeightAtATime) {
  const auto [dtype, tied] = GetParam();
  test::TempFolder dir;
  const std::string base = dir.file("base"), run = dir.file("run"), merged = dir.file("merged");
  write_16bit_base(base, dtype, tied);
  save_lora_run(base, run);
  NamedTensors expected;
  int64_t model_bytes = 0, largest = 0;  // the run's model as read; the largest weight in float32
  {
    const models::SavedModel saved = models::load_saved_model(run, models::WeightsDtype::kCheckpoint);
    model_bytes = bytes_of(saved.model->named_parameters());
    for (auto& [name, t] : models::merged_state_dict(dynamic_cast<const models::LlamaForCausalLM&>(*saved.model))) {
      if (name == "lm_head.weight" && tied) continue;
      expected.push_back({name, t.to(kFloat32)});
      largest = std::max<int64_t>(largest, t.numel() * 4);
    }
  }
  const int64_t live = memory_stats().live_bytes;
  reset_peak_memory_stats();
  train::save_merged_model(run, merged);
  const int64_t peak = memory_stats().peak_bytes - live;
  const int64_t bound = model_bytes + 2 * largest;  // the model, a merged weight and its contiguous copy at most
  EXPECT_LE(peak, bound) << "the model " << model_bytes << " bytes, its largest weight " << largest << " in float32";
  ASSERT_LT(bound, model_bytes + bytes_of(expected));  // a float32 copy of the model would be caught
  const NamedTensors written = load_safetensors(merged + "/model.safetensors");
  ASSERT_EQ(written.size(), expected.size());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(written[i].first, expected[i].first);
    EXPECT_TRUE(test::same_bytes(written[i].second, expected[i].second)) << expected[i].first;
  }
}

// A merge whose weights overflow (finite adapters, W + (alpha / r) B A beyond float32) is refused
// before anything is written, naming the first such weight, though each is merged as it is checked.
TEST(Frozen16BitMerge, AMergeThatOverflowsWritesNothing) {
  test::TempFolder dir;
  const std::string base = dir.file("base"), run = dir.file("run"), merged = dir.file("merged");
  write_16bit_base(base, kBFloat16, true);
  save_lora_run(base, run);
  NamedTensors adapters = load_safetensors(run + "/adapters.safetensors");
  for (auto& [name, t] : adapters) t.fill_(1e20);  // B A is 2 * 1e20 * 1e20 in every element
  save_safetensors(run + "/adapters.safetensors", adapters, load_safetensors_metadata(run + "/adapters.safetensors"));
  test::expect_error([&] { train::save_merged_model(run, merged); },
                     {"--merge-lora " + merged + ": nothing written: the merged model: tensor "
                      "\"model.layers.0.self_attn.q_proj.weight\" has a non-finite value (inf) at index [0, 0] (" +
                      run + "'s adapters added to its base)"});
  EXPECT_FALSE(std::filesystem::exists(merged));
}

// A classifier's LoRA run merges into a *ForSequenceClassification folder: the body's weights
// merged, the head (kept whole by the run, as peft's modules_to_save) and the classes beside them,
// so the merged folder classifies as the run does (it wrote a causal LM's folder, the head lost).
TEST_P(Frozen16BitRuns, AClassifiersLoraRunMergesIntoAClassifierFolder) {
  const auto [dtype, tied] = GetParam();
  test::TempFolder dir;
  const std::string base = dir.file("base"), run = dir.file("run"), merged = dir.file("merged");
  write_16bit_base(base, dtype, tied);
  std::filesystem::create_directories(run);
  train::TrainOptions o = classify_options(base, "auto");
  o.lora_rank = o.lora_alpha = 2;
  o.train_layers = "lora";
  const std::unique_ptr<train::Trainer> trainer = start(o);
  for (int i = 0; i < 2; ++i) trainer->train_step();
  train::save_run(*trainer, run);
  train::save_merged_model(run, merged);
  const json::Value config = json::parse_file(merged + "/config.json");
  EXPECT_EQ(config["architectures"][0].as_string(), "Qwen3ForSequenceClassification");
  EXPECT_EQ(config["id2label"]["1"].as_string(), json::parse_file(run + "/config.json")["id2label"]["1"].as_string());
  EXPECT_FALSE(config.contains("tapegrad"));
  const models::SavedClassifier want = models::load_saved_classifier(run), got = models::load_saved_classifier(merged);
  for (const std::vector<int64_t>& ids : {std::vector<int64_t>{3, 17, 40, 9}, std::vector<int64_t>{5, 1, 2, 60, 61, 7, 7}}) {
    const std::vector<double> p = models::class_probabilities(*want.model, ids), q = models::class_probabilities(*got.model, ids);
    ASSERT_EQ(p.size(), q.size());
    for (size_t c = 0; c < p.size(); ++c) EXPECT_NEAR(q[c], p[c], 1e-6) << "class " << c;
  }
}

INSTANTIATE_TEST_SUITE_P(, Frozen16BitRuns,
                         ::testing::Values(Case{kBFloat16, true}, Case{kFloat16, true}, Case{kBFloat16, false}),
                         [](const auto& info) {
                           return std::string(info.param.dtype == kFloat16 ? "F16" : "BF16") +
                                  (info.param.tied ? "Tied" : "Untied");
                         });

}  // namespace
}  // namespace tg
