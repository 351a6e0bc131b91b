// examples/train_gpt and examples/generate as a user runs them: a tiny run writes every file,
// --resume continues it, and every bad command line or input is one clear line with a
// non-zero exit code (2 for the command line itself).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "autograd/kernels/blis_kernels.h"
#include "train/run_folder.h"
#include "train/trainer.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::vector<std::string> kTiny = {"--steps", "3", "--eval-every", "2", "--batch", "2", "--context", "8",
                                        "--emb-dim", "8", "--heads", "2", "--layers", "1", "--eval-batches", "1",
                                        "--warmup", "1", "--sample-tokens", "5", "--threads", "1"};

ProgramRun train_gpt(std::vector<std::string> args, bool tiny = true) {
  if (tiny) args.insert(args.begin(), kTiny.begin(), kTiny.end());
  return run_program(example_program("train_gpt"), args);
}

size_t lines_of(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

#define SKIP_WITHOUT_EXAMPLES() \
  if (example_program("train_gpt").empty()) GTEST_SKIP() << "the examples are not built"

TEST(TrainGptProgram, ATinyRunWritesEveryFileAndResumes) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  ProgramRun r = train_gpt({"--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"model.safetensors", "optimizer.safetensors", "config.json", "tokenizer.json", "loss.csv",
                           "loss.svg", "samples.txt", "summary.json"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + name)) << name;
  const std::string csv = read_bytes(out + "/loss.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "step,train_loss,val_loss,lr,tokens_per_s,elapsed_s,train_bpb,val_bpb");
  EXPECT_EQ(lines_of(csv), 4u);  // header + 3 steps
  EXPECT_TRUE(has_part(read_bytes(out + "/summary.json"), "\"steps\": 3"));

  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string resumed = read_bytes(out + "/loss.csv");
  EXPECT_EQ(lines_of(resumed), 6u);
  EXPECT_EQ(resumed.substr(0, csv.size()), csv);  // the first 3 rows are kept as they were

  r = run_program(example_program("train_gpt"), {"--resume", out, "--layers", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has_part(r.output, "--layers cannot change when resuming"));
  // The same command line again, with --resume: a flag repeated with its saved value is fine.
  std::vector<std::string> again = kTiny;
  again.insert(again.end(), {"--resume", out, "--steps", "6", "--out", out});
  r = run_program(example_program("train_gpt"), again);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(lines_of(read_bytes(out + "/loss.csv")), 7u);

  r = run_program(example_program("generate"), {"--ckpt", out, "--prompt", "The ", "--tokens", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 4), "The ");
  EXPECT_EQ(r.output.size(), 4u + 7u + 1u);  // ASCII: one byte per character, and a newline
  r = run_program(example_program("generate"), {"--ckpt", out, "--prompt", "#"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(
      has_part(r.output, "generate: --prompt: tokenizer: character '#' (U+0023) at byte 0 is not in the vocabulary"));
}

// A value that came from the run's config.json (an edited file) is named by its field, not as a
// flag the user never typed; a flag given on this command line stays a flag.
TEST(TrainGptProgram, AnEditedConfigJsonOnResumeIsNamedByItsFields) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  ASSERT_EQ(train_gpt({"--out", out}).exit_code, 0);
  std::string config = read_bytes(out + "/config.json");
  const size_t at = config.find("\"warmup\": 1");
  ASSERT_NE(at, std::string::npos) << config;
  write_bytes(out + "/config.json", config.replace(at, 11, "\"warmup\": 100"));
  const ProgramRun r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "train_gpt: " + out + "/config.json: \"train.warmup\" (100) must be smaller than "
                                 "--steps (5) with the cosine schedule\n")) << r.output;
}

// The learning rate of each loss.csv row (its fourth column), by step.
std::map<int64_t, double> lr_by_step(const std::string& csv_path) {
  std::map<int64_t, double> lr;
  std::istringstream csv(read_bytes(csv_path));
  std::string row;
  std::getline(csv, row);  // the header
  while (std::getline(csv, row)) {
    std::vector<std::string> cells;
    std::istringstream fields(row);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    lr[std::stoll(cells.at(0))] = std::stod(cells.at(3));
  }
  return lr;
}

// A resume with another --steps goes on from the rate the run had reached, says so in one line,
// and keeps it in config.json, so a second resume goes on from there too (the README's "--resume
// runs/big --steps 8000 continues exactly where it stopped").
TEST(TrainGptProgram, AResumeWithMoreStepsGoesOnFromTheLearningRateItHad) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  const std::vector<std::string> args = {"--steps", "10", "--warmup", "2", "--eval-every", "5", "--batch", "2",
                                         "--context", "8", "--emb-dim", "8", "--heads", "2", "--layers", "1",
                                         "--eval-batches", "1", "--sample-tokens", "1", "--threads", "1", "--out", out};
  ProgramRun r = train_gpt(args, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // a run that had ended at --min-lr stays there (it had jumped to 5.05e-4 when --steps grew)
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "train_gpt: --steps 20 where the run planned 10: the learning rate stays at --min-lr "
                                 "0.0002, where the run's cosine decay ended (no jump; config.json keeps it as "
                                 "decay-start 10, decay-lr 0.0002)")) << r.output;
  std::map<int64_t, double> lr = lr_by_step(out + "/loss.csv");
  for (int64_t step = 11; step <= 20; ++step) EXPECT_NEAR(lr.at(step), 2e-4, 1e-12) << step;
  EXPECT_TRUE(has_part(read_bytes(out + "/config.json"), "\"decay-start\": 10"));

  // a run stopped half way through its decay (its config.json says it planned 40 steps) goes on
  // from the rate it had, down to --min-lr at the new total, and a second resume from that
  std::string config = read_bytes(out + "/config.json");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"\"steps\": 20", "\"steps\": 40"},
                                 {"\"decay-start\": 10", "\"decay-start\": 0"}, {"\"decay-lr\": 0.0002", "\"decay-lr\": -1"}}) {
    ASSERT_NE(config.find(from), std::string::npos) << config;
    config.replace(config.find(from), from.size(), to);
  }
  write_bytes(out + "/config.json", config);
  train::TrainOptions planned = train::saved_options(out);
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double reached = train::learning_rate(planned, 20);
  EXPECT_TRUE(has_part(r.output, "train_gpt: --steps 60 where the run planned 40: the learning rate goes on from " +
                                     nn::python_float(reached) + " at step 20, its cosine decay now ending at --min-lr "
                                     "0.0002 at step 60")) << r.output;
  lr = lr_by_step(out + "/loss.csv");
  EXPECT_NEAR(lr.at(21), reached, 1e-9);  // the rate of step 20 (0-based), as the plan had it
  EXPECT_LT(lr.at(22), lr.at(21));
  EXPECT_GT(lr.at(22), lr.at(21) - 2e-5);  // no jump either way
  EXPECT_NEAR(lr.at(60), train::learning_rate(train::saved_options(out), 59), 1e-12);
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "80"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "the learning rate stays at --min-lr 0.0002")) << r.output;
  EXPECT_NEAR(lr_by_step(out + "/loss.csv").at(80), 2e-4, 1e-12);
  // the same --steps again: nothing to say, nothing changed
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "80"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(has_part(r.output, "where the run planned")) << r.output;
}

