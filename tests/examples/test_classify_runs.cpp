// train_gpt --task classify: a classifier learns the shipped messages (spam or not) well above
// chance, resumes bit for bit, and saves Hugging Face *ForSequenceClassification folders (a LoRA
// run: its adapters and head in peft's files) that evaluate --task classify and generate
// --classify read; bad input is one line naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::string kRoot = std::string(TG_REFERENCE_DIR) + "/../..";
const std::string kMessages = kRoot + "/examples/data/messages.tsv";
const std::string kGpt2Base = std::string(TG_REFERENCE_DIR) + "/lora/base";  // a tiny GPT-2 folder with its tokenizer

// A small classifier of the messages, the classes balanced (58 of each: chance is 0.5).
const std::vector<std::string> kData = {"--task", "classify", "--data", kMessages, "--columns", "label,text",
                                        "--balance", "--batch", "8", "--threads", "1"};
const std::vector<std::string> kShape = {"--emb-dim", "32", "--heads", "2", "--layers", "1", "--context", "48"};

// train_gpt on the messages: kData, then kShape unless the run is from a folder, then args.
ProgramRun train_gpt(std::vector<std::string> args, bool from_folder = false) {
  std::vector<std::string> all = kData;
  if (!from_folder) all.insert(all.end(), kShape.begin(), kShape.end());
  all.insert(all.end(), args.begin(), args.end());
  return run_program(example_program("train_gpt"), all);
}

// loss.csv's rows, each cut to the columns that do not depend on time (step, train_loss, val_loss,
// lr and the accuracies).
std::vector<std::string> timeless_rows(const std::string& csv) {
  std::vector<std::string> rows;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    std::string kept;
    for (size_t k : {0u, 1u, 2u, 3u, 8u, 9u}) kept += (k < cells.size() ? cells[k] : "?") + ",";
    rows.push_back(kept);
  }
  return rows;
}

#define SKIP_WITHOUT_EXAMPLES()                                                                              \
  if (example_program("train_gpt").empty() || example_program("evaluate").empty() ||                        \
      example_program("generate").empty())                                                                   \
  GTEST_SKIP() << "examples not built"

TEST(ClassifyRuns, LearnsTheMessagesAndEvaluateGivesTheRunsTestAccuracy) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run");
  ProgramRun r = train_gpt({"--steps", "80", "--out", run});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "81 training, 11 validation and 24 test texts of 2 classes (\"ham\", \"spam\")")) << r.output;
  EXPECT_TRUE(has_part(r.output, ", train acc ")) << r.output;
  const std::string csv = read_bytes(run + "/loss.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "step,train_loss,val_loss,lr,tokens_per_s,elapsed_s,train_bpb,val_bpb,train_acc,val_acc");
  const json::Value summary = json::parse_file(run + "/summary.json");
  const double test_acc = summary["test"]["acc"].as_double();
  EXPECT_GE(test_acc, 0.75) << "chance is 0.5";
  EXPECT_EQ(summary["test"]["examples"].as_int64(), 24);
  EXPECT_GE(summary["final_val_acc"].as_double(), 0.6);

  ProgramRun e = run_program(example_program("evaluate"),
                             {"--ckpt", run, "--task", "classify", "--data", kMessages, "--split", "test"});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const json::Value line = last_json_line(e.output);
  EXPECT_EQ(line["acc"].as_double(), test_acc);  // the same texts, the same model, the same batches
  EXPECT_EQ(line["items"].as_int64(), 24);
  int64_t counted = 0;
  for (size_t label = 0; label < 2; ++label)
    for (size_t given = 0; given < 2; ++given) {
      EXPECT_EQ(line["confusion"][label][given].as_int64(), summary["test"]["confusion"][label][given].as_int64());
      counted += line["confusion"][label][given].as_int64();
    }
  EXPECT_EQ(counted, 24);
  EXPECT_EQ(line["labels"][1].as_string(), "spam");

  ProgramRun all = run_program(example_program("evaluate"), {"--ckpt", run, "--task", "classify", "--data", kMessages});
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_EQ(last_json_line(all.output)["items"].as_int64(), 400);  // all of the file, --columns from the run

  ProgramRun g = run_program(example_program("generate"), {"--ckpt", run, "--classify", "Claim your FREE prize now"});
  ASSERT_EQ(g.exit_code, 0) << g.output;
  const json::Value given = last_json_line(g.output);
  const double p = given["probability"].as_double();
  EXPECT_GE(p, 0.5);
  EXPECT_LE(p, 1.0);
  EXPECT_NEAR(given["probabilities"]["ham"].as_double() + given["probabilities"]["spam"].as_double(), 1.0, 1e-12);
  EXPECT_TRUE(has_part(g.output, given["label"].as_string() + " (probability ")) << g.output;
}

