// train_gpt's other architectures, --arch llama and qwen3 (train/options.h's llama_config): the
// Trainer trains a LlamaForCausalLM with the GPT's loop, the run's folder is a Hugging Face folder
// of that model_type which load_hf_llama reads, and a resumed run continues bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/hf/hf_llama.h"
#include "train/corpus.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "test_util.h"
#include "train/resumed_run.h"

namespace tg {
namespace {

using test::expect_error;
using test::same_bytes;
using test::TempFolder;

train::TrainOptions llama_options(const std::string& arch) {
  train::TrainOptions o;
  o.arch = arch;
  o.batch = 4;
  o.model.context_length = 16;
  o.model.emb_dim = 16;
  o.model.n_heads = 4;
  o.kv_heads = 2;
  o.model.n_layers = 2;
  o.steps = 12;
  o.warmup = 2;
  o.eval_batches = 2;
  return o;
}

const std::string& text() {
  static const std::string t = train::builtin_corpus(20000, 7);
  return t;
}

TEST(LlamaRuns, TheSizeFlagsMakeTheLlamaConfig) {
  train::TrainOptions o = llama_options("qwen3");
  o.model.emb_dim = 48;
  o.model.n_heads = 6;
  o.kv_heads = 3;
  o.model.tie_weights = true;
  o.model.drop_rate = 0.25;
  const models::LlamaConfig c = train::llama_config(o, 70);
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.vocab_size, 70);
  EXPECT_EQ(c.hidden_size, 48);
  EXPECT_EQ(c.num_attention_heads, 6);
  EXPECT_EQ(c.num_key_value_heads, 3);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.intermediate_size, 128);  // 8 * 48 / 3, a multiple of 8 already
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.max_position_embeddings, 16);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.attention_dropout, 0.25);
  EXPECT_FALSE(c.qkv_bias || c.o_bias);
  o.arch = "llama";
  o.kv_heads = 0;  // not given: every head its own keys and values
  EXPECT_FALSE(train::llama_config(o, 70).qk_norm);
  EXPECT_EQ(train::llama_config(o, 70).num_key_value_heads, 6);
  EXPECT_EQ(train::swiglu_width(64), 176);  // 170.67 rounded up to a multiple of 8
}

TEST(LlamaRuns, SizesThatDoNotDivideAreUsageErrorsNamingTheFlags) {
  train::TrainOptions o = llama_options("llama");
  o.kv_heads = 3;
  expect_error([&] { train::llama_config(o, 50); }, {"--kv-heads (3) must divide --heads (4)"});
  o = llama_options("llama");
  o.model.emb_dim = 18;
  expect_error([&] { train::llama_config(o, 50); }, {"--emb-dim (18) must be divisible by --heads (4)"});
  o.model.emb_dim = 12;  // head_dim 3: RoPE pairs a head's features
  expect_error([&] { train::llama_config(o, 50); }, {"--emb-dim / --heads (3) must be even"});
}