// A first short run needs no --warmup: the default (50) becomes a tenth of --steps, and is saved.
TEST(TrainGptProgram, AShortRunWithoutWarmupJustWorks) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  const ProgramRun r = train_gpt({"--steps", "20", "--eval-every", "10", "--batch", "2", "--context", "8", "--emb-dim",
                                  "8", "--heads", "2", "--layers", "1", "--eval-batches", "1", "--sample-tokens", "5",
                                  "--threads", "1", "--out", out},
                                 false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(read_bytes(out + "/config.json"), "\"warmup\": 2")) << read_bytes(out + "/config.json");
}

// --eval-every not given: 250, at most a fifth of --steps, so a short run is evaluated five times
// (10 steps: every 2); the value is saved, and a resumed run keeps it.
TEST(TrainGptProgram, EvalEveryDefaultsToAFifthOfAShortRunAndIsKeptOnResume) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  const std::vector<std::string> args = {"--steps", "10", "--batch", "2", "--context", "8", "--emb-dim", "8",
                                         "--heads", "2", "--layers", "1", "--eval-batches", "1", "--sample-tokens",
                                         "1", "--threads", "1", "--out", out};
  ProgramRun r = train_gpt(args, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(read_bytes(out + "/config.json"), "\"eval-every\": 2")) << read_bytes(out + "/config.json");
  auto evaluated_steps = [&] {  // the steps of the loss.csv rows with a val_loss (the third column)
    std::vector<int64_t> steps;
    std::istringstream csv(read_bytes(out + "/loss.csv"));
    std::string row;
    std::getline(csv, row);  // the header
    while (std::getline(csv, row)) {
      const size_t first = row.find(','), second = row.find(',', first + 1);
      if (row.find(',', second + 1) > second + 1) steps.push_back(std::stoll(row.substr(0, first)));
    }
    return steps;
  };
  EXPECT_EQ(evaluated_steps(), (std::vector<int64_t>{2, 4, 6, 8, 10}));
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "40"});  // 40 / 5 would be 8
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(evaluated_steps().size(), 20u);  // every 2 steps still
  EXPECT_TRUE(has_part(read_bytes(out + "/config.json"), "\"eval-every\": 2"));
  // the rule's ends: at least 1, at most 250
  EXPECT_EQ(train::default_eval_every(3), 1);
  EXPECT_EQ(train::default_eval_every(150), 30);
  EXPECT_EQ(train::default_eval_every(100000), 250);
}