TEST(ClassifyRuns, AResumedRunGoesOnBitForBit) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::vector<std::string> plan = {"--lr-schedule", "constant", "--lr", "1e-3", "--eval-every", "5",
                                         "--dropout", "0.1"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), plan.begin(), plan.end());
    return args;
  };
  ProgramRun straight = train_gpt(with({"--steps", "20", "--out", dir.file("straight")}));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  ProgramRun first = train_gpt(with({"--steps", "10", "--out", dir.file("parts")}));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  plan_steps(dir.file("parts"), 20);
  ProgramRun rest = run_program(example_program("train_gpt"), {"--resume", dir.file("parts")});
  ASSERT_EQ(rest.exit_code, 0) << rest.output;
  EXPECT_EQ(timeless_rows(read_bytes(dir.file("parts") + "/loss.csv")),
            timeless_rows(read_bytes(dir.file("straight") + "/loss.csv")));
  EXPECT_EQ(read_bytes(dir.file("parts") + "/model.safetensors"), read_bytes(dir.file("straight") + "/model.safetensors"));
  EXPECT_EQ(json::parse_file(dir.file("parts") + "/summary.json")["test"]["acc"].as_double(),
            json::parse_file(dir.file("straight") + "/summary.json")["test"]["acc"].as_double());
}

// The names of a safetensors file's tensors, in its order.
std::vector<std::string> tensor_names(const std::string& path) {
  std::vector<std::string> names;
  for (const SafetensorsEntry& e : safetensors_entries(path)) names.push_back(e.name);
  return names;
}

TEST(ClassifyRuns, FoldersAreHuggingFaceSequenceClassifiers) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  struct Case {
    std::vector<std::string> args;
    std::string architecture, first_name;
  };
  const std::vector<Case> cases = {
      {{"--init-from", kGpt2Base}, "GPT2ForSequenceClassification", "transformer.wte.weight"},
      {{"--arch", "qwen3", "--kv-heads", "1"}, "Qwen3ForSequenceClassification", "model.embed_tokens.weight"},
      {{}, "GPTForSequenceClassification", "tok_emb.weight"},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const std::string run = dir.file("run" + std::to_string(k));
    std::vector<std::string> args = {"--steps", "4", "--eval-every", "2", "--out", run};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ProgramRun r = train_gpt(args, /*from_folder=*/k == 0);
    ASSERT_EQ(r.exit_code, 0) << c.architecture << "\n" << r.output;
    const json::Value config = json::parse_file(run + "/config.json");
    EXPECT_EQ(config["architectures"][0].as_string(), c.architecture);
    EXPECT_EQ(config["num_labels"].as_int64(), 2);
    EXPECT_EQ(config["id2label"]["0"].as_string(), "ham");
    EXPECT_EQ(config["id2label"]["1"].as_string(), "spam");
    EXPECT_EQ(config["label2id"]["spam"].as_int64(), 1);
    EXPECT_GE(config["pad_token_id"].as_int64(), 0) << "the tokenizer's end-of-text";
    const std::vector<std::string> names = tensor_names(run + "/model.safetensors");
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names.front(), c.first_name) << c.architecture;
    EXPECT_EQ(names.back(), "score.weight") << c.architecture;
    for (const SafetensorsEntry& e : safetensors_entries(run + "/model.safetensors")) {
      if (e.name == "score.weight") {
        EXPECT_EQ(e.shape[0], 2);
      }
    }
    for (const std::string& name : names) {  // GPT2ForSequenceClassification's: the body under "transformer."
      if (k == 0) {
        EXPECT_TRUE(name == "score.weight" || name.rfind("transformer.", 0) == 0) << name;
      }
    }
    // the folder resumes, and evaluate and generate read it
    ProgramRun more = run_program(example_program("train_gpt"), {"--resume", run, "--steps", "6"});
    ASSERT_EQ(more.exit_code, 0) << c.architecture << "\n" << more.output;
    ProgramRun e = run_program(example_program("evaluate"),
                               {"--ckpt", run, "--task", "classify", "--data", kMessages, "--split", "val"});
    ASSERT_EQ(e.exit_code, 0) << c.architecture << "\n" << e.output;
    EXPECT_EQ(last_json_line(e.output)["items"].as_int64(), 11);
    ProgramRun g = run_program(example_program("generate"), {"--ckpt", run, "--classify", "see you at lunch"});
    ASSERT_EQ(g.exit_code, 0) << c.architecture << "\n" << g.output;
    // the body still writes text: generate without --classify reads the folder as a language model
    ProgramRun text = run_program(example_program("generate"), {"--ckpt", run, "--prompt", "see", "--tokens", "3"});
    EXPECT_EQ(text.exit_code, 0) << c.architecture << "\n" << text.output;
  }
}

