// examples/evaluate.cpp — how often a model picks the right answer of a multiple-choice data set,
// scored as lm-evaluation-harness scores it: each choice's log-likelihood after the task's prompt,
// acc (the most likely choice) and acc_norm (the most likely per character). With --task
// instructions, the model answers the examples of an instruction or chat JSONL instead, scored
// against their references by exact match and F1 (train/answer_scores.h), and by a judge model
// with --judge DIR. With --task perplexity, it scores a whole text: the model's loss on each of its
// tokens, as perplexity and bits per byte.
//
//   ./build/examples/evaluate --ckpt gpt2 --task hellaswag --data hellaswag_val.jsonl
//   ./build/examples/evaluate --ckpt Qwen3-0.6B --task mmlu --data high_school_physics_test.csv --shots 5
//   ./build/examples/evaluate --ckpt gpt_run --task choices --data examples/data/choices_sample.jsonl --out items.jsonl
//   ./build/examples/evaluate --ckpt runs/gpt2-instruct --task instructions --data examples/data/instructions.jsonl
//   ./build/examples/evaluate --ckpt spam_run --task classify --data examples/data/messages.tsv --split test
//   ./build/examples/evaluate --ckpt Qwen3-0.6B --task perplexity --data held_out.txt --quantize int8
//
// It reads any folder generate reads (train/run_folder.h: load_saved_model): a train_gpt run, a
// Hugging Face GPT-2, Llama, Qwen2 or Qwen3 folder, float32 or 16-bit weights. The formats and
// prompts are train/task_formats.h's, the scoring train/multiple_choice.h's: the context runs once
// per item, and its choices continue from its KV cache together, as one batch.
//
// The last line of stdout is one JSON object:
//   {"task", "items", "acc", "acc_stderr", "acc_norm", "acc_norm_stderr", "tokens_per_s"}
// --out FILE writes a JSON line per item, {"index", "loglikelihoods", "lengths", "pred",
// "pred_norm", "label"}, once every item is scored (nothing when anything fails). With --task
// instructions the last line is {"task", "items", "exact_match", "exact_match_stderr", "f1",
// "f1_stderr", ("judge_score", "judge_score_stderr", "judge_unparsed",) "items_per_s"}, and --out's
// lines {"index", "line", "answer", "reference", "exact_match", "f1", ("judge_score",
// "judge_reply")}. With --task classify (a classifier's folder: train/run_folder.h's
// load_saved_classifier) it prints the accuracy and the confusion matrix, and the last line is
// {"task", "split", "items", "acc", "acc_stderr", "loss", "labels", "confusion"} (confusion[label][given]);
// --out's lines {"index", "line", "label", "pred", "probabilities"}. With --task perplexity the last
// line is {"task", "tokens", "bytes", "loss", "perplexity", "bits_per_byte", "tokens_per_s"}. On a terminal, a progress bar with the time left goes to stderr.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/flags.h"
#include "io/json.h"
#include "nn/quantize.h"
#include "autograd/runtime/parallel.h"
#include "models/generation/chat_session.h"
#include "tokenizers/chat_template.h"
#include "train/answer_scores.h"
#include "train/chat_data.h"
#include "train/classification_data.h"
#include "train/corpus.h"
#include "train/evaluate.h"
#include "train/multiple_choice.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "train/task_formats.h"

using namespace tg;

