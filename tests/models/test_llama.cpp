// The Llama / Qwen family (models/llama.h) and its Hugging Face folders (models/hf/hf_llama.h), against
// the PyTorch twin in Hugging Face's layout (tests/reference/make_hf_llama_reference.py,
// examples/pytorch/tapegrad_twin/hf_llama.py): each type's logits and greedy ids from its F32 folder and its
// sharded BF16 one, the KV cache against the full forward, saving back, and each kind of bad
// folder an error naming what is wrong.
#include "models/llama.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/generation/generate.h"
#include "models/hf/hf_folder.h"
#include "models/hf/hf_llama.h"
#include "nn/init.h"
#include "test_util.h"

namespace tg {
namespace {

const std::string kFixtures = std::string(TG_REFERENCE_DIR) + "/hf_llama";
const std::vector<std::string> kTypes = {"llama", "qwen2", "qwen3"};

Tensor reference(const std::string& name) {
  for (auto& [n, t] : load_safetensors(kFixtures + "/logits.safetensors"))
    if (n == name) return t;
  throw Error("no " + name + " in logits.safetensors");
}

// A small Qwen3 of tapegrad's own (vocabulary 13, width 8, feed-forward 12, 16 positions).
models::LlamaConfig tiny_qwen3(int64_t layers, int64_t heads, int64_t kv_heads, int64_t head_dim) {
  models::LlamaConfig c;
  c.model_type = "qwen3";
  c.vocab_size = 13;
  c.hidden_size = 8;
  c.intermediate_size = 12;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.max_position_embeddings = 16;
  c.qk_norm = true;
  c.tie_word_embeddings = true;
  return c;
}

Tensor logits_of(models::CausalLM& model, const Tensor& ids) {
  NoGradGuard no_grad;
  return model.forward(ids);
}

TEST(HfLlama, EachTypesLogitsMatchTheTwinFromF32AndShardedBF16Folders) {
  for (const std::string& type : kTypes) {
    for (const std::string folder : {"f32", "bf16"}) {
      SCOPED_TRACE(type + "/" + folder);
      models::HfLlama hf = models::load_hf_llama(kFixtures + "/" + type + "/" + folder);
      EXPECT_EQ(hf.config.model_type, type);
      EXPECT_TRUE(test::all_close(logits_of(*hf.model, reference("ids")), reference(type + "_" + folder), 1e-5, 1e-5));
    }
  }
}

TEST(HfLlama, GreedyIdsWithTheKVCacheAreTheTwins) {
  for (const std::string& type : kTypes) {
    for (const std::string folder : {"f32", "bf16"}) {
      SCOPED_TRACE(type + "/" + folder);
      models::HfLlama hf = models::load_hf_llama(kFixtures + "/" + type + "/" + folder);
      const Tensor want = reference(type + "_" + folder + "_greedy");
      const Tensor ids = reference("ids");
      const Tensor got = models::generate(*hf.model, ids, want.size(1) - ids.size(1), {.temperature = 0.0});
      EXPECT_EQ(got.tolist<int64_t>(), want.tolist<int64_t>());
    }
  }
}

// Folders that Hugging Face transformers 5.17 wrote itself (save_pretrained: rope_parameters,
// layer_types, generation_config.json), with its logits and greedy ids
// (tests/reference/make_hf_llama_transformers_reference.py; not run in CI).
TEST(HfLlama, FoldersTransformersWroteGiveItsLogitsAndGreedyIds) {
  const std::string dir = kFixtures + "/transformers";
  Tensor ids, logits, greedy_ids;
  const NamedTensors want = load_safetensors(dir + "/logits.safetensors");
  for (const std::string& type : kTypes) {
    SCOPED_TRACE(type);
    models::HfLlama hf = models::load_hf_llama(dir + "/" + type);
    for (const auto& [name, t] : want) {
      if (name == "ids") ids = t;
      if (name == type) logits = t;
      if (name == type + "_greedy") greedy_ids = t;
    }
    EXPECT_TRUE(test::all_close(logits_of(*hf.model, ids), logits, 1e-5, 1e-5));
    const Tensor got = models::generate(*hf.model, ids, greedy_ids.size(1) - ids.size(1), {.temperature = 0.0});
    EXPECT_EQ(got.tolist<int64_t>(), greedy_ids.tolist<int64_t>());
  }
  EXPECT_EQ(models::load_hf_llama(dir + "/llama").config.rope_scaling.rope_type, "llama3");  // from rope_parameters
}

TEST(HfLlama, TheConfigsSaySetsEachTypeApart) {
  const models::LlamaConfig llama = models::load_hf_llama(kFixtures + "/llama/f32").config;
  EXPECT_EQ(llama.head_dim, 8);  // hidden_size / heads: no head_dim field
  EXPECT_EQ(llama.num_key_value_heads, 2);
  EXPECT_EQ(llama.rope_scaling.rope_type, "llama3");
  EXPECT_EQ(llama.rope_scaling.original_max_position_embeddings, 32);
  EXPECT_TRUE(llama.tie_word_embeddings);
  EXPECT_FALSE(llama.qkv_bias);
  const models::LlamaConfig qwen2 = models::load_hf_llama(kFixtures + "/qwen2/f32").config;
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.o_bias);
  EXPECT_FALSE(qwen2.tie_word_embeddings);
  EXPECT_EQ(qwen2.num_key_value_heads, 1);
  const models::LlamaConfig qwen3 = models::load_hf_llama(kFixtures + "/qwen3/f32").config;
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_EQ(qwen3.head_dim, 12);
  EXPECT_EQ(qwen3.rope_theta, 1e6);
}

TEST(HfLlama, InfoSaysTheShardsTheConvertedDtypesAndTheLmHead) {
  const models::HfLlamaInfo f32 = models::load_hf_llama(kFixtures + "/llama/f32").info;
  const models::HfLlamaInfo bf16 = models::load_hf_llama(kFixtures + "/llama/bf16").info;
  EXPECT_EQ(f32.weight_files.size(), 1u);
  EXPECT_EQ(bf16.weight_files.size(), 2u);
  EXPECT_TRUE(f32.converted_dtypes.empty());
  EXPECT_EQ(bf16.converted_dtypes, std::vector<std::string>{"BF16"});
  EXPECT_FALSE(f32.had_lm_head);
  EXPECT_TRUE(bf16.had_lm_head);
  EXPECT_TRUE(models::is_hf_llama_folder(kFixtures + "/qwen3/bf16"));
  EXPECT_FALSE(models::is_hf_llama_folder(kFixtures));
}

TEST(Llama, TheStateDictIsTheHuggingFaceLayout) {
  for (const std::string& type : kTypes) {
    SCOPED_TRACE(type);
    const models::HfLlama hf = models::load_hf_llama(kFixtures + "/" + type + "/f32");
    std::vector<std::string> names;
    for (const auto& [name, t] : hf.model->state_dict())
      if (!(name == "lm_head.weight" && hf.config.tie_word_embeddings)) names.push_back(name);
    std::vector<std::string> layout;
    for (const auto& [name, shape] : models::hf_llama_layout(hf.config)) layout.push_back(name);
    EXPECT_EQ(names, layout);
  }
}

TEST(Llama, IncrementalLogitsEqualTheFullForward) {
  for (const std::string& type : kTypes) {
    SCOPED_TRACE(type);
    models::HfLlama hf = models::load_hf_llama(kFixtures + "/" + type + "/f32");
    const Tensor ids = reference("ids");  // (2, 10)
    const Tensor full = logits_of(*hf.model, ids);
    NoGradGuard no_grad;
    models::GPTCache cache;
    const Tensor first = hf.model->forward(ids.narrow(1, 0, 6), cache);  // 6 at once, then one at a time
    EXPECT_TRUE(test::all_close(first, full.narrow(1, 0, 6), 1e-5, 1e-5));
    for (int64_t t = 6; t < 10; ++t) {
      const Tensor step = hf.model->forward(ids.narrow(1, t, 1), cache);
      EXPECT_TRUE(test::all_close(step, full.narrow(1, t, 1), 1e-5, 1e-5)) << "position " << t;
    }
    EXPECT_EQ(cache.length(), 10);
  }
}

TEST(Llama, ThePaddingMaskLeavesTheRealPositionsAsTheyAre) {
  models::HfLlama hf = models::load_hf_llama(kFixtures + "/qwen3/f32");
  const Tensor ids = reference("ids").narrow(0, 0, 1);  // (1, 10)
  const Tensor short_logits = logits_of(*hf.model, ids.narrow(1, 0, 7));
  Tensor padded = ids.clone();
  padded.narrow(1, 7, 3).fill_(0.0);
  Tensor mask = zeros({1, 10}, kBool);
  mask.narrow(1, 7, 3).fill_(1.0);
  NoGradGuard no_grad;
  EXPECT_TRUE(test::all_close(hf.model->forward(padded, mask).narrow(1, 0, 7), short_logits, 1e-5, 1e-5));
}

TEST(HfLlama, SavingAndReadingBackGivesTheSameModelAndKeepsTheConfigsFields) {
  for (const std::string& type : kTypes) {
    SCOPED_TRACE(type);
    const models::HfLlama hf = models::load_hf_llama(kFixtures + "/" + type + "/bf16");
    test::TempFolder out;
    models::save_hf_llama(*hf.model, out.path, hf.info);
    const models::HfLlama back = models::load_hf_llama(out.path);
    const Tensor ids = reference("ids");
    EXPECT_TRUE(test::same_bytes(logits_of(*back.model, ids), logits_of(*hf.model, ids)));
    EXPECT_EQ(back.info.config["torch_dtype"].as_string(), "float32");
    EXPECT_EQ(back.info.config["model_type"].as_string(), type);
    EXPECT_EQ(back.info.config.contains("sliding_window"), type == "qwen2");  // another field, kept
    EXPECT_EQ(back.info.weight_files.size(), 1u);
    EXPECT_FALSE(back.info.had_lm_head);
  }
  test::TempFolder fresh;  // a model of tapegrad's own: the fields Hugging Face's config needs
  models::LlamaForCausalLM model(tiny_qwen3(1, 2, 1, 6));
  models::save_hf_llama(model, fresh.path);
  const models::HfLlama back = models::load_hf_llama(fresh.path);
  EXPECT_EQ(back.config.head_dim, 6);
  EXPECT_TRUE(back.config.qk_norm);
  const Tensor ids = from_vector(std::vector<int64_t>{1, 2, 12}, {1, 3});
  EXPECT_TRUE(test::same_bytes(logits_of(*back.model, ids), logits_of(model, ids)));
}

// For tests/python/test_hf_llama.py: each type's sharded BF16 folder saved by tapegrad into
// $TG_HF_LLAMA_OUT/<type>, for the PyTorch twin to read.
TEST(HfLlama, SavesEachBF16FolderIntoTheFolderNamedByTgHfLlamaOut) {
  const char* out = std::getenv("TG_HF_LLAMA_OUT");
  if (out == nullptr) GTEST_SKIP() << "TG_HF_LLAMA_OUT is not set (tests/python/test_hf_llama.py sets it)";
  for (const std::string& type : kTypes) {
    const models::HfLlama hf = models::load_hf_llama(kFixtures + "/" + type + "/bf16");
    std::filesystem::create_directories(std::string(out) + "/" + type);
    models::save_hf_llama(*hf.model, std::string(out) + "/" + type, hf.info);
  }
}

// A copy of a fixture folder, with its config.json edited or files changed.
struct EditedFolder {
  test::TempFolder dir;
  explicit EditedFolder(const std::string& from) {
    for (const auto& f : std::filesystem::directory_iterator(kFixtures + "/" + from))
      std::filesystem::copy_file(f.path(), dir.file(f.path().filename().string()));
  }
  void replace(const std::string& file, const std::string& from, const std::string& to) const {
    std::string text = test::read_bytes(dir.file(file));
    const size_t at = text.find(from);
    if (at == std::string::npos) throw std::runtime_error("no " + from + " in " + file);
    test::write_bytes(dir.file(file), text.replace(at, from.size(), to));
  }
};

TEST(HfLlama, BadConfigsAreErrorsNamingTheField) {
  auto config_error = [](const std::string& type, const std::string& from, const std::string& to,
                         const std::vector<std::string>& parts) {
    SCOPED_TRACE(to);
    EditedFolder f(type + "/f32");
    f.replace("config.json", from, to);
    test::expect_error([&] { models::load_hf_llama(f.dir.path); }, parts);
  };
  config_error("llama", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3",
               {"config.json: LlamaConfig: num_attention_heads (4) must be divisible by num_key_value_heads (3)"});
  config_error("llama", "\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\"",
               {"config.json: \"rope_scaling\" has rope_type \"yarn\": tapegrad reads \"default\" and \"llama3\""});
  config_error("llama", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", {"\"hidden_act\" is \"gelu\""});
  config_error("qwen2", "\"use_sliding_window\": false", "\"use_sliding_window\": true",
               {"\"use_sliding_window\" is true: sliding-window attention is unsupported"});
  config_error("qwen2", "\"hidden_act\"", "\"attention_bias\": true, \"hidden_act\"",
               {"\"attention_bias\" is set, but qwen2 has no such switch"});
  config_error("qwen3", "\"model_type\": \"qwen3\"", "\"model_type\": \"mistral\"",
               {"\"model_type\" is \"mistral\": tapegrad reads \"gpt2\", \"llama\", \"qwen2\" and \"qwen3\""});
  config_error("qwen3", "\"model_type\": \"qwen3\"", "\"model_type\": \"Qwen3\"",
               {"\"model_type\" is \"Qwen3\": model_type is case-sensitive; tapegrad reads \"gpt2\", \"llama\", "
                "\"qwen2\" and \"qwen3\""});
  config_error("qwen3", "\"head_dim\": 12", "\"head_dim\": 7", {"head_dim must be positive and even"});
  // positive, but RoPE's float32 tables overflow: inf frequencies, NaN logits
  config_error("qwen3", "\"rope_theta\": 1000000.0", "\"rope_theta\": 1e-300",
               {"config.json: LlamaConfig: rope_theta (1e-300) gives RoPE frequencies that are not finite"});
  config_error("qwen3", "\"rope_theta\": 1000000.0", "\"rope_theta\": 1e-45",
               {"config.json: LlamaConfig: rope_theta (1e-45) gives RoPE angles that are not finite by position 63 "
                "(max_position_embeddings 64)"});
  config_error("llama", "\"rope_theta\": 500000.0", "\"rope_theta\": 1e-300",
               {"config.json: LlamaConfig: rope_theta (1e-300) gives RoPE frequencies that are not finite"});
  config_error("llama", "\"factor\": 8.0", "\"factor\": 1e-300",
               {"config.json: LlamaConfig: rope_scaling (factor 1e-300, low_freq_factor ",
                ") gives RoPE frequencies that are not finite"});
}