TEST(ClassifyRuns, ALoraClassifierKeepsAdaptersAndHeadInPeftsFilesAndResumesBitForBit) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::vector<std::string> lora = {"--init-from", kGpt2Base, "--lora-rank", "4", "--lr", "1e-2", "--lr-schedule",
                                         "constant", "--eval-every", "5", "--dropout", "0.1"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), lora.begin(), lora.end());
    return args;
  };
  ProgramRun straight = train_gpt(with({"--steps", "10", "--out", dir.file("straight")}), /*from_folder=*/true);
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  EXPECT_TRUE(has_part(straight.output, "(--train-layers lora)")) << straight.output;
  const std::string run = dir.file("straight");
  const json::Value adapter = json::parse_file(run + "/adapter_config.json");
  EXPECT_EQ(adapter["task_type"].as_string(), "SEQ_CLS");
  EXPECT_EQ(adapter["modules_to_save"][0].as_string(), "score");
  const std::vector<std::string> names = tensor_names(run + "/adapters.safetensors");
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "base_model.model.score.weight");
  EXPECT_FALSE(std::filesystem::exists(run + "/model.safetensors")) << "the base's weights stay in the base folder";
  EXPECT_EQ(json::parse_file(run + "/config.json")["architectures"][0].as_string(), "GPT2ForSequenceClassification");

  ProgramRun first = train_gpt(with({"--steps", "5", "--out", dir.file("parts")}), /*from_folder=*/true);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  plan_steps(dir.file("parts"), 10);
  ProgramRun rest = run_program(example_program("train_gpt"), {"--resume", dir.file("parts")});
  ASSERT_EQ(rest.exit_code, 0) << rest.output;
  EXPECT_EQ(read_bytes(dir.file("parts") + "/adapters.safetensors"), read_bytes(run + "/adapters.safetensors"));
  EXPECT_EQ(timeless_rows(read_bytes(dir.file("parts") + "/loss.csv")), timeless_rows(read_bytes(run + "/loss.csv")));

  ProgramRun e = run_program(example_program("evaluate"),
                             {"--ckpt", run, "--task", "classify", "--data", kMessages, "--split", "test"});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_EQ(last_json_line(e.output)["acc"].as_double(),
            json::parse_file(run + "/summary.json")["test"]["acc"].as_double());
  ProgramRun g = run_program(example_program("generate"), {"--ckpt", run, "--classify", "see you at lunch"});
  EXPECT_EQ(g.exit_code, 0) << g.output;
}

TEST(ClassifyRuns, GivenSplitFilesAreTheRunsSplits) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run");
  write_bytes(dir.file("val.tsv"), "spam\tWIN a FREE prize, call now\nham\tsee you at lunch\n");
  write_bytes(dir.file("test.tsv"), "ham\tok thanks\nspam\tClaim your FREE entry now\nham\ton my way\n");
  ProgramRun r = train_gpt({"--steps", "4", "--out", run, "--val-data", dir.file("val.tsv"), "--test-data", dir.file("test.tsv")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "116 training, 2 validation and 3 test texts")) << r.output;  // --balance: 58 of each
  EXPECT_EQ(json::parse_file(run + "/summary.json")["test"]["examples"].as_int64(), 3);
  ProgramRun e = run_program(example_program("evaluate"),
                             {"--ckpt", run, "--task", "classify", "--data", kMessages, "--split", "test"});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_EQ(last_json_line(e.output)["items"].as_int64(), 3);
  EXPECT_EQ(last_json_line(e.output)["acc"].as_double(), json::parse_file(run + "/summary.json")["test"]["acc"].as_double());
}