TEST(TrainGptProgram, PrecisionIsSavedAndMayChangeOnResume) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  ProgramRun r = train_gpt({"--out", out, "--precision", "bf16"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "bf16 ("));  // and which kernel
  EXPECT_TRUE(has_part(read_bytes(out + "/config.json"), "\"precision\": \"bf16\""));
  EXPECT_EQ(json::parse(read_bytes(out + "/summary.json"), "summary.json")["precision"].as_string(), "bf16");
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "5", "--precision", "fp32"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, " kernels, fp32;"));
  EXPECT_TRUE(has_part(read_bytes(out + "/config.json"), "\"precision\": \"fp32\""));
  EXPECT_EQ(json::parse(read_bytes(out + "/summary.json"), "summary.json")["precision"].as_string(), "fp32");
  EXPECT_EQ(lines_of(read_bytes(out + "/loss.csv")), 6u);
}

// --checkpoint-activations changes memory and time, not numbers: a run that switches modes on
// resume ends with the bytes of a run without it; the memory split is printed and in summary.json.
TEST(TrainGptProgram, CheckpointActivationsKeepsTheNumbersAndReportsMemory) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string plain = dir.file("plain"), switched = dir.file("switched");
  const std::vector<std::string> more = {"--steps", "4", "--dropout", "0.1", "--layers", "2"};
  auto with = [&](std::vector<std::string> args) {  // the later of a repeated flag wins
    args.insert(args.begin(), more.begin(), more.end());
    return args;
  };
  ProgramRun r = train_gpt(with({"--out", plain}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "+ activations ")) << r.output;
  EXPECT_TRUE(has_part(r.output, "(--checkpoint-activations none, --loss-chunk 0)"));
  r = train_gpt(with({"--out", switched, "--steps", "2", "--checkpoint-activations", "every"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(read_bytes(switched + "/config.json"), "\"checkpoint-activations\": \"every\""));
  plan_steps(switched, 4);  // a run of 4 stopped after 2 (the same rates so far)
  r = run_program(example_program("train_gpt"), {"--resume", switched, "--steps", "4", "--checkpoint-activations", "ffn"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "(--checkpoint-activations ffn, --loss-chunk 0)"));
  EXPECT_EQ(read_bytes(switched + "/model.safetensors"), read_bytes(plain + "/model.safetensors"));
  const json::Value memory = json::parse(read_bytes(switched + "/summary.json"), "summary.json")["memory"];
  EXPECT_GT(memory["activations_mb"].as_double(), 0.0);
  EXPECT_GT(memory["parameters_mb"].as_double(), 0.0);
  r = train_gpt({"--out", dir.file("bad"), "--checkpoint-activations", "all"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has_part(r.output, "checkpoint-activations")) << r.output;
}

TEST(TrainGptProgram, ABpeRunSavesItsTokenizerResumesAndWritesAnyBytes) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  ProgramRun r = train_gpt({"--out", out, "--tokenizer", "bpe", "--vocab-size", "300"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "vocabulary of 300 BPE tokens")) << r.output;
  EXPECT_TRUE(has_part(read_bytes(out + "/tokenizer.json"), "\"type\": \"bpe\""));
  const std::string summary = read_bytes(out + "/summary.json");
  EXPECT_TRUE(has_part(summary, "\"final_val_bpb\": ")) << summary;
  EXPECT_FALSE(has_part(summary, "\"final_val_bpb\": null")) << summary;
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_program(example_program("train_gpt"), {"--resume", out, "--steps", "5", "--tokenizer", "char"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has_part(r.output, "--tokenizer cannot change when resuming")) << r.output;
  // a BPE model takes any bytes as a prompt: no character is outside its vocabulary
  r = run_program(example_program("generate"), {"--ckpt", out, "--prompt", "#\xc3\xa9 \xff!", "--tokens", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 6), "#\xc3\xa9 \xff!");
  // a text with no pair of bytes twice in its training split cannot give a BPE tokenizer
  const std::string tiny_text = dir.file("tiny.txt");
  std::ofstream(tiny_text) << "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  r = train_gpt({"--out", dir.file("run2"), "--tokenizer", "bpe", "--data", tiny_text});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "too small to learn any BPE merge")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("run2") + "/config.json"));
}

TEST(TrainGptProgram, EvalOnlyPrintsLossPerplexityAndBitsPerByte) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  ProgramRun r = train_gpt({"--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string csv = read_bytes(out + "/loss.csv");
  r = run_program(example_program("train_gpt"), {"--eval-only", "--resume", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string json_line = r.output.substr(0, r.output.find('\n'));
  const json::Value doc = json::parse(json_line, "eval-only output");
  EXPECT_EQ(doc["eval"].as_string(), "the val split of the built-in corpus");
  const double loss = doc["loss"].as_double();
  EXPECT_NEAR(doc["perplexity"].as_double(), std::exp(loss), 1e-9 * std::exp(loss));
  EXPECT_NEAR(doc["bpb"].as_double(), loss / std::log(2.0), 1e-9);  // ASCII characters: a byte each
  EXPECT_EQ(doc["tokens"].as_int64(), doc["bytes"].as_int64());
  EXPECT_TRUE(has_part(r.output, "train_gpt --eval-only: the val split of the built-in corpus: loss ")) << r.output;
  EXPECT_EQ(read_bytes(out + "/loss.csv"), csv);  // nothing saved is touched

  const std::string text = dir.file("text.txt");
  std::ofstream(text) << "The fox and the owl. The owl and the fox.";
  r = run_program(example_program("train_gpt"), {"--eval-only", "--resume", out, "--data", text});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json::parse(r.output.substr(0, r.output.find('\n')), "out")["tokens"].as_int64(), 40);  // 41 chars
  r = run_program(example_program("train_gpt"), {"--eval-only"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has_part(r.output, "--eval-only needs --resume DIR")) << r.output;
}

TEST(TrainGptProgram, MaxMinutesStopsAtTheTimeBudgetAndSavesAsAtTheEnd) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  ProgramRun r = run_program(example_program("train_gpt"), {"--out", out, "--steps", "1000000", "--max-minutes",
                                                             "0.002", "--sample-tokens", "5", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "the time budget (--max-minutes 0.002) is spent: stopped after step ")) << r.output;
  const json::Value summary = json::parse(read_bytes(out + "/summary.json"), "summary.json");
  const int64_t steps = summary["steps"].as_int64();
  EXPECT_GE(steps, 1);
  EXPECT_LT(steps, 1000000);
  EXPECT_FALSE(summary["final_val_loss"].is_null()) << "the last step is evaluated, as at the end of --steps";
  EXPECT_TRUE(std::filesystem::exists(out + "/samples.txt"));
  // the budget may grow on resume; the run goes on from where it stopped
  r = run_program(example_program("train_gpt"), {"--resume", out, "--max-minutes", "0.004", "--sample-tokens", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(json::parse(read_bytes(out + "/summary.json"), "summary.json")["steps"].as_int64(), steps);
}

// Ctrl-C (SIGINT) during training saves a checkpoint, exits with 130, and the run resumes.
TEST(TrainGptProgram, InterruptSavesACheckpointThatResumes) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run"), program = example_program("train_gpt");
  std::vector<std::string> args = {program,  "--out",     out, "--steps",       "100000",  "--eval-every",
                                   "100000", "--threads", "1", "--lr-schedule", "constant"};
  std::string launcher = program_launcher();  // "qemu-aarch64 " in a cross build, else ""
  if (!launcher.empty()) args.insert(args.begin(), launcher.substr(0, launcher.size() - 1));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  for (int waited = 0; waited < 100 && !std::filesystem::exists(out); ++waited) usleep(50000);  // training has begun
  usleep(300000);
  kill(child, SIGINT);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string csv = read_bytes(out + "/loss.csv");
  const size_t steps = lines_of(csv) - 1;
  EXPECT_GE(steps, 1u);
  const ProgramRun r =
      run_program(program, {"--resume", out, "--steps", std::to_string(steps + 2), "--sample-tokens", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(lines_of(read_bytes(out + "/loss.csv")), steps + 3);
}

TEST(TrainGptProgram, BadCommandLinesAreOneLineAndExitCode2) {
  SKIP_WITHOUT_EXAMPLES();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--bogus"}, "train_gpt: unknown flag --bogus (see --help)"},
      {{"--steps"}, "train_gpt: --steps: missing value"},
      {{"--steps", "ten"}, "train_gpt: --steps: expected an integer, got 'ten'"},
      {{"--lr", "fast"}, "train_gpt: --lr: expected a number, got 'fast'"},
      {{"--layers", "0"}, "train_gpt: --layers: 0 is out of range [1, 1024]"},
      {{"--lr", "-0.1"}, "train_gpt: --lr: -0.1 is out of range [0, 10]"},
      {{"--lr-schedule", "linear"}, "train_gpt: --lr-schedule: expected one of constant|cosine, got 'linear'"},
      {{"--on-nonfinite", "ignore"}, "train_gpt: --on-nonfinite: expected one of error|skip, got 'ignore'"},
      {{"--precision", "fp16"}, "train_gpt: --precision: expected one of fp32|bf16, got 'fp16'"},
      {{"--warmup", "3000"}, "train_gpt: --warmup (3000) must be smaller than --steps (1500)"},
      {{"--warmup", "5", "--decay-start", "2"},
       "train_gpt: --decay-start (2) must be at least --warmup (5): the decay starts after the warmup (0: at its end)"},
      {{"--overwrite"}, "train_gpt: --overwrite goes with --merge-lora DIR"},
      {{"stray"}, "train_gpt: unexpected argument 'stray'"},
      // an empty name is not the flag left out (--write-corpus '' trained the default run)
      {{"--write-corpus", ""}, "train_gpt: --write-corpus: expected a file or folder name, got ''"},
      {{"--resume", ""}, "train_gpt: --resume: expected a file or folder name, got ''"},
      {{"--merge-lora", ""}, "train_gpt: --merge-lora: expected a file or folder name, got ''"},
      // --arch and the flags that go with it
      {{"--arch", "mamba"}, "train_gpt: --arch: expected one of gpt2|llama|qwen2|qwen3, got 'mamba'"},
      {{"--kv-heads", "2"}, "train_gpt: --kv-heads: --arch gpt2 has no grouped-query attention"},
      {{"--arch", "llama", "--kv-heads", "3"}, "train_gpt: --kv-heads (3) must divide --heads (4)"},
      {{"--arch", "qwen3", "--emb-dim", "12"}, "train_gpt: --emb-dim / --heads (3) must be even"},
      {{"--arch", "llama", "--init-from", "gpt2"}, "train_gpt: --arch comes from the --init-from folder's config.json"},
      {{"--kv-heads", "2", "--init-from", "gpt2"}, "train_gpt: --kv-heads comes from the --init-from folder's config.json"},
      // a shape no machine holds: refused before anything is allocated, naming the flags
      {{"--emb-dim", "65536", "--heads", "1", "--layers", "1024", "--steps", "2"},
       "train_gpt: --batch 16, --context 64, --emb-dim 65536, --layers 1024: the weights, an attention mask and "
       "one batch's logits alone take 1966"},
  };
  for (const Case& c : cases) {
    const ProgramRun r = train_gpt(c.args, false);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << ": " << r.output;
    EXPECT_TRUE(has_part(r.output, c.message));
    EXPECT_EQ(lines_of(r.output), 1u) << r.output;
  }
  const ProgramRun help = train_gpt({"--help"}, false);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(has_part(help.output, "--grad-clip VALUE"));
  // what the code does now: Llama / Qwen folders, --eval-only from a folder, the resumed schedule
  for (const char* part : {"fine-tunes a Hugging Face GPT-2, Llama, Qwen2 or Qwen3 folder",
                           "with --init-from DIR (a Hugging Face GPT-2, Llama or Qwen folder), on all of --data FILE",
                           "a resumed run given another total goes on from the learning rate it had reached",
                           "at most the smallest adapted matrix's min(in, out)", "unless --overwrite",
                           "(llama, qwen2, qwen3: on the attention weights alone",
                           "with the flags in its config.json (only --steps, --max-minutes, --out, --threads, "
                           "--eval-every, --eval-task, --eval-task-limit, --sample-tokens, --on-nonfinite, --precision, --checkpoint-activations, "
                           "--loss-chunk and --dtype may change)"})
    EXPECT_TRUE(has_part(help.output, part)) << part;
  for (const char* stale : {"fine-tunes GPT-2,", "with --resume DIR: print the saved model's loss"})
    EXPECT_FALSE(has_part(help.output, stale)) << stale;
}

TEST(TrainGptProgram, BadInputsAreOneLineErrors) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  write_bytes(dir.file("empty.txt"), "");
  write_bytes(dir.file("short.txt"), "abc abc abc\n");
  write_bytes(dir.file("a_file"), "x");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--data", dir.file("missing.txt")}, "missing.txt: no such file"},
      {{"--data", dir.file("empty.txt")}, "empty.txt: the file is empty"},
      {{"--data", dir.file("short.txt")}, "too few for one window"},
      {{"--heads", "3"}, "emb_dim (8) must be divisible by n_heads (3)"},
      {{"--resume", dir.path}, "not a train_gpt checkpoint folder (model.safetensors is missing)"},
      {{"--resume", dir.file("nowhere")}, "nowhere: no such folder"},
      {{"--out", dir.file("a_file") + "/run"}, "--out: cannot make the folder"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    if (c.args[0] != "--out") args.insert(args.end(), {"--out", dir.file("run")});
    const ProgramRun r = train_gpt(args);
    EXPECT_NE(r.exit_code, 0) << c.args[1];
    EXPECT_TRUE(has_part(r.output, c.message));
    EXPECT_EQ(lines_of(r.output), 1u) << r.output;
  }
  const ProgramRun r = run_program(example_program("generate"), {"--ckpt", dir.file("nowhere")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "generate: " + dir.file("nowhere") + ": no such folder"));
}

// An environment variable tapegrad does not understand stops the run before it writes anything.
TEST(TrainGptProgram, ABadEnvironmentVariableIsAOneLineErrorBeforeAnythingIsWritten) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"TG_FAST_KERNELS=off", "TG_FAST_KERNELS=off: expected 0 or 1 (or leave it unset)"},
      {"TG_BF16_KERNEL=avx", "TG_BF16_KERNEL=avx: expected avx512_bf16 or fma (or leave it unset)"},
      {"TG_DETECT_ANOMALY=yes", "TG_DETECT_ANOMALY=yes: expected 0 or 1 (or leave it unset)"},
  };
  for (const auto& [setting, message] : cases) {
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--precision", "bf16", "--out", dir.file("run")});
    const ProgramRun r = run_program(example_program("train_gpt"), args, {setting});  // NAME=value train_gpt ...
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output, "train_gpt: " + message + "\n");
    EXPECT_FALSE(std::filesystem::exists(dir.file("run"))) << setting;
  }
}

// BLIS_ARCH_TYPE is BLIS's own variable. A value BLIS cannot run (it would abort, or crash on an
// illegal instruction) is a one-line error before anything is written; one it can run wins, and
// the first line says which kernels run and who chose them.
TEST(TrainGptProgram, ABlisArchTypeBlisCannotRunIsAOneLineError) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const kernels::BlisBuild blis = kernels::this_blis();
  const kernels::CpuIdentity cpu = kernels::this_cpu();
  auto number_of = [&](const std::string& arch) {
    return std::to_string(std::find(blis.arch_names.begin(), blis.arch_names.end(), arch) - blis.arch_names.begin());
  };
  auto with_arch_type = [&](const std::string& value, const std::string& out) {
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--out", out});
    return run_program(example_program("train_gpt"), args, {"BLIS_ARCH_TYPE=" + value});
  };
  const std::string foreign = cpu.x86_64 ? "armsve" : "skx";  // another processor architecture's
  // the last kernels the error lists, and ones to run: x86-64's family builds have generic kernels,
  // Debian's arm64 BLIS one configuration (cortexa57)
  const std::string runnable = cpu.x86_64 ? "generic" : blis.configured.back();
  std::vector<std::pair<std::string, std::string>> cases = {
      {"abc", "BLIS_ARCH_TYPE=abc: not a number"},
      {"999", "BLIS_ARCH_TYPE=999: BLIS " + blis.version + " numbers its kernels 0 to "},
      {number_of(foreign), "(" + foreign + ") is for another processor architecture; expected "},
  };
  if (cpu.x86_64 && !cpu.avx512_phi) cases.push_back({number_of("knl"), "(knl) needs Xeon Phi's AVX-512"});
  if (cpu.x86_64 && !cpu.avx512) cases.push_back({number_of("skx"), "(skx) needs AVX-512"});
  for (const auto& [value, message] : cases) {
    const ProgramRun r = with_arch_type(value, dir.file("run"));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output.rfind("train_gpt: BLIS_ARCH_TYPE=" + value + ": ", 0), 0u) << r.output;
    EXPECT_TRUE(has_part(r.output, message));
    EXPECT_TRUE(has_part(r.output, number_of(runnable) + " (" + runnable + "), or -1 for BLIS's own pick"));
    EXPECT_EQ(lines_of(r.output), 1u) << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("run"))) << value;
  }
  const ProgramRun r = with_arch_type(number_of(runnable), dir.file("generic"));  // slow kernels, a tiny run
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("train_gpt: BLIS " + blis.version + " (", 0), 0u) << r.output;
  const std::string first_line = r.output.substr(0, r.output.find('\n'));
  EXPECT_TRUE(has_part(first_line, " " + runnable + " kernels (chosen by BLIS_ARCH_TYPE=" + number_of(runnable) +
                                       ") | tapegrad "));
}

}  // namespace
}  // namespace tg::test
