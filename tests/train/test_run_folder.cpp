// Checkpoints of the training program (train/run_folder.h): a resumed run continues bit
// for bit, a run killed while saving leaves a checkpoint that loads, and damaged or foreign
// checkpoints are clear errors.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "nn/safetensors.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "train/corpus.h"
#include "test_util.h"
#include "train/resumed_run.h"

namespace tg {
namespace {

using test::expect_error;
using test::same_bytes;
using test::TempFolder;

train::TrainOptions small_options() {
  train::TrainOptions o;
  o.batch = 4;
  o.model.context_length = 16;
  o.model.emb_dim = 16;
  o.model.n_heads = 2;
  o.model.n_layers = 2;
  o.model.drop_rate = 0.1;  // so the default generator's state matters too
  o.steps = 12;
  o.warmup = 2;
  o.eval_batches = 2;
  return o;
}

const std::string& text() {
  static const std::string t = train::builtin_corpus(20000, 7);
  return t;
}

TEST(Checkpoint, ResumedRunEqualsTheStraightRunBitForBit) {
  const train::TrainOptions o = small_options();
  TempFolder dir;
  test::expect_resumed_run_equals_straight([&] { return std::make_unique<train::Trainer>(o, text()); }, text(), 6,
                                           dir.path);
}

TEST(Checkpoint, SavedOptionsComeBack) {
  train::TrainOptions o = small_options();
  o.lr = 0.1 + 0.2;  // not a short decimal: must come back exactly
  o.data = "some \"quoted\" path.txt";
  train::Trainer t(o, text());
  TempFolder dir;
  train::save_run(t, dir.path);
  const train::TrainOptions back = train::saved_options(dir.path);
  EXPECT_EQ(back.lr, o.lr);
  EXPECT_EQ(back.data, o.data);
  EXPECT_EQ(back.model.drop_rate, o.model.drop_rate);
  EXPECT_EQ(back.model.n_layers, o.model.n_layers);
  const models::SavedModel saved = models::load_saved_model(dir.path);
  EXPECT_EQ(saved.config.n_layers, 2);
  EXPECT_FALSE(saved.model->is_training());
}

// A run's folder holds every weight, so reading it draws none: the default generator is where it
// was, and every parameter is the saved one.
TEST(Checkpoint, LoadingARunsModelDrawsNothingAndReadsEveryWeight) {
  train::Trainer t(small_options(), text());
  TempFolder dir;
  train::save_run(t, dir.path);
  manual_seed(11);
  const Tensor expected = randn({4});
  manual_seed(11);
  const models::SavedModel saved = models::load_saved_model(dir.path);
  EXPECT_TRUE(test::all_close(randn({4}), expected, 0.0, 0.0));
  const NamedTensors want = t.model().named_parameters(), got = saved.model->named_parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    EXPECT_TRUE(test::all_close(got[i].second, want[i].second, 0.0, 0.0)) << want[i].first;
  }
}

// A child process trains and saves again and again; it is killed at a random moment, most
// likely inside a save (writing and syncing the files). The folder must still hold a whole
// checkpoint that resumes.
TEST(Checkpoint, ARunKilledWhileSavingLeavesACheckpointThatLoads) {
  TempFolder dir;
  train::TrainOptions o = small_options();
  o.steps = 1000;
  {
    train::Trainer t(o, text());
    train::save_run(t, dir.path);
  }
  for (int round = 0; round < 4; ++round) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      std::unique_ptr<train::Trainer> t = train::resume_trainer(dir.path, train::saved_options(dir.path), text());
      for (;;) {
        t->train_step();
        train::save_run(*t, dir.path);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 37 * round));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    std::unique_ptr<train::Trainer> resumed = train::resume_trainer(dir.path, train::saved_options(dir.path), text());
    EXPECT_GE(resumed->step(), 0) << "round " << round;
  }
}