// Logits that are not finite are an error naming the position, greedy or sampled: a NaN weight
// makes every logit NaN, and argmax would write id 0 as if it were the answer.
TEST(Llama, NanLogitsAreAnErrorNamingThePositionNotAToken) {
  manual_seed(3);
  models::LlamaForCausalLM model(tiny_qwen3(1, 2, 1, 4));
  model.eval();
  {
    NoGradGuard no_grad;
    model.model->norm->weight.fill_(std::nan(""));
  }
  const Tensor prompt = from_vector(std::vector<int64_t>{1, 2, 3}, {1, 3});
  for (const double temperature : {0.0, 1.0}) {
    SCOPED_TRACE(temperature);
    for (const bool cache : {true, false}) {
      test::expect_error([&] { models::generate(model, prompt, 4, {.temperature = temperature, .use_kv_cache = cache}); },
                         {"generate: the logits at position 2 are not finite (nan at id 0)"});
    }
  }
  const Tensor ninf = full({2, 5}, -kInf);
  test::expect_error([&] { models::sample_next_token(ninf, {.temperature = 0.0}); },
                     {"generate: the logits are not finite (every id that may be written is -inf in row 0)"});
  const Tensor last_allowed_inf = from_vector(std::vector<double>{-kInf, -kInf, 1.0}, {1, 3});
  test::expect_error([&] { models::sample_next_token(last_allowed_inf, {.temperature = 0.0, .suppress_tokens = {2}}); },
                     {"every id that may be written is -inf"});
  const Tensor plus_inf = from_vector(std::vector<double>{0.0, kInf, 1.0}, {1, 3});
  test::expect_error([&] { models::sample_next_token(plus_inf, {}, nullptr, 9); },
                     {"generate: the logits at position 9 are not finite (inf at id 1)"});
}