// The run's model is a Llama of the flags' shape, it learns, and its folder is what
// from_pretrained reads: Hugging Face's config.json (with the run's own section) and names.
TEST(LlamaRuns, AQwen3RunTrainsAndItsFolderIsAHuggingFaceFolder) {
  train::Trainer t(llama_options("qwen3"), text());
  ASSERT_EQ(t.model().type_name(), "Qwen3ForCausalLM");
  EXPECT_TRUE(t.llama().model->decoder_layers[0]->self_attn->q_norm != nullptr);
  expect_error([&] { t.gpt(); }, {"Qwen3ForCausalLM (--arch qwen3), not a GPT"});
  const double first = t.evaluate().val;
  for (int i = 0; i < 12; ++i) t.train_step();
  EXPECT_LT(t.evaluate().val, first - 0.1);  // 3.60 -> 3.47 here

  TempFolder dir;
  train::save_run(t, dir.path);
  const json::Value config = json::parse_file(dir.file("config.json"));
  EXPECT_EQ(config["model_type"].as_string(), "qwen3");
  EXPECT_EQ(config["num_key_value_heads"].as_int64(), 2);
  EXPECT_EQ(config["tapegrad"]["train"]["arch"].as_string(), "qwen3");
  EXPECT_FALSE(config["tapegrad"].contains("model"));  // the Hugging Face fields are the model
  models::HfLlama hf = models::load_hf_llama(dir.path);
  const Tensor idx = from_vector(std::vector<int64_t>{1, 5, 9, 2, 7, 3}, {1, 6});
  NoGradGuard no_grad;
  t.model().eval();
  EXPECT_TRUE(same_bytes(hf.model->forward(idx), t.model().forward(idx)));
  // generate --ckpt and --eval-only read it with its tokenizer
  models::SavedModel saved = models::load_saved_model(dir.path);
  ASSERT_TRUE(saved.tokenizer.has_value());
  EXPECT_EQ(saved.tokenizer->to_json(), t.tokenizer().to_json());
  EXPECT_TRUE(same_bytes(saved.model->forward(idx), t.model().forward(idx)));
}

// N steps, save, resume, N steps = 2N steps straight: the weights, AdamW's state, the batch
// generator and the default one (attention dropout draws from it), with a tied head.
TEST(LlamaRuns, AResumedRunEqualsTheStraightRunBitForBit) {
  train::TrainOptions o = llama_options("llama");
  o.model.drop_rate = 0.1;
  o.model.tie_weights = true;
  TempFolder dir;
  test::expect_resumed_run_equals_straight([&] { return std::make_unique<train::Trainer>(o, text()); }, text(), 6,
                                           dir.path);
  for (const SafetensorsEntry& e : safetensors_entries(dir.file("model.safetensors")))
    EXPECT_NE(e.name, "lm_head.weight");  // tied: the head is embed_tokens.weight, left out as transformers does

  // a GPT's options over this folder: refused, not read as something else
  train::TrainOptions gpt = train::saved_options(dir.path);
  gpt.arch = "gpt2";
  expect_error([&] { train::resume_trainer(dir.path, gpt, text()); }, {"\"arch\" is gpt2", "not a consistent run"});
}

// --checkpoint-activations gives the same losses bit for bit; --loss-chunk the same to rounding.
TEST(LlamaRuns, CheckpointingAndLossChunksKeepTheLosses) {
  auto losses = [](const std::string& checkpointing, int64_t loss_chunk) {
    train::TrainOptions o = llama_options("qwen3");
    o.checkpoint_activations = checkpointing;
    o.loss_chunk = loss_chunk;
    train::Trainer t(o, text());
    std::vector<double> l;
    for (int i = 0; i < 4; ++i) l.push_back(t.train_step().loss);
    return l;
  };
  const std::vector<double> plain = losses("none", 0);
  EXPECT_EQ(losses("every", 0), plain);
  EXPECT_EQ(losses("ffn", 0), plain);
  const std::vector<double> chunked = losses("none", 24);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(chunked[i], plain[i], 1e-6 + 1e-6 * std::abs(plain[i]));
}