namespace {

struct EvaluateOptions {
  std::string ckpt, task, data, out, judge;
  std::string columns, split = "all";  // classify: a headerless file's columns; which texts of --data
  int64_t max_tokens = 256;  // instructions: the longest answer
  int64_t limit = 0;  // 0: every item
  int64_t shots = 0;
  int64_t seed = 1234;
  int64_t threads = 0;
  std::string dtype = "auto";  // a Llama / Qwen folder's weights: the checkpoint's dtype, or float32
  std::string quantize = "none";  // int8: nn/quantize.h
};

std::vector<Flag> evaluate_flags(EvaluateOptions& o) {
  return {
      text_flag("ckpt", &o.ckpt,
                "the model: a train_gpt --out folder, or a Hugging Face GPT-2, Llama, Qwen2 or Qwen3 folder with "
                "its tokenizer"),
      text_flag("task", &o.task,
                "the data's format and prompt; instructions: the model writes an answer to each example, scored "
                "against the reference (exact match, F1)",
                {"hellaswag", "arc", "mmlu", "choices", "instructions", "classify", "perplexity"}),
      text_flag("data", &o.data,
                "hellaswag: hellaswag_val.jsonl; arc: ARC's jsonl; mmlu: a subject's CSV (subject_test.csv); "
                "choices: JSONL of {\"context\", \"choices\", \"label\"}; instructions: the JSONL train_gpt "
                "fine-tunes on ({\"instruction\", \"input\", \"output\"}, or {\"messages\": [...]}); classify: "
                "labelled texts (CSV, TSV or JSONL, as train_gpt --task classify reads them); perplexity: any text file"),
      text_flag("columns", &o.columns,
                "classify, a file without a header row: its columns in order, e.g. label,text (a train_gpt run's "
                "own when not given)"),
      text_flag("split", &o.split,
                "classify: all of --data, or the train, val or test split a train_gpt --task classify run made of it "
                "(the run's --seed, --balance and --columns)",
                {"all", "train", "val", "test"}),
      int_flag("max-tokens", &o.max_tokens, "instructions: the longest answer, in tokens", 1, 1 << 20),
      text_flag("judge", &o.judge,
                "instructions: a model folder (a Qwen3 or Llama instruct model) that scores each answer from 0 to "
                "100 with the prompt of LLMs from scratch's chapter 7; its mean is judge_score"),
      int_flag("limit", &o.limit, "score the first N items (0 = all); perplexity: the text's first N tokens", 0, 1e12),
      int_flag("shots", &o.shots, "solved examples before each item, drawn from the same file (never the item)", 0,
               1000),
      seed_flag(&o.seed, "seed of the --shots draw"),
      text_flag("out", &o.out,
                "write each item's log-likelihoods as a JSON line here ({\"index\", \"loglikelihoods\", "
                "\"lengths\", \"pred\", \"pred_norm\", \"label\"})"),
      threads_flag(&o.threads),
      text_flag("dtype", &o.dtype,
                "a Llama / Qwen folder's weights: auto keeps a BF16 or F16 file's matrices 16-bit (half the memory, "
                "the same log-likelihoods), float32 widens them", {"auto", "float32"}),
      text_flag("quantize", &o.quantize,
                "int8: every matrix int8 with one scale per 32 weights of a row, made at load time (nn/quantize.h); "
                "the judge's too", {"none", "int8"}),
  };
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string clock_text(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return text;
}

// The bar on stderr, redrawn in place: items done, accuracy so far, tokens/s, time left.
void draw_progress(int64_t done, int64_t total, int64_t correct, double tokens_per_s, double elapsed,
                   const char* measure = "acc") {
  const int width = 24, filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
  const double left = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  const std::string speed = tokens_per_s > 0 ? " | " + std::to_string(static_cast<long>(tokens_per_s)) + " tok/s" : "";
  std::fprintf(stderr, "\r  %lld/%lld [%s%s] %s %.4f%s | ETA %s   ", (long long)done, (long long)total,
               std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), measure,
               done > 0 ? static_cast<double>(correct) / static_cast<double>(done) : 0.0, speed.c_str(),
               clock_text(left).c_str());
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

json::Writer item_line(int64_t index, const train::ItemScore& s) {
  json::Writer lls = json::Writer::array(), lengths = json::Writer::array();
  for (double ll : s.loglikelihoods) lls.item(ll);
  for (int64_t n : s.lengths) lengths.item(n);
  json::Writer line;
  line.field("index", index).field("loglikelihoods", lls).field("lengths", lengths);
  line.field("pred", s.pred).field("pred_norm", s.pred_norm).field("label", s.label);
  return line;
}

// --task instructions: each example's greedy answer, its exact match and F1 against the reference
// (train/answer_scores.h), and with --judge the judge's score.
int run_instructions(const EvaluateOptions& o) {
  const std::string text = train::read_input(o.data, "--data");
  const std::string format = train::example_format(text);
  models::SavedModel loaded = models::load_saved_model(o.ckpt, models::weights_dtype_from_flag(o.dtype));
  if (o.quantize == "int8") nn::quantize_int8_(*loaded.model);
  const tokenizers::Tokenizer& tokenizer = loaded.the_tokenizer(o.ckpt);
  const train::AnswerExamples read = train::read_answer_examples(format, text, o.data, tokenizer);
  std::optional<models::SavedModel> judge;
  std::optional<models::ChatSession> session;
  if (!o.judge.empty()) {
    judge = models::load_saved_model(o.judge, models::weights_dtype_from_flag(o.dtype));
    if (o.quantize == "int8") nn::quantize_int8_(*judge->model);
    const tokenizers::Tokenizer& judge_tokenizer = judge->the_tokenizer(o.judge);
    tokenizers::ChatSetup setup = tokenizers::chat_setup(judge_tokenizer, "", "--judge " + o.judge);
    setup.options.enable_thinking = false;  // the number alone
    session.emplace(*judge->model, judge_tokenizer, setup.format, setup.options,
                    models::SamplingOptions{.temperature = 0}, 16);
  }
  const int64_t total = o.limit > 0 ? std::min<int64_t>(o.limit, std::ssize(read.examples)) : std::ssize(read.examples);
  const bool terminal = isatty(STDERR_FILENO) != 0;
  const Activity answering("answering " + o.data);
  loaded.model->eval();
  std::vector<double> matches, f1s, judged;
  std::vector<json::Writer> lines;
  int64_t unparsed = 0, too_long_for_judge = 0;
  Generator gen(static_cast<uint64_t>(o.seed));  // greedy: never drawn from
  const double start = now_s();
  for (int64_t i = 0; i < total; ++i) {
    const train::AnswerExample& e = read.examples[static_cast<size_t>(i)];
    const std::string answer = train::greedy_answer(*loaded.model, tokenizer, e.prompt, o.max_tokens, read.end_token);
    matches.push_back(train::exact_match(answer, e.reference));
    f1s.push_back(train::token_f1(answer, e.reference));
    json::Writer line;
    line.field("index", i).field("line", e.line).field("answer", answer).field("reference", e.reference);
    line.field("exact_match", matches.back()).field("f1", f1s.back());
    if (session) {
      session->reset();
      std::optional<std::string> reply;  // none: the prompt does not fit the judge's context
      try {
        reply = train::replacing_invalid_utf8(
            session->reply(train::judge_prompt(e.judge_input, e.reference, answer), gen));
      } catch (const models::ChatTurnTooLong& too_long) {
        ++too_long_for_judge;
      } catch (const models::ChatTurnDropped& dropped) {
        throw Error("--judge " + o.judge + ": " + o.data + ": line " + std::to_string(e.line) + ": the judge cannot read "
                    "the prompt: " + dropped.reason);
      }
      const std::optional<int64_t> score = reply ? train::judge_score(*reply) : std::nullopt;
      if (score) judged.push_back(static_cast<double>(*score));
      else ++unparsed;
      line.field("judge_score", score ? std::optional<double>(static_cast<double>(*score)) : std::nullopt);
      if (reply) line.field("judge_reply", *reply);
      else line.field("judge_reply", nullptr);
    }
    lines.push_back(std::move(line));
    if (terminal) {
      const double elapsed = now_s() - start;
      draw_progress(i + 1, total, static_cast<int64_t>(train::mean_of(matches) * static_cast<double>(i + 1) + 0.5), 0,
                    elapsed, "exact match");
    }
  }
  const double elapsed = now_s() - start;
  if (too_long_for_judge > 0)
    std::cerr << "evaluate: note: " << too_long_for_judge << " of " << total << " judge prompts did not fit --judge "
              << o.judge << "'s context: counted as unparsed\n";
  if (!o.out.empty()) {
    AtomicFile file(o.out, "evaluate --out");
    for (const json::Writer& line : lines) file.write(line.str() + "\n");
    file.commit();
  }
  json::Writer summary;
  summary.field("task", o.task).field("items", total).field("exact_match", train::mean_of(matches));
  summary.field("exact_match_stderr", train::mean_stderr(matches)).field("f1", train::mean_of(f1s));
  summary.field("f1_stderr", train::mean_stderr(f1s));
  if (session) {
    summary.field("judge_score", judged.empty() ? std::nullopt : std::optional<double>(train::mean_of(judged)));
    summary.field("judge_score_stderr", train::mean_stderr(judged)).field("judge_unparsed", unparsed);
  }
  summary.field("items_per_s", json::round_to(elapsed > 0 ? static_cast<double>(total) / elapsed : 0.0, 2));
  std::cout << summary.str() << std::endl;
  return 0;
}

// --task classify: a classifier's accuracy on labelled texts, with the confusion matrix (rows: the
// label, columns: the class predicted).
int run_classify(const EvaluateOptions& o, const std::vector<std::string>& given) {
  for (const char* flag : {"shots", "judge", "max-tokens"})
    if (was_given(given, flag)) throw UsageError(std::string("--") + flag + " does not go with --task classify");
  const std::string text = train::read_input(o.data, "--data");
  models::SavedClassifier loaded = models::load_saved_classifier(o.ckpt, models::weights_dtype_from_flag(o.dtype));
  if (o.quantize == "int8") nn::quantize_int8_(*loaded.model);
  if (!loaded.tokenizer) throw UsageError("--task classify: " + o.ckpt + " has no tokenizer.json to read the texts with");
  const bool run = std::filesystem::exists(std::filesystem::path(o.ckpt) / "optimizer.safetensors");
  const std::optional<train::TrainOptions> saved = run ? std::optional(train::saved_options(o.ckpt)) : std::nullopt;
  if (o.split != "all" && !(saved && train::is_classification(*saved)))
    throw UsageError("--split " + o.split + ": " + o.ckpt + " is no train_gpt --task classify run, whose split to remake; "
                     "leave --split out to score all of --data");
  const std::string columns = was_given(given, "columns") || !saved ? o.columns : saved->columns;
  const std::vector<std::string> column_list = train::parse_columns(columns);
  std::vector<train::ClassificationExample> examples;
  const auto& classes = loaded.config.id2label;
  if (o.split == "all") {
    examples = train::encode_labelled(train::parse_labelled_text(text, o.data, column_list), classes, *loaded.tokenizer,
                                      loaded.context, o.data);
  } else {
    const train::ClassificationData data = train::load_classification_data(
        text, o.data, column_list, saved->balance, static_cast<uint64_t>(saved->seed), *loaded.tokenizer, loaded.context,
        {saved->val_data, saved->test_data});
    if (data.classes != classes)
      throw Error(o.data + ": its classes differ from " + o.ckpt + "'s id2label: not the file the run was trained on");
    examples = o.split == "train" ? data.train : o.split == "val" ? data.val : data.test;
  }
  if (o.limit > 0 && std::ssize(examples) > o.limit) examples.resize(static_cast<size_t>(o.limit));
  if (examples.empty()) throw Error(o.data + ": no labelled text to score");
  const Activity scoring("classifying " + o.data);
  const int64_t pad_id = std::max<int64_t>(0, loaded.config.pad_token_id);
  const double start = now_s();
  // a run's own --batch, so that its texts are padded as the run padded them (its summary.json's figure)
  const train::ClassifierEval e = train::evaluate_classifier(*loaded.model, examples, saved ? saved->batch : 8, pad_id);
  const double elapsed = now_s() - start;
  if (!o.out.empty()) {  // each text's label and the class it was given, with every class's probability
    AtomicFile file(o.out, "evaluate --out");
    for (size_t i = 0; i < examples.size(); ++i) {
      const std::vector<double> p = models::class_probabilities(*loaded.model, examples[i].ids);
      json::Writer probabilities = json::Writer::array();
      for (double v : p) probabilities.item(v);
      json::Writer line;
      line.field("index", static_cast<int64_t>(i)).field("line", examples[i].line);
      line.field("label", classes[static_cast<size_t>(examples[i].label)]);
      line.field("pred", classes[static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin())]);
      line.field("probabilities", probabilities);
      file.write(line.str() + "\n");
    }
    file.commit();
  }
  std::printf("evaluate: %s (%s): acc %.4f, loss %.4f on %lld texts; rows: the label, columns: the class given\n",
              o.data.c_str(), o.split.c_str(), e.acc, e.loss, static_cast<long long>(e.examples));
  size_t width = 5;
  for (const std::string& c : classes) width = std::max(width, c.size());
  std::printf("  %*s", static_cast<int>(width), "");
  for (const std::string& c : classes) std::printf(" %*s", static_cast<int>(width), c.c_str());
  std::printf("\n");
  json::Writer confusion = json::Writer::array(), labels = json::Writer::array();
  for (size_t r = 0; r < classes.size(); ++r) {
    std::printf("  %*s", static_cast<int>(width), classes[r].c_str());
    json::Writer row = json::Writer::array();
    for (int64_t n : e.confusion[r]) {
      std::printf(" %*lld", static_cast<int>(width), static_cast<long long>(n));
      row.item(n);
    }
    std::printf("\n");
    confusion.item(row);
    labels.item(classes[r]);
  }
  std::vector<double> right;
  for (size_t r = 0; r < classes.size(); ++r)
    for (size_t c = 0; c < classes.size(); ++c) right.insert(right.end(), static_cast<size_t>(e.confusion[r][c]), r == c ? 1.0 : 0.0);
  json::Writer summary;
  summary.field("task", o.task).field("split", o.split).field("items", e.examples).field("acc", e.acc);
  summary.field("acc_stderr", train::mean_stderr(right)).field("loss", e.loss).field("labels", labels);
  summary.field("confusion", confusion);
  summary.field("items_per_s", json::round_to(elapsed > 0 ? static_cast<double>(e.examples) / elapsed : 0.0, 2));
  std::cout << summary.str() << std::endl;
  return 0;
}

// --task perplexity: the model's loss on every token of a text but the first (train/evaluate.h:
// evaluate_text, in windows of the model's context, at most 1,024 positions, one after another):
//   loss = the mean of -log p(token | the tokens before it in its window), in nats
//   perplexity = exp(loss)        bits_per_byte = the summed loss / ln 2 / the text's bytes
// Bits per byte compare models with different tokenizers; perplexity only models that share one.
int run_perplexity(const EvaluateOptions& o) {
  const std::string text = train::read_input(o.data, "--data");
  models::SavedModel loaded = models::load_saved_model(o.ckpt, models::weights_dtype_from_flag(o.dtype));
  if (o.quantize == "int8") nn::quantize_int8_(*loaded.model);
  const tokenizers::Tokenizer& tokenizer = loaded.the_tokenizer(o.ckpt);
  std::vector<int64_t> ids;
  try {
    ids = tokenizer.encode(text);
  } catch (const Error& e) {  // a character a character-level run's vocabulary lacks
    throw Error("--data " + o.data + ": " + e.what());
  }
  if (o.limit > 0 && std::ssize(ids) > o.limit) ids.resize(static_cast<size_t>(o.limit));
  if (ids.size() < 2)
    throw UsageError("--data " + o.data + ": " + std::to_string(ids.size()) +
                     " token(s); perplexity needs at least 2 (each token is predicted from those before it)");
  const int64_t window = std::min<int64_t>(1024, loaded.model->context_length());
  const double start = now_s();
  const train::TextEval e = [&] {
    const Activity scoring("scoring " + o.data);
    return train::evaluate_text(*loaded.model, tokenizer, ids, 1, window);
  }();
  const double elapsed = now_s() - start;
  if (!std::isfinite(e.loss))  // JSON has no inf or nan
    throw Error("--task perplexity: the loss on " + o.data + " is " + nn::python_float(e.loss) + ": " + o.ckpt +
                "'s outputs overflow on this text");
  json::Writer summary;
  summary.field("task", o.task).field("tokens", e.tokens).field("bytes", e.bytes).field("loss", e.loss);
  summary.field("perplexity", e.perplexity).field("bits_per_byte", e.bpb);
  summary.field("tokens_per_s", json::round_to(elapsed > 0 ? static_cast<double>(e.tokens) / elapsed : 0.0, 1));
  std::cout << summary.str() << std::endl;
  return 0;
}

int run(const EvaluateOptions& o, const std::vector<std::string>& given) {
  require_names(given, {{"ckpt", o.ckpt}, {"data", o.data}, {"out", o.out}, {"judge", o.judge}});
  if (o.ckpt.empty()) throw UsageError("--ckpt: give the model's folder");
  if (o.task.empty()) throw UsageError("--task: give hellaswag, arc, mmlu, choices, instructions, classify or perplexity");
  if (o.task != "classify")
    for (const char* flag : {"columns", "split"})
      if (was_given(given, flag)) throw UsageError(std::string("--") + flag + " goes with --task classify");
  if (o.data.empty()) throw UsageError("--data: give the task's file");
  if (o.task != "instructions")
    for (const char* flag : {"judge", "max-tokens"})
      if (was_given(given, flag)) throw UsageError(std::string("--") + flag + " goes with --task instructions");
  if (o.task == "instructions" && was_given(given, "shots"))
    throw UsageError("--shots goes with the multiple-choice tasks (hellaswag, arc, mmlu, choices)");
  if (o.threads > 0) set_num_threads(static_cast<int>(o.threads));
  if (o.task == "instructions") return run_instructions(o);
  if (o.task == "classify") return run_classify(o, given);
  if (o.task == "perplexity") {
    for (const char* flag : {"shots", "out"})
      if (was_given(given, flag)) throw UsageError(std::string("--") + flag + " does not go with --task perplexity");
    return run_perplexity(o);
  }
  const train::TaskFormat format = train::task_format_from_name(o.task);
  const std::vector<train::ChoiceItem> items = train::read_task(format, o.data);  // bad data: before the model loads
  models::SavedModel loaded = models::load_saved_model(o.ckpt, models::weights_dtype_from_flag(o.dtype));
  if (o.quantize == "int8") nn::quantize_int8_(*loaded.model);
  const tokenizers::Tokenizer& tokenizer = loaded.the_tokenizer(o.ckpt);
  const int64_t total = o.limit > 0 ? std::min<int64_t>(o.limit, static_cast<int64_t>(items.size()))
                                    : static_cast<int64_t>(items.size());
  const bool terminal = isatty(STDERR_FILENO) != 0;
  const Activity scoring("scoring " + o.data);
  std::vector<train::ItemScore> scores;
  int64_t tokens = 0, correct = 0;
  const double start = now_s();
  double last_draw = -1;
  for (int64_t i = 0; i < total; ++i) {
    const train::ChoiceItem& item = items[static_cast<size_t>(i)];
    const std::string context = train::item_context(items, static_cast<size_t>(i), o.shots, static_cast<uint64_t>(o.seed));
    std::vector<double> lls;
    try {
      lls = train::choice_loglikelihoods(*loaded.model, train::encode_choices(tokenizer, context, item.choices), &tokens);
    } catch (const Error& e) {
      throw Error(o.data + ": line " + std::to_string(item.line) + ": " + e.what());
    }
    scores.push_back(train::score_item(std::move(lls), item.choices, item.label));
    correct += scores.back().pred == scores.back().label;
    const double elapsed = now_s() - start;
    if (terminal && (elapsed - last_draw > 0.2 || i + 1 == total)) {
      last_draw = elapsed;
      draw_progress(i + 1, total, correct, elapsed > 0 ? static_cast<double>(tokens) / elapsed : 0, elapsed);
    }
  }
  const double elapsed = now_s() - start;
  if (!o.out.empty()) {
    AtomicFile file(o.out, "evaluate --out");
    for (size_t i = 0; i < scores.size(); ++i) file.write(item_line(static_cast<int64_t>(i), scores[i]).str() + "\n");
    file.commit();
  }
  const train::TaskScore t = train::summarize(scores);
  json::Writer summary;
  summary.field("task", o.task).field("items", t.items).field("acc", t.acc).field("acc_stderr", t.acc_stderr);
  summary.field("acc_norm", t.acc_norm).field("acc_norm_stderr", t.acc_norm_stderr);
  summary.field("tokens_per_s", json::round_to(elapsed > 0 ? static_cast<double>(tokens) / elapsed : 0.0, 1));
  std::cout << summary.str() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  EvaluateOptions o;
  std::vector<std::string> given;
  return run_program({"evaluate",
                      "Scores a model on a multiple-choice data set (HellaSwag, ARC, MMLU or a JSONL of choices) by "
                      "log-likelihood, as lm-evaluation-harness does: acc and acc_norm.",
                      evaluate_flags(o)},
                     argc, argv, [&] { return run(o, given); }, &given);
}