// transformers saves an untied Llama / Qwen classifier as its body and score.weight, without
// lm_head.weight: such a folder classifies as the run it came from, and a fine-tune of it starts
// from it, while writing text from it is one line naming the missing head.
TEST(ClassifyRuns, AHuggingFaceClassifierWithoutTheBodysHeadClassifiesButWritesNoText) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string run = dir.file("run"), hf = dir.file("hf");
  ProgramRun r = train_gpt({"--arch", "qwen3", "--kv-heads", "1", "--steps", "4", "--eval-every", "2", "--out", run});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::filesystem::create_directory(hf);
  for (const char* name : {"config.json", "tokenizer.json"}) std::filesystem::copy_file(run + "/" + name, hf + "/" + name);
  NamedTensors kept;
  for (auto& [name, tensor] : load_safetensors(run + "/model.safetensors"))
    if (name != "lm_head.weight") kept.push_back({name, tensor});
  ASSERT_EQ(kept.size() + 1, load_safetensors(run + "/model.safetensors").size()) << "an untied head to leave out";
  save_safetensors(hf + "/model.safetensors", kept, {{"format", "pt"}});

  const std::string text = "WIN a FREE prize";
  ProgramRun from_run = run_program(example_program("generate"), {"--ckpt", run, "--classify", text});
  ProgramRun from_hf = run_program(example_program("generate"), {"--ckpt", hf, "--classify", text});
  ASSERT_EQ(from_run.exit_code, 0) << from_run.output;
  ASSERT_EQ(from_hf.exit_code, 0) << from_hf.output;
  const json::Value want = last_json_line(from_run.output), got = last_json_line(from_hf.output);
  EXPECT_EQ(got["label"].as_string(), want["label"].as_string());
  for (const char* label : {"ham", "spam"})  // the same weights, the same sums
    EXPECT_EQ(got["probabilities"][label].as_double(), want["probabilities"][label].as_double()) << label;

  // text: the run (its head was saved) writes with a note; the folder without it is refused
  ProgramRun with_head = run_program(example_program("generate"), {"--ckpt", run, "--prompt", "see", "--tokens", "3"});
  EXPECT_EQ(with_head.exit_code, 0) << with_head.output;
  EXPECT_TRUE(has_part(with_head.output, "is a classifier: the text below is its body's")) << with_head.output;
  write_bytes(dir.file("c.jsonl"), "{\"context\": \"a\", \"choices\": [\"b\", \"c\"], \"label\": 0}\n");
  for (const std::string program : {"generate", "evaluate"}) {
    std::vector<std::string> args = {"--ckpt", hf, "--prompt", "see"};
    if (program == "evaluate") args = {"--ckpt", hf, "--task", "choices", "--data", dir.file("c.jsonl")};
    ProgramRun refused = run_program(example_program(program), args);
    EXPECT_NE(refused.exit_code, 0) << refused.output;
    EXPECT_TRUE(has_part(refused.output, hf + ": a classifier without lm_head.weight")) << program << "\n" << refused.output;
  }
  ProgramRun lm = run_program(example_program("train_gpt"), {"--init-from", hf, "--data", kMessages, "--steps", "1",
                                                             "--out", dir.file("lm")});
  EXPECT_NE(lm.exit_code, 0) << lm.output;
  EXPECT_TRUE(has_part(lm.output, "a classifier without lm_head.weight")) << lm.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("lm")));
  ProgramRun again = train_gpt({"--init-from", hf, "--steps", "2", "--eval-every", "2", "--out", dir.file("again")},
                               /*from_folder=*/true);
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST(ClassifyRuns, BadInputIsOneLineNamingIt) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string train = example_program("train_gpt"), evaluate = example_program("evaluate");
  struct Case {
    std::string program;
    std::vector<std::string> args;
    std::string says;
  };
  write_bytes(dir.file("no_label.csv"), "id,review\n1,good\n2,bad\n");
  write_bytes(dir.file("one_class.jsonl"), "{\"text\": \"a\", \"label\": \"x\"}\n{\"text\": \"b\", \"label\": \"x\"}\n");
  const std::vector<Case> cases = {
      {train, {"--columns", "label,text"}, "--columns goes with --task classify"},
      {train, {"--test-data", kMessages}, "--test-data goes with --task classify"},
      {train, {"--task", "classify", "--data", kMessages, "--columns", "label,text", "--val-data", kMessages},
       "--val-data and --test-data go together"},
      {train, {"--task", "classify"}, "--task classify needs --data FILE"},
      {train, {"--task", "classify", "--data", dir.file("no_label.csv")}, "no_label.csv: line 1"},
      {train, {"--task", "classify", "--data", dir.file("one_class.jsonl")}, "only one class"},
      {train, {"--task", "classify", "--data", kMessages, "--columns", "label,label"}, "--columns"},
      {train, {"--task", "classify", "--data", kMessages, "--columns", "label,text", "--data-format", "jsonl"},
       "--data-format goes with --task lm"},
      {train, {"--task", "classify", "--data", kMessages, "--init-from", kGpt2Base, "--train-layers", "lora"},
       "--train-layers lora needs --lora-rank"},
      {train, {"--task", "classify", "--data", kMessages, "--init-from", kGpt2Base, "--lora-rank", "2", "--train-layers",
               "last"},
       "goes with --train-layers lora"},
      {evaluate, {"--ckpt", kGpt2Base, "--task", "classify", "--data", kMessages}, "is not a classifier"},
      {evaluate, {"--ckpt", kGpt2Base, "--task", "arc", "--data", kMessages, "--split", "test"},
       "--split goes with --task classify"},
      {example_program("generate"), {"--ckpt", kGpt2Base, "--classify", "hi"}, "is not a classifier"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    if (c.program == train) args.insert(args.end(), {"--out", dir.file("never")});
    ProgramRun r = run_program(c.program, args);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_TRUE(has_part(r.output, c.says)) << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("never"))) << r.output;
  }
}

}  // namespace
}  // namespace tg::test