// The suppressed ids are never written, greedy or sampled, however likely the model makes them.
TEST(Llama, SuppressedIdsAreNeverWritten) {
  const Tensor logits = from_vector(std::vector<double>{0.0, 1.0, 50.0, 40.0, 2.0, 60.0}, {2, 3});
  EXPECT_EQ(models::sample_next_token(logits, {.temperature = 0.0}).tolist<int64_t>(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(models::sample_next_token(logits, {.temperature = 0.0, .suppress_tokens = {2}}).tolist<int64_t>(),
            (std::vector<int64_t>{1, 0}));
  Generator gen(5);
  for (int k = 0; k < 20; ++k) {
    const std::vector<int64_t> ids =
        models::sample_next_token(logits, {.temperature = 1.0, .top_k = 2, .suppress_tokens = {2}}, &gen).tolist<int64_t>();
    EXPECT_NE(ids[0], 2);
    EXPECT_NE(ids[1], 2);
  }
  test::expect_error([&] { models::sample_next_token(logits, {.suppress_tokens = {3}}); },
                     {"generate: suppress_tokens holds id 3, outside the logits' [0, 3)"});
}

TEST(HfLlama, BadWeightFilesAreErrorsNamingTheFileAndTheTensor) {
  {  // the index names a shard that is not there
    EditedFolder f("qwen2/bf16");
    std::filesystem::remove(f.dir.file("model-00002-of-00002.safetensors"));
    test::expect_error([&] { models::load_hf_llama(f.dir.path); },
                       {"model.safetensors.index.json: \"weight_map\" names \"model-00002-of-00002.safetensors\"",
                        "which is not in the folder"});
  }
  {  // a config whose sizes differ from the file's
    EditedFolder f("qwen2/f32");
    f.replace("config.json", "\"intermediate_size\": 40", "\"intermediate_size\": 41");
    test::expect_error([&] { models::load_hf_llama(f.dir.path); },
                       {"model.safetensors: tensor \"model.layers.0.mlp.gate_proj.weight\" has shape (40,32), the config says (41,32)"});
  }
  {  // fewer layers in the config than in the file: a tensor of no layer
    EditedFolder f("llama/f32");
    f.replace("config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
    test::expect_error([&] { models::load_hf_llama(f.dir.path); },
                       {"tensor \"model.layers.1.self_attn.q_proj.weight\" is not a weight of a llama model"});
  }
  {  // more: a missing tensor
    EditedFolder f("llama/f32");
    f.replace("config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3");
    test::expect_error([&] { models::load_hf_llama(f.dir.path); },
                       {"tensor \"model.layers.2.self_attn.q_proj.weight\" (32,32)", "is missing from model.safetensors"});
  }
  {  // untied in the config: lm_head.weight is needed
    EditedFolder f("qwen3/f32");
    f.replace("config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    test::expect_error([&] { models::load_hf_llama(f.dir.path); }, {"tensor \"lm_head.weight\" (61,24) is missing"});
  }
  test::TempFolder empty;
  test::expect_error([&] { models::load_hf_llama(empty.path); }, {"config.json is missing"});
}

// A config.json's sizes are checked against the weight files' headers before anything is built
// from them: 10^9 layers (or 2^62) is one line naming the file and the field, at once, not
// gigabytes of layout; heads times head_dim past 64 bits likewise.
TEST(HfLlama, HugeSizesInConfigJsonAreRefusedBeforeAnyLayoutIsBuilt) {
  for (const std::string huge : {"1000000000", "2147483648", "4611686018427387904"}) {
    for (const std::string folder : {"llama/f32", "qwen3/bf16"}) {
      SCOPED_TRACE(folder + " " + huge);
      EditedFolder f(folder);
      const std::string config = test::read_bytes(f.dir.file("config.json"));
      const size_t at = config.find("\"num_hidden_layers\": ");
      const size_t end = config.find_first_of(",\n}", at);
      test::write_bytes(f.dir.file("config.json"), config.substr(0, at) + "\"num_hidden_layers\": " + huge + config.substr(end));
      const auto before = test::folder_listing(f.dir.path);
      EXPECT_EQ(test::error_of([&] { models::load_hf_llama(f.dir.path); }),
                f.dir.file("config.json") + ": \"num_hidden_layers\" is " + huge + " but " +
                    (folder == "llama/f32" ? "model.safetensors" : "the 2 shards") + " holds tensors for 2 layers");
      EXPECT_EQ(test::folder_listing(f.dir.path), before);
    }
  }
  EditedFolder f("llama/f32");
  f.replace("config.json", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 2, \"head_dim\": 4611686018427387904");
  f.replace("config.json", "\"num_attention_heads\": 4", "\"num_attention_heads\": 2");
  EXPECT_EQ(test::error_of([&] { models::load_hf_llama(f.dir.path); }),
            f.dir.file("config.json") + ": \"num_attention_heads\" (2) times \"head_dim\" (4611686018427387904) does "
                                        "not fit in 64 bits: no file holds such a projection");
}

// The index's shard names: one with a NUL (which would end the name where the system reads it, and
// so name another shard) or another control character is refused, quoted; an index or a shard that
// is a folder or a FIFO is called that.
TEST(HfLlama, HostileShardNamesAndIndexesAreNamedForWhatTheyAre) {
  {
    EditedFolder f("qwen3/bf16");
    f.replace("model.safetensors.index.json", "\"model-00002-of-00002.safetensors\"",
              "\"model-00001-of-00002.safetensors\\u0000x\"");
    const auto before = test::folder_listing(f.dir.path);
    test::expect_error([&] { models::load_hf_llama(f.dir.path); },
                       {"model.safetensors.index.json: \"weight_map\" entry ",
                        " names \"model-00001-of-00002.safetensors\\u0000x\", not a file in the folder"});
    EXPECT_EQ(test::folder_listing(f.dir.path), before);
  }
  {
    EditedFolder f("qwen3/bf16");
    std::filesystem::remove(f.dir.file("model.safetensors.index.json"));
    std::filesystem::create_directory(f.dir.file("model.safetensors.index.json"));
    EXPECT_EQ(test::error_of([&] { models::load_hf_llama(f.dir.path); }),
              f.dir.file("model.safetensors.index.json") + ": is a folder, not a file");
  }
  {
    EditedFolder f("qwen3/bf16");
    std::filesystem::remove(f.dir.file("model-00002-of-00002.safetensors"));
    ASSERT_EQ(::mkfifo(f.dir.file("model-00002-of-00002.safetensors").c_str(), 0600), 0);
    test::expect_error([&] { models::load_hf_llama(f.dir.path); },
                       {"\"weight_map\" names \"model-00002-of-00002.safetensors\", which is a FIFO (named pipe), not a file"});
  }
  {
    EditedFolder f("qwen3/f32");
    std::filesystem::remove(f.dir.file("model.safetensors"));
    ASSERT_EQ(::mkfifo(f.dir.file("model.safetensors").c_str(), 0600), 0);
    EXPECT_EQ(test::error_of([&] { models::load_hf_llama(f.dir.path); }),
              "load_safetensors: " + f.dir.file("model.safetensors") + ": is a FIFO (named pipe), not a file");
  }
}

// One reading of config.json says what a folder is, or what is wrong with its config.json.
TEST(HfLlama, AConfigJsonThatIsNoModelsIsNamedForWhatItIs) {
  auto kind_error = [](const std::string& config_text) {
    EditedFolder f("qwen3/f32");
    test::write_bytes(f.dir.file("config.json"), config_text);
    return test::error_of([&] { models::model_folder_kind(f.dir.path); }).substr(f.dir.path.size() + 1);
  };
  const std::string read = "tapegrad reads \"gpt2\", \"llama\", \"qwen2\" and \"qwen3\"";
  EXPECT_EQ(kind_error("{}"), "config.json: \"model_type\" is missing: a Hugging Face model's config.json names it (" +
                                  read + "), a train_gpt run's has \"model\"");
  EXPECT_EQ(kind_error("[]"), "config.json: must be a JSON object, got an array");
  EXPECT_EQ(kind_error("{\"model_type\": \"Llama\"}"),
            "config.json: \"model_type\" is \"Llama\": model_type is case-sensitive; " + read);
  EXPECT_EQ(kind_error("{\"model_type\": \"mistral\"}"), "config.json: \"model_type\" is \"mistral\": " + read);
  EXPECT_EQ(kind_error("{\"model_type\": 3}"), "config.json: \"model_type\" must be a string, got a number");
  EditedFolder f("qwen3/f32");
  std::filesystem::remove(f.dir.file("config.json"));
  ASSERT_EQ(::mkfifo(f.dir.file("config.json").c_str(), 0600), 0);
  EXPECT_EQ(test::error_of([&] { models::is_hf_llama_folder(f.dir.path); }),
            f.dir.file("config.json") + ": is a FIFO (named pipe), not a file");
  std::filesystem::remove(f.dir.file("config.json"));
  std::filesystem::create_directory(f.dir.file("config.json"));
  EXPECT_EQ(test::error_of([&] { models::is_hf_llama_folder(f.dir.path); }),
            f.dir.file("config.json") + ": is a folder, not a file");
  EXPECT_EQ(models::model_folder_kind(kFixtures + "/qwen3/f32"), models::ModelFolderKind::llama);
}

TEST(HfLlama, ReadingAFolderDrawsNoRandomNumbers) {
  manual_seed(5);
  const std::vector<float> before = rand({4}).tolist<float>();
  manual_seed(5);
  models::load_hf_llama(kFixtures + "/qwen3/f32");  // built under SkipInitGuard, then read
  EXPECT_EQ(rand({4}).tolist<float>(), before);
  {
    const nn::init::SkipInitGuard guard;
    nn::Linear layer(3, 2);
    EXPECT_EQ(layer.weight.tolist<float>(), std::vector<float>(6, 0.0f));
  }
  EXPECT_FALSE(nn::init::SkipInitGuard::active());
}

TEST(Llama, Llama3ScalingStretchesLongWavelengthsAndBlendsTheMiddle) {
  // head_dim 8, theta 500000: wavelengths 2 pi / inv_freq = 6.28, 167, 4443, 118600; with an
  // original context of 32 and factors 1 and 8, the limits are 32 and 4: the first is blended,
  // the others (longer than 32) divided by 8.
  const models::RopeScaling s{.rope_type = "llama3", .factor = 8.0, .low_freq_factor = 1.0, .high_freq_factor = 8.0,
                              .original_max_position_embeddings = 32};
  const models::RotaryEmbedding plain(8, 500000.0, {}), scaled(8, 500000.0, s);
  const std::vector<float> p = plain.inv_freq.tolist<float>(), q = scaled.inv_freq.tolist<float>();
  const double smooth = (32.0 / (2 * 3.14159265358979 / p[0]) - 1.0) / 7.0;
  EXPECT_NEAR(q[0], (1 - smooth) * p[0] / 8 + smooth * p[0], 1e-6);
  for (size_t i = 1; i < 4; ++i) EXPECT_FLOAT_EQ(q[i], p[i] / 8.0f);
}

TEST(Llama, AGradientReachesEveryParameterAndTheLossFallsUnderTraining) {
  manual_seed(3);
  models::LlamaForCausalLM model(tiny_qwen3(2, 4, 2, 4));
  const Tensor idx = from_vector(std::vector<int64_t>{1, 5, 7, 2, 9, 3, 3, 1}, {2, 4});
  const Tensor targets = from_vector(std::vector<int64_t>{5, 7, 2, 9, 3, 3, 1, 4}, {2, 4});
  const Tensor loss = model.loss(idx, targets);
  loss.backward();
  for (const auto& [name, p] : model.named_parameters()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(p.grad().defined());
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0);
  }
  // the chunked head and the checkpointed layers give the same loss
  model.set_checkpointing(models::Checkpointing::every);
  EXPECT_TRUE(test::all_close(model.loss(idx, targets, Tensor(), 3), loss, 1e-6, 1e-6));
}

}  // namespace
}  // namespace tg
