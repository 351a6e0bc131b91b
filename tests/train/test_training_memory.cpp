// A training loop does not leak: after every step the tape is empty, the live tensor memory is
// the same (parameters, gradients and AdamW's state, nothing else), and over 1000 steps the
// process's resident memory stays flat.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "train/corpus.h"
#include "train/trainer.h"

namespace tg {
namespace {

train::TrainOptions tiny_options(int64_t steps) {
  train::TrainOptions o;
  o.batch = 4;
  o.model.context_length = 16;
  o.model.emb_dim = 16;
  o.model.n_heads = 2;
  o.model.n_layers = 2;
  o.model.drop_rate = 0.1;  // dropout keeps a mask per layer for backward: it must be freed too
  o.steps = steps;
  o.warmup = 10;
  o.eval_batches = 2;
  return o;
}

const std::string& text() {
  static const std::string t = train::builtin_corpus(20000, 11);
  return t;
}

// Resident set size in bytes, from /proc/self/statm (its second field, in pages).
int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

TEST(TrainingMemory, TapeIsEmptyAndLiveTensorMemoryIsTheSameAfterEveryStep) {
  train::Trainer t(tiny_options(120), text());
  t.train_step();  // the first step makes AdamW's state
  ASSERT_EQ(tape_size(), 0u);
  const MemoryStats after_first = memory_stats();
  for (int step = 2; step <= 120; ++step) {
    t.train_step();
    ASSERT_EQ(tape_size(), 0u) << "after step " << step;
    const MemoryStats m = memory_stats();
    ASSERT_EQ(m.live_storages, after_first.live_storages) << "after step " << step;
    ASSERT_EQ(m.live_bytes, after_first.live_bytes) << "after step " << step;
    if (step % 40 == 0) {
      t.evaluate();  // no tape, and nothing kept
      ASSERT_EQ(tape_size(), 0u) << "after the evaluation at step " << step;
      ASSERT_EQ(memory_stats().live_bytes, after_first.live_bytes) << "after the evaluation at step " << step;
    }
  }
}

TEST(TrainingMemory, PeakLiveMemoryOfAStepIsTheSameEveryStep) {
  train::Trainer t(tiny_options(50), text());
  t.train_step();
  reset_peak_memory_stats();
  t.train_step();
  const int64_t peak = memory_stats().peak_bytes;
  for (int step = 3; step <= 50; ++step) {
    reset_peak_memory_stats();
    t.train_step();
    ASSERT_EQ(memory_stats().peak_bytes, peak) << "step " << step;
  }
}

TEST(TrainingMemory, AfterTheFirstStepsEveryBufferComesFromTheCache) {
  if (built_with_address_sanitizer()) GTEST_SKIP() << "the cache is off under AddressSanitizer";
  train::Trainer t(tiny_options(50), text());
  for (int step = 1; step <= 3; ++step) t.train_step();
  const int64_t from_system = memory_stats().system_allocations;
  for (int step = 4; step <= 50; ++step) {
    t.train_step();
    ASSERT_EQ(memory_stats().system_allocations, from_system) << "step " << step << " asked the system for memory";
  }
}

TEST(TrainingMemory, ResidentMemoryStaysFlatOver1000Steps) {
  if (built_with_address_sanitizer()) {
    GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine, so the resident size grows by design";
  }
  train::Trainer t(tiny_options(1000), text());
  for (int step = 1; step <= 100; ++step) t.train_step();
  const int64_t at_100 = resident_bytes();
  if (at_100 < 0) GTEST_SKIP() << "no /proc/self/statm here (Linux only): the resident size cannot be read";
  int64_t highest = at_100;
  for (int step = 101; step <= 1000; ++step) {
    t.train_step();
    if (step % 100 == 0) highest = std::max(highest, resident_bytes());
  }
  // A leak of even one small activation per step (4 x 16 x 16 floats = 4 KiB) would add ~3.5 MiB.
  const int64_t growth = highest - at_100;
  std::printf("resident memory: %.1f MiB at step 100, highest %.1f MiB by step 1000 (+%lld KiB)\n",
              static_cast<double>(at_100) / (1 << 20), static_cast<double>(highest) / (1 << 20),
              static_cast<long long>(growth / 1024));
  EXPECT_LT(growth, 1 << 20) << "the resident memory grew by " << growth << " bytes between steps 100 and 1000";
}

// The memory report's split (train/memory_report.h): parameters, gradients and AdamW's two
// moments as their tensors are, and activations that --checkpoint-activations shrinks.
TEST(TrainingMemory, TheReportSplitsParametersGradientsOptimizerAndActivations) {
  auto report = [](const std::string& checkpointing) {
    train::TrainOptions o = tiny_options(20);
    o.model.context_length = 64;
    o.model.emb_dim = 64;
    o.model.n_layers = 4;
    o.checkpoint_activations = checkpointing;
    train::Trainer t(o, text());
    t.train_step();
    t.train_step();
    return std::pair(t.memory_report(), t.model().num_parameters());
  };
  const auto [none, n] = report("none");
  EXPECT_EQ(none.parameters, 4 * n);
  EXPECT_EQ(none.gradients, 4 * n);  // every parameter is trained
  EXPECT_GE(none.optimizer, 2 * 4 * n);  // exp_avg and exp_avg_sq (and a step count each)
  EXPECT_LE(none.optimizer, 2 * 4 * n + 1024);
  EXPECT_GT(none.activations, 0);
  EXPECT_EQ(none.peak_tensors(), none.parameters + none.gradients + none.optimizer + none.activations);
  EXPECT_GT(none.peak_rss_mb, 0);
  const train::MemoryReport every = report("every").first, ffn = report("ffn").first;
  EXPECT_LT(ffn.activations, none.activations);
  EXPECT_LT(every.activations, ffn.activations);
  EXPECT_EQ(every.parameters, none.parameters);
  EXPECT_EQ(every.gradients, none.gradients);
  const std::string json = none.json();
  for (const char* key : {"parameters_mb", "gradients_mb", "optimizer_mb", "activations_mb", "peak_tensors_mb", "peak_rss_mb"})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  EXPECT_NE(none.str().find("activations"), std::string::npos);
}

// --loss-chunk: the head and the loss in chunks of rows (nn/chunked_loss.h) train as the plain
// loss does, to float32 rounding, with dropout and --checkpoint-activations too.
TEST(TrainingMemory, ALossInChunksTrainsAsThePlainLoss) {
  auto losses = [](int64_t loss_chunk, const std::string& checkpointing) {
    train::TrainOptions o = tiny_options(20);
    o.loss_chunk = loss_chunk;
    o.checkpoint_activations = checkpointing;
    train::Trainer t(o, text());
    std::vector<double> out;
    for (int i = 0; i < 6; ++i) out.push_back(t.train_step().loss);
    return out;
  };
  const std::vector<double> want = losses(0, "none");
  for (const auto& [chunk, checkpointing] : std::vector<std::pair<int64_t, std::string>>{{5, "none"}, {16, "every"}}) {
    const std::vector<double> got = losses(chunk, checkpointing);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * want[i]) << "step " << i + 1;
  }
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// The floor a run is refused under counts a fine-tune's frozen weights at 2 bytes when they may
// stay 16-bit (--dtype auto: a LoRA's base, a classifier's body below --train-layers), every
// other weight at float32's 4. Llama-3.2-3B's shape (3.2 G weights, tied): a LoRA on its BF16
// folder needs under 8 GiB, a learner's laptop, where the float32 floor is over 12.
TEST(TrainingMemory, TheFloorCountsWeightsThatMayStay16BitAtTwoBytes) {
  models::LlamaConfig llama;
  llama.vocab_size = 128256;
  llama.hidden_size = 3072;
  llama.intermediate_size = 8192;
  llama.num_hidden_layers = 28;
  llama.num_attention_heads = 24;
  llama.num_key_value_heads = 8;
  llama.head_dim = 128;
  llama.max_position_embeddings = 131072;
  llama.tie_word_embeddings = true;
  models::GPTConfig c;
  c.vocab_size = llama.vocab_size;
  c.emb_dim = llama.hidden_size;
  c.n_layers = llama.num_hidden_layers;
  c.n_heads = llama.num_attention_heads;
  c.context_length = llama.max_position_embeddings;
  c.tie_weights = true;
  const double weights = 128256.0 * 3072 + 28 * (2 * 3072.0 * 3072 + 2 * 3072.0 * 1024 + 3 * 3072.0 * 8192 + 2 * 3072) + 3072;
  train::TrainOptions o;
  o.init_from = "Llama-3.2-3B";
  o.model.context_length = 512;
  o.batch = 1;
  o.loss_chunk = 256;
  o.lora_rank = 8;
  const double rest = 4 * (512.0 * 512 + 256 * 128256.0);  // the mask, the chunk's logits
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(train::least_run_bytes(c, &llama, o), 2 * weights + rest);
  EXPECT_LT(train::least_run_bytes(c, &llama, o), 8 * gib);
  o.dtype = "float32";
  EXPECT_DOUBLE_EQ(train::least_run_bytes(c, &llama, o), 4 * weights + rest);
  EXPECT_GT(train::least_run_bytes(c, &llama, o), 12 * gib);
  o.dtype = "auto";
  o.lora_rank = 0;  // a full fine-tune trains every weight: float32 masters
  EXPECT_DOUBLE_EQ(train::least_run_bytes(c, &llama, o), 4 * weights + rest);
  o.task = "classify";  // no logits counted; the body below the last layer frozen
  o.train_layers = "last";
  EXPECT_DOUBLE_EQ(train::least_run_bytes(c, &llama, o), 2 * weights + 4 * 512.0 * 512);
  o.train_layers = "all";
  EXPECT_DOUBLE_EQ(train::least_run_bytes(c, &llama, o), 4 * weights + 4 * 512.0 * 512);
  o.train_layers = "last";
  o.init_from = "";  // from scratch: nothing is read, every weight drawn as float32
  EXPECT_DOUBLE_EQ(train::least_run_bytes(c, &llama, o), 4 * weights + 4 * 512.0 * 512);
}

}  // namespace
}  // namespace tg
