// examples/evaluate.cpp — how often a model picks the right answer of a multiple-choice data set,
// scored as lm-evaluation-harness scores it: each choice's log-likelihood after the task's prompt,
// acc (the most likely choice) and acc_norm (the most likely per character).
//
//   ./build/examples/evaluate --ckpt gpt2 --task hellaswag --data hellaswag_val.jsonl
//   ./build/examples/evaluate --ckpt Qwen3-0.6B --task mmlu --data high_school_physics_test.csv --shots 5
//   ./build/examples/evaluate --ckpt gpt_run --task choices --data examples/data/choices_sample.jsonl --out items.jsonl
//
// It reads any folder generate reads (train/run_folder.h: load_saved_model): a train_gpt run, a
// Hugging Face GPT-2, Llama, Qwen2 or Qwen3 folder, float32 or 16-bit weights. The formats and
// prompts are train/task_formats.h's, the scoring train/multiple_choice.h's: the context runs once
// per item, and its choices continue from its KV cache together, as one batch.
//
// The last line of stdout is one JSON object:
//   {"task", "items", "acc", "acc_stderr", "acc_norm", "acc_norm_stderr", "tokens_per_s"}
// --out FILE writes a JSON line per item, {"index", "loglikelihoods", "lengths", "pred",
// "pred_norm", "label"}, once every item is scored (nothing when anything fails). On a terminal, a
// progress bar with the time left goes to stderr.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/io/atomic_file.h"
#include "autograd/io/flags.h"
#include "autograd/io/json.h"
#include "autograd/runtime/parallel.h"
#include "train/multiple_choice.h"
#include "train/run_folder.h"
#include "train/task_formats.h"

using namespace tg;

namespace {

struct EvaluateOptions {
  std::string ckpt, task, data, out;
  int64_t limit = 0;  // 0: every item
  int64_t shots = 0;
  int64_t seed = 1234;
  int64_t threads = 0;
};

std::vector<Flag> evaluate_flags(EvaluateOptions& o) {
  return {
      text_flag("ckpt", &o.ckpt,
                "the model: a train_gpt --out folder, or a Hugging Face GPT-2, Llama, Qwen2 or Qwen3 folder with "
                "its tokenizer"),
      text_flag("task", &o.task, "the data's format and prompt", {"hellaswag", "arc", "mmlu", "choices"}),
      text_flag("data", &o.data,
                "hellaswag: hellaswag_val.jsonl; arc: ARC's jsonl; mmlu: a subject's CSV (subject_test.csv); "
                "choices: JSONL of {\"context\", \"choices\", \"label\"}"),
      int_flag("limit", &o.limit, "score the first N items (0 = all)", 0, 1e12),
      int_flag("shots", &o.shots, "solved examples before each item, drawn from the same file (never the item)", 0,
               1000),
      seed_flag(&o.seed, "seed of the --shots draw"),
      text_flag("out", &o.out,
                "write each item's log-likelihoods as a JSON line here ({\"index\", \"loglikelihoods\", "
                "\"lengths\", \"pred\", \"pred_norm\", \"label\"})"),
      threads_flag(&o.threads),
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
void draw_progress(int64_t done, int64_t total, int64_t correct, double tokens_per_s, double elapsed) {
  const int width = 24, filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
  const double left = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  std::fprintf(stderr, "\r  %lld/%lld [%s%s] acc %.4f | %.0f tok/s | ETA %s   ", (long long)done, (long long)total,
               std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
               done > 0 ? static_cast<double>(correct) / static_cast<double>(done) : 0.0, tokens_per_s,
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

int run(const EvaluateOptions& o, const std::vector<std::string>& given) {
  require_names(given, {{"ckpt", o.ckpt}, {"data", o.data}, {"out", o.out}});
  if (o.ckpt.empty()) throw UsageError("--ckpt: give the model's folder");
  if (o.task.empty()) throw UsageError("--task: give hellaswag, arc, mmlu or choices");
  if (o.data.empty()) throw UsageError("--data: give the task's file");
  if (o.threads > 0) set_num_threads(static_cast<int>(o.threads));
  const train::TaskFormat format = train::task_format_from_name(o.task);
  const std::vector<train::ChoiceItem> items = train::read_task(format, o.data);  // bad data: before the model loads
  train::SavedModel loaded = train::load_saved_model(o.ckpt);
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
