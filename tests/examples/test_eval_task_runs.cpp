// train_gpt --eval-task FORMAT:FILE: a multiple-choice task scored at every evaluation into
// loss.csv's task_acc and task_acc_norm, the same numbers evaluate and --eval-only give for the
// saved run, without changing a step of the training; plot_runs draws the columns; a task the
// run cannot score is one line before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::string kRoot = std::string(TG_REFERENCE_DIR) + "/../..";
const std::string kStories = kRoot + "/examples/data/stories_choices.jsonl";

// A run whose context holds the stories' endings (about 35 characters each).
const std::vector<std::string> kTiny = {"--steps", "4", "--eval-every", "2", "--batch", "2", "--context", "48",
                                        "--emb-dim", "16", "--heads", "2", "--layers", "1", "--eval-batches", "1",
                                        "--warmup", "1", "--sample-tokens", "5", "--threads", "1"};

ProgramRun train_gpt(std::vector<std::string> args) {
  args.insert(args.begin(), kTiny.begin(), kTiny.end());
  return run_program(example_program("train_gpt"), args);
}

std::vector<std::vector<std::string>> csv_rows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

#define SKIP_WITHOUT_EXAMPLES() \
  if (example_program("train_gpt").empty() || example_program("evaluate").empty()) GTEST_SKIP() << "examples not built"

TEST(EvalTaskRuns, TaskAccuracyIsLoggedAtEachEvaluationAndIsEvaluatesOnTheSavedRun) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run"), spec = "choices:" + kStories;
  ProgramRun r = train_gpt({"--out", run, "--eval-task", spec, "--eval-task-limit", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "step 4: train loss ")) << r.output;
  EXPECT_TRUE(has_part(r.output, ", task acc ")) << r.output;
  const auto rows = csv_rows(read_bytes(run + "/loss.csv"));
  ASSERT_EQ(rows.size(), 5u);  // the header and 4 steps
  EXPECT_EQ(rows[0], (std::vector<std::string>{"step", "train_loss", "val_loss", "lr", "tokens_per_s", "elapsed_s",
                                               "train_bpb", "val_bpb", "task_acc", "task_acc_norm"}));
  for (size_t step = 1; step <= 4; ++step) {
    ASSERT_EQ(rows[step].size(), 10u) << step;
    const bool evaluated = step % 2 == 0;
    EXPECT_EQ(rows[step][8].empty(), !evaluated) << step;
    EXPECT_EQ(rows[step][9].empty(), !evaluated) << step;
    for (size_t column : {8u, 9u}) {
      if (!evaluated) continue;
      const double acc = std::stod(rows[step][column]);
      EXPECT_GE(acc, 0.0);
      EXPECT_LE(acc, 1.0);
      EXPECT_NEAR(acc * 20, std::round(acc * 20), 1e-6) << "a share of 20 items: " << acc;
    }
  }

  // evaluate and --eval-only score the saved model (the step-4 weights) as the run did at step 4
  r = run_program(example_program("evaluate"),
                  {"--ckpt", run, "--task", "choices", "--data", kStories, "--limit", "20", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::Value evaluated = last_json_line(r.output);
  EXPECT_EQ(evaluated["items"].as_int64(), 20);
  EXPECT_NEAR(evaluated["acc"].as_double(), std::stod(rows[4][8]), 1e-8);
  EXPECT_NEAR(evaluated["acc_norm"].as_double(), std::stod(rows[4][9]), 1e-8);
  r = run_program(example_program("train_gpt"), {"--eval-only", "--resume", run, "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::Value eval_only = json::parse(r.output.substr(0, r.output.find('\n')), "eval-only's line");
  EXPECT_EQ(eval_only["task"].as_string(), spec);
  EXPECT_EQ(eval_only["task_items"].as_int64(), 20);
  EXPECT_EQ(eval_only["task_acc"].as_double(), evaluated["acc"].as_double());
  EXPECT_EQ(eval_only["task_acc_norm"].as_double(), evaluated["acc_norm"].as_double());
  const json::Value summary = json::parse(read_bytes(run + "/summary.json"), "summary.json");
  EXPECT_NEAR(summary["final_task_acc"].as_double(), std::stod(rows[4][8]), 1e-8);

  // scoring draws nothing and leaves the model training: the same losses as a run without the task
  const std::string plain = dir.file("plain");
  r = train_gpt({"--out", plain});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto plain_rows = csv_rows(read_bytes(plain + "/loss.csv"));
  ASSERT_EQ(plain_rows.size(), rows.size());
  EXPECT_EQ(plain_rows[0].size(), 8u);  // no task: no task columns
  for (size_t step = 1; step < rows.size(); ++step)
    for (size_t column : {1u, 2u, 3u, 6u, 7u}) EXPECT_EQ(plain_rows[step][column], rows[step][column]) << step;

  // a resumed run keeps its task and its rows; --eval-task-limit may change
  const std::string before = read_bytes(run + "/loss.csv");
  r = run_program(example_program("train_gpt"), {"--resume", run, "--steps", "6", "--eval-task-limit", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string after = read_bytes(run + "/loss.csv");
  EXPECT_EQ(after.substr(0, before.size()), before);
  const auto resumed = csv_rows(after);
  ASSERT_EQ(resumed.size(), 7u);
  EXPECT_NEAR(std::stod(resumed[6][8]) * 10, std::round(std::stod(resumed[6][8]) * 10), 1e-6);

  // plot_runs draws the column; a run without a task says what to give
  const std::string svg = dir.file("task.svg");
  r = run_program(example_program("plot_runs"), {"--runs", run, "--y", "task_acc_norm", "--out", svg});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(read_bytes(svg), "task_acc_norm"));
  r = run_program(example_program("plot_runs"), {"--runs", plain, "--y", "task_acc", "--out", svg});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "no row has task_acc (the run scored no task: train_gpt --eval-task FORMAT:FILE)"))
      << r.output;
}

TEST(EvalTaskRuns, ATaskTheRunCannotScoreIsOneLineAndNothingIsWritten) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string out = dir.file("run");
  const struct {
    std::string spec, message;
  } cases[] = {
      {kStories, "\": expected FORMAT:FILE, the format hellaswag, arc, mmlu or choices"},
      {"piqa:" + kStories, "unknown task \"piqa\": give hellaswag, arc, mmlu or choices"},
      {"choices:", "no file after the ':'"},
      {"choices:" + dir.file("missing.jsonl"), "--eval-task " + dir.file("missing.jsonl") + ": no such file"},
      {"hellaswag:" + kStories, "line 1: "},
      // the built-in corpus has no capital F: a character run cannot read the item
      {"choices:" + kRoot + "/examples/data/choices_sample.jsonl",
       "--eval-task choices:" + kRoot + "/examples/data/choices_sample.jsonl: line 1: tokenizer: character 'F'"},
  };
  for (const auto& c : cases) {
    const ProgramRun r = train_gpt({"--out", out, "--eval-task", c.spec});
    EXPECT_EQ(r.exit_code, 1) << c.spec;
    EXPECT_TRUE(has_part(r.output, c.message)) << c.spec << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.spec;
  }
  // an ending longer than the model's context
  std::vector<std::string> args = kTiny;
  *(std::find(args.begin(), args.end(), "--context") + 1) = "16";
  args.insert(args.end(), {"--out", out, "--eval-task", "choices:" + kStories});
  const ProgramRun r = run_program(example_program("train_gpt"), args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "line 1: choice 0 is 33 tokens, more than the model's context (16)")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace tg::test