TEST(Checkpoint, DamagedOrForeignCheckpointsAreErrors) {
  TempFolder dir;
  const train::TrainOptions o = small_options();
  {
    train::Trainer t(o, text());
    t.train_step();
    train::save_run(t, dir.path);
  }
  expect_error([&] { train::saved_options(dir.file("nothing")); }, {"nothing: no such folder"});
  TempFolder empty;
  expect_error([&] { train::resume_trainer(empty.path, o, text()); }, {"not a train_gpt checkpoint folder (model.safetensors is missing)"});
  // another text: its characters differ
  expect_error([&] { train::resume_trainer(dir.path, o, text() + "#"); }, {"tokenizer.json", "resume with the same --data"});
  // another architecture: the model's tensors do not fit
  train::TrainOptions wider = o;
  wider.model.emb_dim = 32;
  expect_error([&] { train::resume_trainer(dir.path, wider, text()); }, {"model.safetensors", "has shape"});
  // a truncated model file
  const std::string model = dir.file("model.safetensors");
  const std::string bytes = test::read_bytes(model);
  test::write_bytes(model, bytes.substr(0, bytes.size() / 2));
  expect_error([&] { train::resume_trainer(dir.path, o, text()); }, {"model.safetensors"});
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// A copy of one of tests/reference/hf_llama's folders, to spoil.
struct CopiedLlamaFolder {
  TempFolder dir;
  explicit CopiedLlamaFolder(const std::string& from) {
    for (const auto& f : std::filesystem::directory_iterator(std::string(TG_REFERENCE_DIR) + "/hf_llama/" + from))
      std::filesystem::copy_file(f.path(), dir.file(f.path().filename().string()));
  }
};

// load_saved_model reads config.json once and says what is wrong with the folder: not that
// tokenizer.json (or model.safetensors) is missing when config.json is the problem.
TEST(LoadSavedModel, AFolderWhoseConfigJsonIsWrongOrMissingIsNamedForIt) {
  {  // a sharded folder without config.json
    CopiedLlamaFolder f("qwen3/bf16");
    std::filesystem::remove(f.dir.file("config.json"));
    EXPECT_EQ(test::error_of([&] { models::load_saved_model(f.dir.path); }),
              f.dir.path + ": not a model folder (config.json is missing)");
  }
  for (const std::string text : {"{}", "{\"vocab_size\": 61}"}) {  // no model_type
    CopiedLlamaFolder f("qwen3/f32");
    test::write_bytes(f.dir.file("config.json"), text);
    EXPECT_EQ(test::error_of([&] { models::load_saved_model(f.dir.path); }),
              f.dir.file("config.json") + ": \"model_type\" is missing: a Hugging Face model's config.json names it "
                                          "(tapegrad reads \"gpt2\", \"llama\", \"qwen2\" and \"qwen3\"), a train_gpt "
                                          "run's has \"model\"");
  }
  {
    CopiedLlamaFolder f("qwen3/f32");
    test::write_bytes(f.dir.file("config.json"), "[]");
    EXPECT_EQ(test::error_of([&] { models::load_saved_model(f.dir.path); }),
              f.dir.file("config.json") + ": must be a JSON object, got an array");
  }
  {
    CopiedLlamaFolder f("qwen3/f32");
    std::filesystem::remove(f.dir.file("config.json"));
    ASSERT_EQ(::mkfifo(f.dir.file("config.json").c_str(), 0600), 0);
    EXPECT_EQ(test::error_of([&] { models::load_saved_model(f.dir.path); }),
              f.dir.file("config.json") + ": is a FIFO (named pipe), not a file");
  }
  {
    CopiedLlamaFolder f("llama/f32");
    std::string text = test::read_bytes(f.dir.file("config.json"));
    text.replace(text.find("\"llama\""), 7, "\"Llama\"");
    test::write_bytes(f.dir.file("config.json"), text);
    EXPECT_EQ(test::error_of([&] { models::load_saved_model(f.dir.path); }),
              f.dir.file("config.json") + ": \"model_type\" is \"Llama\": model_type is case-sensitive; tapegrad reads "
                                          "\"gpt2\", \"llama\", \"qwen2\" and \"qwen3\"");
  }
}

}  // namespace
}  // namespace tg