// A run from a Hugging Face Qwen3 folder (train_gpt --init-from): the folder's config (here a
// rope_theta and an eos_token_id no flag gives) and weights, kept in the run's config.json; the
// run resumes bit for bit, from its own copy of the config.
TEST(LlamaRuns, ARunFromAQwen3FolderKeepsItsConfigAndResumesBitForBit) {
  TempFolder base;  // a Qwen3 folder: a tiny run's, its config given fields of a hub model's
  {
    train::Trainer t(llama_options("qwen3"), text());
    for (int i = 0; i < 3; ++i) t.train_step();
    train::save_run(t, base.path);
    std::string config = test::read_bytes(base.file("config.json"));
    config.replace(config.find("\"rope_theta\": 10000.0"), std::string("\"rope_theta\": 10000.0").size(),
                   "\"rope_theta\": 1000000.0, \"eos_token_id\": 3");
    test::write_bytes(base.file("config.json"), config);
  }
  train::TrainOptions o = llama_options("llama");  // the folder's model_type and shape win
  o.init_from = base.path;
  o.tokenizer = base.path;
  o.steps = 6;
  auto straight = train::start_from_llama_folder(o, text(), nullptr);
  ASSERT_EQ(straight->model().type_name(), "Qwen3ForCausalLM");
  EXPECT_EQ(straight->llama().config().rope_theta, 1e6);
  EXPECT_EQ(straight->options().arch, "qwen3");
  const models::HfLlama read = models::load_hf_llama(base.path);  // the weights are the folder's
  const NamedTensors want = read.model->state_dict(), got = straight->model().state_dict();
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(same_bytes(got[k].second, want[k].second)) << want[k].first;

  TempFolder run;
  const std::unique_ptr<train::Trainer> second = test::expect_resumed_run_equals_straight(
      [&] { return train::start_from_llama_folder(o, text(), nullptr); }, text(), 3, run.path);
  EXPECT_EQ(second->llama().config().rope_theta, 1e6);
  const json::Value config = json::parse_file(run.file("config.json"));
  EXPECT_EQ(config["model_type"].as_string(), "qwen3");
  EXPECT_EQ(config["rope_theta"].as_double(), 1e6);
  EXPECT_EQ(config["eos_token_id"].as_int64(), 3);
  EXPECT_EQ(config["tapegrad"]["train"]["init-from"].as_string(), base.path);
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// A run's options come from its config.json: a shape that does not divide there (an edited file)
// is an error naming the file and its fields, not flags that were never given.
TEST(LlamaRuns, AnEditedConfigJsonsShapeIsNamedByItsFields) {
  train::TrainOptions o = llama_options("llama");
  o.model.n_layers = 1;
  train::Trainer t(o, train::builtin_corpus(2000, 7));
  TempFolder dir;
  train::save_run(t, dir.path);
  std::string config = test::read_bytes(dir.file("config.json"));
  const size_t at = config.find("\"kv-heads\": 2");
  ASSERT_NE(at, std::string::npos) << config;
  test::write_bytes(dir.file("config.json"), config.replace(at, 13, "\"kv-heads\": 3"));
  EXPECT_EQ(test::error_of([&] { train::saved_options(dir.path); }),
            dir.file("config.json") + ": \"tapegrad.train.kv-heads\" (3) must divide \"tapegrad.train.heads\" (4): each "
                                      "key/value head serves heads / kv-heads query heads");
}


// A Llama run from scratch of one layer (its char tokenizer learned from text()), saved in dir.
void save_one_layer_run(const std::string& dir) {
  train::TrainOptions o = llama_options("llama");
  o.model.n_layers = 1;
  train::Trainer t(o, text());
  train::save_run(t, dir);
}

// A config.json field set to another JSON text (the first "name": value, as save_run writes it).
void edit_config(const std::string& dir, const std::string& was, const std::string& now) {
  const std::string path = dir + "/config.json";
  std::string config = test::read_bytes(path);
  const size_t at = config.find(was);
  ASSERT_NE(at, std::string::npos) << was << " in " << config;
  test::write_bytes(path, config.replace(at, was.size(), now));
}

// A fine-tune's model is its config.json's; a run from scratch is rebuilt from its flags. A
// fine-tune whose "init-from" was deleted is not taken for a run from scratch and rebuilt wrong:
// the model the flags make is not the file's, and the message names the field that differs and
// the one that was lost. A LoRA run reads its base from adapter_config.json, and resumes.
TEST(LlamaRuns, AFineTuneWithoutItsInitFromIsNotTakenForARunFromScratch) {
  TempFolder base;  // a Qwen3 folder whose rope_theta no flag gives
  {
    train::Trainer t(llama_options("qwen3"), text());
    train::save_run(t, base.path);
    edit_config(base.path, "\"rope_theta\": 10000.0", "\"rope_theta\": 1000000.0");
  }
  for (const int64_t rank : {0, 2}) {
    train::TrainOptions o = llama_options("qwen3");
    o.init_from = o.tokenizer = base.path;
    o.lora_rank = rank;
    o.lora_alpha = 2;
    TempFolder run;
    {
      const std::unique_ptr<train::Trainer> t = train::start_from_llama_folder(o, text(), nullptr);
      t->train_step();
      train::save_run(*t, run.path);
    }
    edit_config(run.path, "\"init-from\": \"" + base.path + "\"", "\"init-from\": \"\"");
    const train::TrainOptions saved = train::saved_options(run.path);
    if (rank == 0) {
      EXPECT_EQ(test::error_of([&] { train::resume_trainer(run.path, saved, text()); }),
                run.file("config.json") + ": rope_theta is 1000000.0, but the run's \"tapegrad.train\" fields make a "
                "model with 10000.0: a run from scratch (its \"init-from\" is empty) is rebuilt from them; a fine-tune "
                "names the folder it started from in \"tapegrad.train.init-from\"");
    } else {
      const std::unique_ptr<train::Trainer> resumed = train::resume_trainer(run.path, saved, text());
      EXPECT_EQ(resumed->step(), 1);
      EXPECT_EQ(resumed->llama().config().rope_theta, 1e6);
    }
  }
}

// A fine-tune's model may take more positions than the run's --context: the memory a step takes
// follows --context, so a max_position_embeddings of 1e18 (an edited file) is no reason to refuse,
// and the steps stay finite.
TEST(LlamaRuns, AHugeMaxPositionEmbeddingsIsNotTakenForTheContext) {
  TempFolder base;
  {
    train::Trainer t(llama_options("llama"), text());
    train::save_run(t, base.path);
  }
  train::TrainOptions o = llama_options("llama");
  o.init_from = o.tokenizer = base.path;
  TempFolder run;
  {
    const std::unique_ptr<train::Trainer> t = train::start_from_llama_folder(o, text(), nullptr);
    train::save_run(*t, run.path);
  }
  edit_config(run.path, "\"max_position_embeddings\": 16", "\"max_position_embeddings\": 1000000000000000000");
  const std::unique_ptr<train::Trainer> resumed = train::resume_trainer(run.path, train::saved_options(run.path), text());
  EXPECT_EQ(resumed->llama().config().max_position_embeddings, 1000000000000000000);
  EXPECT_TRUE(std::isfinite(resumed->train_step().loss));
}

// A run from scratch learns its char or bpe tokenizer from --data again; config.json's "tokenizer"
// edited to the other kind is named, not blamed on --data.
TEST(LlamaRuns, AnEditedTokenizerKindIsNamedByItsField) {
  TempFolder run;
  save_one_layer_run(run.path);
  edit_config(run.path, "\"tokenizer\": \"char\"", "\"tokenizer\": \"bpe\"");
  EXPECT_EQ(test::error_of([&] { train::resume_trainer(run.path, train::saved_options(run.path), text()); }),
            run.file("config.json") + ": \"tapegrad.train.tokenizer\" is bpe, but " + run.file("tokenizer.json") +
                " is a char tokenizer: not a consistent run");
}

// An error raised while a run is rebuilt names config.json's fields for the values that came
// from it, and keeps the flags given on the command line; a "--" inside a path is no flag.
TEST(LlamaRuns, ErrorsOnResumeNameTheFieldsTheValuesCameFrom) {
  TempFolder run;
  save_one_layer_run(run.path);
  EXPECT_EQ(train::naming_saved_fields("--warmup (100) must be smaller than --steps (4)", run.path, {"steps"}),
            run.file("config.json") + ": \"tapegrad.train.warmup\" (100) must be smaller than --steps (4)");
  EXPECT_EQ(train::naming_saved_fields("/tmp/my--run/x: no such file", run.path, {}), std::nullopt);
  EXPECT_EQ(train::naming_saved_fields("--steps must be positive", run.path, {"steps"}), std::nullopt);
}
}  // namespace
}  // namespace tg
