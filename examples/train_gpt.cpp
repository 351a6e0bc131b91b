// examples/train_gpt.cpp — train a small GPT on text and watch it learn to write.
//
//   ./build/examples/train_gpt                      the built-in corpus, defaults that take about
//                                                   30 s on 2 cores
//   ./build/examples/train_gpt --data input.txt --steps 5000 --out runs/shakespeare
//   ./build/examples/train_gpt --resume runs/shakespeare --steps 8000    continue a run
//   ./build/examples/train_gpt --arch qwen3 --kv-heads 2 --out qwen_run    today's blocks (models/llama.h);
//                                                   the folder is a Hugging Face Qwen3 folder
//   ./build/examples/train_gpt --init-from gpt2 --data input.txt --steps 200   fine-tune GPT-2
//   ./build/examples/train_gpt --init-from gpt2 --data examples/data/instructions.jsonl --steps 200
//                                                   instruction fine-tuning (train/instructions.h)
//   ./build/examples/train_gpt --init-from gpt2 --data chats.jsonl --steps 200     conversations, the loss on
//                                                   the assistant's turns (train/chat_data.h)
//   ./build/examples/train_gpt --init-from gpt2 --data input.txt --lora-rank 8 --lora-targets attn,mlp --out lora_run
//                                                   LoRA: adapters alone train (models/lora/gpt_lora.h; from a
//                                                   Llama / Qwen folder: models/lora/llama_lora.h)
//   ./build/examples/train_gpt --resume lora_run --merge-lora merged     the adapters merged into a GPT-2 folder
//   ./build/examples/train_gpt --init-from gpt2 --task classify --data sms.tsv --columns label,text --balance
//                                                   a classifier of labelled texts (the book's chapter 6:
//                                                   models/sequence_classification.h)
//
// The loop is train/trainer.h (the same steps as examples/pytorch/train_gpt.py); the run
// folder is train/run_folder.h, plus loss.csv, loss.svg, samples.txt and summary.json.
// Ctrl-C saves a checkpoint, then stops.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/user_file.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "train/evaluate.h"
#include "train/corpus.h"
#include "train/chat_data.h"
#include "train/classification_data.h"
#include "train/instructions.h"
#include "train/multiple_choice.h"
#include "train/run_log.h"
#include "train/train_loop.h"
#include "train/trainer.h"
#include "models/generation/generate.h"
#include "models/hf/hf_gpt2.h"
#include "models/hf/hf_llama.h"
#include "models/lora/lora_adapters.h"

using namespace tg;

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) { g_interrupted = 1; }

// train_gpt's flags: the run's options (train/options.h: each flag's name, field and range), each
// with its help, in --help's order.
std::vector<Flag> train_flags(train::TrainOptions& o) {
  static const std::map<std::string, std::string> help = {
    {"steps", "training steps in all: with --resume, the run trains until it has done this many (the total, as "
              "examples/pytorch/tapegrad_run.py train --steps; its --more-steps N counts N beyond the run's); a "
              "resumed run given another total goes on from the learning rate it had reached, its cosine decay "
              "stretched (or squeezed) to end at --min-lr at the new --steps, and says so (--decay-start, "
              "--decay-lr); the same total continues bit for bit"},
    {"max-minutes", "stop after the step that spends this much training time (a resumed run's earlier time counts); "
                    "0 = no limit"},
    {"batch", "sequences per batch (per micro-batch with --grad-accum; jsonl, chat: examples, padded to the "
              "longest)"},
    {"grad-accum", "micro-batches of --batch sequences per step, their gradients averaged (= --batch N*B, in less "
                   "memory; jsonl, chat: the mean over all their response tokens)"},
    {"context", "tokens per sequence (the model's context_length; jsonl, chat: at most, longer examples are "
                "skipped)"},
    {"emb-dim", "embedding width"},
    {"heads", "attention heads (must divide --emb-dim)"},
    {"layers", "transformer blocks"},
    {"arch", "the model of a run from scratch: gpt2 (GPT-2's blocks: LayerNorm, learned positions, GELU), llama "
             "(RMSNorm, RoPE, a SwiGLU feed-forward of width 8/3 --emb-dim, grouped-query attention), qwen2 (llama's "
             "with biases on q, k and v) or qwen3 (llama's with the QK-norm); the run's folder is a Hugging Face "
             "folder of that model_type (a run from --init-from has the folder's)"},
    {"kv-heads", "llama, qwen2, qwen3: key/value heads of grouped-query attention, dividing --heads (not given: "
                 "--heads)"},
    {"dropout", "dropout rate in [0, 1) (llama, qwen2, qwen3: on the attention weights alone, their "
                "attention_dropout)"},
    {"tie-weights", "the output layer's weight is the token embedding (GPT-2's; a Llama's tie_word_embeddings)"},
    {"lr", "peak learning rate (AdamW)"},
    {"min-lr", "learning rate at the end of the cosine decay"},
    {"lr-schedule", "constant, or linear warmup to --lr then cosine decay to --min-lr at --steps"},
    {"warmup", "warmup steps of the cosine schedule (when not given: 50, at most --steps / 10)"},
    {"decay-start", "the step the cosine decay starts at, the rate held at --lr from the warmup's end until then "
                    "(0: at the warmup's end); a run resumed with another --steps sets it to the step it resumes at"},
    {"decay-lr", "the rate the cosine decay starts from at --decay-start (below 0: --lr); a run resumed with "
                 "another --steps sets it to the rate it had reached, so the rate goes on without a jump"},
    {"weight-decay", "AdamW weight decay (matrices and embeddings only)"},
    {"grad-clip", "clip the gradients' total norm to this (0 = off)"},
    {"on-nonfinite", "a step whose loss or gradient norm is inf or nan: stop with an error, or skip its update"},
    {"precision", "matrix products in float32, or with bfloat16 inputs and float32 sums (mixed precision; may "
                  "change when resuming)"},
    {"dtype", "a Llama / Qwen --init-from folder's frozen weights (a LoRA run's base, a classifier's body below --train-layers "
              "last, --eval-only's model): auto "
              "keeps a BF16 or F16 file's matrices 16-bit (half the memory, the same numbers), float32 widens them; "
              "trained weights are float32 either way (may change when resuming)"},
    {"checkpoint-activations", "what the blocks recompute in backward instead of keeping: nothing, every block (keeps only each "
                               "block's input), or the feed-forward's pre-activation (ffn); the same numbers bit for bit, less "
                               "memory, more time (may change when resuming)"},
    {"loss-chunk", "compute the output layer and the loss this many rows (tokens) at a time, making each chunk's "
                   "logits again in backward: the batch's (tokens x vocabulary) logits are never whole in memory; "
                   "the same loss to rounding (0 = in one piece; may change when resuming)"},
    {"seed", "seed of the model's initialisation (a LoRA run's: its adapters'), dropout and batches"},
    {"eval-every", "evaluate and save a checkpoint every this many steps, and after the last (when not given: 250, "
                   "at most --steps / 5; a resumed run keeps its saved value)"},
    {"eval-batches", "batches per split in each evaluation"},
    {"eval-task", "FORMAT:FILE: score a multiple-choice task at each evaluation, as evaluate does (FORMAT hellaswag, "
                  "arc, mmlu or choices; zero shots), into loss.csv's task_acc and task_acc_norm (e.g. "
                  "choices:examples/data/stories_choices.jsonl, a task on the built-in corpus)"},
    {"eval-task-limit", "score the task's first N items (0 = all)"},
    {"threads", "threads for matrix products and loops (0 = all cores)"},
    {"out", "folder for the checkpoint, loss.csv, loss.svg, samples and summary (with --resume: the run's own "
            "folder when not given)"},
    {"resume", "continue the run saved in this folder, with the flags in its config.json (only "},  // + the list
    {"data", "a text file to train on (default: the built-in corpus)"},
    {"data-format", "text; jsonl: --data holds instruction examples, one {\"instruction\", \"input\", \"output\"} "
                    "object a line (\"input\" may be left out), formatted with the Alpaca template; or chat: "
                    "conversations, one {\"messages\": [{\"role\", \"content\"}, ...]} a line, rendered with the "
                    "tokenizer's chat template (tapegrad's own for char, bpe and GPT-2); the loss counts only the "
                    "responses (the assistant turns); the first 90% of the examples train, the rest validate; examples "
                    "of over --context + 1 tokens are skipped (when not given: jsonl for a --data FILE.jsonl, chat when "
                    "its first line has \"messages\", else text)"},
    {"tokenizer", "char (the text's characters), bpe (byte-level BPE learned from the training split), or a path: "
                  "a tokenizer.json, or a folder with one or with GPT-2's vocab.json and merges.txt (--init-from's "
                  "by default; a folder with a tokenizer.json and GPT-2's files it does not name is refused)"},
    {"task", "lm: learn to write --data (the next token); classify: --data holds labelled texts (a CSV or TSV "
             "whose header row names a text and a label column, a file without one read by --columns, or a JSONL of "
             "{\"text\", \"label\"}), split 70/10/20 with --seed, and the model becomes a classifier: a linear head "
             "on the last token's hidden state (a Hugging Face *ForSequenceClassification folder); loss.csv gets "
             "train_acc and val_acc, summary.json the test split's accuracy"},
    {"columns", "--task classify, a file without a header row: its columns in order, e.g. label,text for the SMS "
                "Spam Collection's \"ham<TAB>text\" lines (other names: columns skipped)"},
    {"val-data", "--task classify: the validation split's file (with --test-data; then --data trains whole, and "
                 "the classes are the three files' labels)"},
    {"test-data", "--task classify: the test split's file (with --val-data)"},
    {"balance", "--task classify: cut every class down to the smallest one's count, a random subset of each, before "
                "the split (the book undersamples the larger class)"},
    {"train-layers", "--task classify: the body weights that train beside the head: all, last (the last block and the "
                     "final norm, as the book trains GPT-2) or lora (--lora-rank's adapters; the run saves them and the "
                     "head in peft's files, task_type SEQ_CLS) (when not given: lora with --lora-rank, last with "
                     "--init-from, else all)"},
    {"init-from", "start from the weights of a Hugging Face folder: GPT-2's (config.json, model.safetensors), or a "
                  "Llama, Qwen2 or Qwen3 one (model.safetensors or its shards), with its tokenizer; not given: "
                  "--context 256 (at most the model's), --batch 4, --lr 1e-4, --min-lr 1e-5, --dropout as its "
                  "config.json"},
    {"vocab-size", "BPE's vocabulary: 256 bytes + merges (--tokenizer bpe)"},
    {"sample-tokens", "tokens (characters, or BPE tokens) to write in each sample at the end (jsonl, chat: answers "
                      "to the first 3 val examples' prompts)"},
    {"write-corpus", "write the built-in corpus to this file and stop"},
    {"eval-only", "print a saved model's loss, perplexity and bits per byte, and stop: with --resume RUN, on the "
                  "run's val split or on all of --data FILE; with --init-from DIR (a Hugging Face GPT-2, Llama or "
                  "Qwen folder), on all of --data FILE (jsonl, chat: on the responses' tokens); with the run's "
                  "--eval-task or one given, its task_acc and task_acc_norm too"},
    {"lora-rank", "with --init-from: train LoRA adapters of this rank (at least 1, at most the smallest adapted "
                  "matrix's min(in, out), past which a rank adds nothing) and freeze every weight of the model; the run saves the adapters alone, adapters.safetensors and adapter_config.json in peft's "
                  "names, and reads its base model from the --init-from folder (not given: every weight trains)"},
    {"lora-alpha", "the adapters' update B A is scaled by alpha / rank (not given: alpha = rank, a scale of 1, as "
                   "peft's defaults r = lora_alpha = 8)"},
    {"lora-targets", "which Linears get adapters: attn (the attention's q, k, v and output: GPT-2's c_attn and "
                     "attn.c_proj, a Llama's q_proj, k_proj, v_proj and o_proj), mlp (GPT-2's c_fc and mlp.c_proj, a "
                     "Llama's gate_proj, up_proj and down_proj), or attn,mlp"},
    {"merge-lora", "with --resume RUN (a LoRA run): write its base model with the adapters merged in (W + "
                   "alpha/rank B A) to this folder, a Hugging Face folder like the base (GPT-2 in its layout, or "
                   "the Llama / Qwen model_type) with the tokenizer, and stop; a folder that holds a model already is "
                   "refused unless --overwrite"},
    {"overwrite", "with --merge-lora DIR: replace the model DIR holds (its model files, shards and index included; "
                  "its other files stay)"},
  };
  std::vector<Flag> flags = train::option_fields(o);
  for (Flag& flag : flags) flag.help = help.at(flag.name);  // every option has its line (a test runs --help)
  for (Flag& flag : flags)
    if (flag.name == "resume") flag.help += train::resumable_flag_list() + " may change)";
  return flags;
}

// The text --eval-only reads: all of --data when given, else the saved run's val split (of its
// own --data, or the built-in corpus), cut where the run cut it (trainer.h).
std::vector<int64_t> eval_ids(const train::TrainOptions& o, const std::vector<std::string>& given, const tokenizers::Tokenizer& tokenizer,
                              std::string* label) {
  if (std::find(given.begin(), given.end(), "data") != given.end()) {
    *label = o.data;
    const std::string text = train::read_data(o.data);
    try {
      return tokenizer.encode(text);
    } catch (const tg::Error& e) {  // a character the run's vocabulary lacks
      throw tg::Error("--data " + o.data + ": " + e.what());
    }
  }
  const train::TrainOptions saved = train::saved_options(o.resume);
  const std::string text = train::read_data(saved.data);
  *label = "the val split of " + (saved.data.empty() ? std::string("the built-in corpus") : saved.data);
  if (tokenizer.type() != std::string("char"))  // byte-level: cut in the bytes
    return tokenizer.encode(text.substr(static_cast<size_t>(train::train_count(std::ssize(text)))));
  const std::vector<int64_t> ids = tokenizer.encode(text);
  return {ids.begin() + train::train_count(std::ssize(ids)), ids.end()};
}

// What --eval-only scores when it is instruction examples (else nullopt: text): all the examples of
// a --data in jsonl, else a jsonl run's val split. Their responses' tokens are scored; the examples
// that do not fit the context (the run's, or the GPT-2 folder's) are skipped and counted.
std::optional<train::InstructionData> eval_instructions(const train::TrainOptions& o, const std::vector<std::string>& given,
                                                 const models::SavedModel& saved, std::string* label) {
  const bool data_given = was_given(given, "data");
  const train::TrainOptions run = o.resume.empty() ? o : train::saved_options(o.resume);
  const std::string& format = data_given ? o.data_format : run.data_format;
  if (format != "jsonl" && format != "chat") return std::nullopt;
  const int64_t context = o.resume.empty() ? saved.model->context_length() : run.model.context_length;
  const tokenizers::Tokenizer& tokenizer = *saved.tokenizer;  // eval_only checked it is there
  const std::string& file = data_given ? o.data : run.data;
  const std::string jsonl = train::read_data(file);
  train::InstructionData examples;
  if (data_given) {  // all of them
    *label = file;
    int64_t count = 0;
    train::EncodedInstructions encoded = train::encode_example_file(format, jsonl, file, tokenizer, context, &count);
    if (encoded.examples.empty())
      throw tg::Error(file + ": no example fits the context (" + std::to_string(context) + " tokens)");
    const std::string note = train::skipped_examples_note(encoded.skipped_lines, count, context);
    if (!note.empty()) std::cout << "train_gpt: " << file << ": " << note << "\n";
    examples.val = std::move(encoded.examples);
    examples.pad_id = std::max<int64_t>(0, tokenizer.end_of_text_id());
  } else {
    *label = "the val split of " + file;
    examples = train::load_example_data(format, jsonl, file, tokenizer, context);
  }
  return examples;
}

// "train_gpt: read F16 weights as float32" when a GPT-2 folder had 16-bit weights.
void say_converted(const std::vector<std::string>& dtypes, const std::string& dir) {
  std::string list;
  for (const std::string& d : dtypes) list += (list.empty() ? "" : " and ") + d;
  if (!list.empty()) std::cout << "train_gpt: " << dir << ": read its " << list << " weights as float32\n";
}

// train_gpt --eval-only --resume DIR [--data FILE], or --eval-only --init-from DIR --data FILE:
// one JSON line, then one line to read; a loss that is not finite is an error (exit 1), never a
// line JSON cannot read.
int eval_only(const train::TrainOptions& o, const std::vector<std::string>& given) {
  if (o.resume.empty() == o.init_from.empty())
    throw UsageError("--eval-only needs --resume DIR (a run) or --init-from DIR (a model folder): one of them");
  if (!o.init_from.empty() && !was_given(given, "data"))
    throw UsageError("--eval-only --init-from needs --data FILE (the text to score)");
  for (const char* flag : {"lora-rank", "lora-alpha", "lora-targets", "merge-lora"})
    if (was_given(given, flag))
      throw UsageError(std::string("--") + flag + " does not go with --eval-only (a LoRA run is scored with "
                       "--eval-only --resume RUN: its base model and adapters)");
  if (o.threads > 0) tg::set_num_threads(static_cast<int>(o.threads));
  const std::string dir = o.resume.empty() ? o.init_from : o.resume;
  models::SavedModel saved = models::load_saved_model(dir, models::weights_dtype_from_flag(o.dtype));
  say_converted(saved.converted_dtypes, dir);
  const tokenizers::Tokenizer& tokenizer = saved.the_tokenizer(dir);
  std::string label;
  // a run's windows are its --context (a fine-tune's model may take more positions), --batch at a
  // time; a folder's are its whole context (--context when given; at most 1024 positions: a
  // Qwen3's 40,960 would not fit in memory), one at a time unless --batch says more
  int64_t batch = was_given(given, "batch") ? o.batch : 1;
  int64_t window = was_given(given, "context") ? o.model.context_length : std::min<int64_t>(1024, saved.model->context_length());
  std::string task_spec = o.eval_task;  // a run's own --eval-task unless one is given
  int64_t task_limit = o.eval_task_limit;
  if (!o.resume.empty()) {
    const train::TrainOptions run = train::saved_options(o.resume);
    if (train::is_classification(run))
      throw UsageError("--eval-only: " + o.resume + " is a classifier (--task classify): score it with evaluate --ckpt " +
                       o.resume + " --task classify --data FILE");
    batch = run.batch;
    window = run.model.context_length;
    if (!was_given(given, "eval-task")) task_spec = run.eval_task;
    if (!was_given(given, "eval-task-limit")) task_limit = run.eval_task_limit;
  }
  std::optional<train::EncodedTask> task;
  if (!task_spec.empty())
    task = train::encode_task(task_spec, train::read_eval_task(task_spec), task_limit, tokenizer,
                              saved.model->context_length());
  train::TextEval e;
  if (const std::optional<train::InstructionData> examples = eval_instructions(o, given, saved, &label)) {
    e = train::evaluate_instructions(*saved.model, tokenizer, examples->val, batch, examples->pad_id);
  } else {
    e = train::evaluate_text(*saved.model, tokenizer, eval_ids(o, given, tokenizer, &label), batch, window);
  }
  // JSON has no inf or nan: finite weights whose outputs overflow are an error, not a bad line
  if (!std::isfinite(e.loss) || !std::isfinite(e.perplexity) || !std::isfinite(e.bpb))
    throw tg::Error("--eval-only: " + label + ": the loss is " + tg::nn::python_float(e.loss) + " (perplexity " +
                    tg::nn::python_float(e.perplexity) + "): not a finite number; " + dir +
                    "'s weights are finite, but its outputs overflow on this text");
  tg::json::Writer line;
  line.field("eval", label).field("loss", e.loss).field("perplexity", e.perplexity).field("bpb", e.bpb);
  line.field("tokens", e.tokens).field("bytes", e.bytes);
  std::optional<train::TaskScore> t;
  if (task) {
    t = train::score_task(*saved.model, *task);
    line.field("task", task_spec).field("task_items", t->items).field("task_acc", t->acc);
    line.field("task_acc_stderr", t->acc_stderr).field("task_acc_norm", t->acc_norm);
    line.field("task_acc_norm_stderr", t->acc_norm_stderr);
  }
  std::cout << line.str() << "\n";
  std::printf("train_gpt --eval-only: %s: loss %.4f, perplexity %.3f, %.4f bits per byte (%lld tokens, %lld bytes)\n",
              label.c_str(), e.loss, e.perplexity, e.bpb, static_cast<long long>(e.tokens),
              static_cast<long long>(e.bytes));
  if (t)
    std::printf("train_gpt --eval-only: %s: acc %.4f, acc_norm %.4f (%lld items)\n", task_spec.c_str(), t->acc,
                t->acc_norm, static_cast<long long>(t->items));
  return 0;
}

// The line a resumed run with another --steps prints when its decay is stretched
// (train::continued_schedule): the rate it goes on from, and where the decay now ends.
void say_continued_schedule(const train::TrainOptions& planned, const train::TrainOptions& now, int64_t step) {
  if (now.decay_start == planned.decay_start && now.decay_lr == planned.decay_lr) return;
  const std::string kept = " (no jump; config.json keeps it as decay-start " + std::to_string(now.decay_start) +
                           ", decay-lr " + tg::nn::python_float(now.decay_lr) + ")\n";
  std::cout << "train_gpt: --steps " << now.steps << " where the run planned " << planned.steps << ": ";
  if (step >= planned.steps) {  // the decay had ended: the rate is --min-lr
    std::cout << "the learning rate stays at --min-lr " << tg::nn::python_float(now.min_lr)
              << ", where the run's cosine decay ended" << kept;
    return;
  }
  std::cout << "the learning rate goes on from " << tg::nn::python_float(now.decay_lr) << " at step " << step
            << ", its cosine decay now ending at --min-lr " << tg::nn::python_float(now.min_lr) << " at step "
            << now.steps << kept;
}

// The run to train: the one saved in --resume (its loss.csv so far into log), or a fresh one from
// scratch or from a GPT-2 folder (--init-from). o becomes the run's options.
std::unique_ptr<train::Trainer> start_or_resume(train::TrainOptions& o, const std::vector<std::string>& given,
                                                train::RunLog& log) {
  if (!o.resume.empty()) {
    const train::TrainOptions planned = train::saved_options(o.resume);
    o = train::resumed_options(planned, o, given);
    std::unique_ptr<train::Trainer> trainer;
    try {
      trainer = resume_trainer(o.resume, o, train::read_data(o.data));
    } catch (const tg::Error& e) {  // a value the run's config.json gave, not this command line: named as its field
      if (const std::optional<std::string> named = train::naming_saved_fields(e.what(), o.resume, given))
        throw tg::Error(*named);
      throw;
    }
    trainer->continue_schedule(planned);  // another --steps: the rate goes on from where it was
    say_continued_schedule(planned, trainer->options(), trainer->step());
    o = trainer->options();
    std::string no_log;  // a folder whose save was cut short before loss.csv: said, and resumed
    log = train::RunLog::read_for_resume(o.resume, trainer->step(), &no_log);
    if (!no_log.empty()) std::cout << no_log << "\n";
    return trainer;
  }
  train::check_fresh_run(o, given);  // the flags against each other, and the defaults that follow from them
  const Activity building("building the model");
  if (o.init_from.empty()) return std::make_unique<train::Trainer>(o, train::read_data(o.data));
  std::vector<std::string> converted;  // a fresh run from a Hugging Face folder
  auto trainer = train::start_from_folder(o, given, &converted);
  say_converted(converted, o.init_from);
  return trainer;
}

// The lines before the first step: the kernels, LoRA's adapters, the model and the run's shape, the
// instruction examples. kernels: "fast kernels, fp32" (train::kernels_mode, precision_mode).
void say_what_runs(train::Trainer& trainer, const train::TrainOptions& o, const std::string& kernels_in_use,
                   const std::string& kernels) {
  std::cout << "train_gpt: " << kernels_in_use << "\n";
  if (const std::optional<models::AdapterConfig>& lora = trainer.origin.lora) {
    int64_t trained = 0;
    for (const auto& [name, p] : tg::nn::trainable_parameters(trainer.model())) trained += p.numel();
    std::cout << "train_gpt: LoRA r=" << lora->lora.r << ", alpha=" << tg::nn::python_float(lora->lora.alpha) << " on "
              << tg::models::lora_targets(lora->lora) << ": " << trained << " of the " << trainer.model().num_parameters()
              << " parameters train; the base model is " << lora->base << "\n";
  }
  const bool examples = trainer.instructions() != nullptr;
  std::cout << "train_gpt: " << trainer.model().num_parameters() << " parameters, vocabulary of "
            << trainer.tokenizer().vocab_size()
            << (trainer.tokenizer().type() == std::string("char") ? " characters, " : " BPE tokens, ") << o.steps
            << " steps of " << o.batch << (examples ? " examples (at most " : " x ") << o.model.context_length
            << " tokens" << (examples ? ")" : "")
            << (o.grad_accum > 1 ? " x " + std::to_string(o.grad_accum) + " micro-batches" : std::string()) << ", "
            << kernels << "; writing to " << o.out << "/\n";
  if (const std::string note = train::bf16_speed_note(o.precision); !note.empty()) std::cout << note << "\n";
  if (const train::ClassificationData* data = trainer.classification()) {
    int64_t trained = 0;
    for (const auto& [name, p] : tg::nn::trainable_parameters(trainer.trained_model())) trained += p.numel();
    std::string classes;
    for (const std::string& c : data->classes) classes += (classes.empty() ? "" : ", ") + tg::json::quote(c);
    std::cout << "train_gpt: " << o.data << ": " << data->train.size() << " training, " << data->val.size()
              << " validation and " << data->test.size() << " test texts of " << data->classes.size() << " classes ("
              << classes << "); a head on the last token, " << trained << " of the "
              << trainer.trained_model().num_parameters() << " parameters train (--train-layers " << o.train_layers
              << ")\n";
  }
  if (const train::InstructionData* data = trainer.instructions()) {
    std::cout << "train_gpt: " << o.data << ": " << data->train.size() << " training and " << data->val.size()
              << " validation examples; the loss counts their responses' tokens\n";
    const int64_t all = std::ssize(data->train) + std::ssize(data->val) + std::ssize(data->skipped_lines);
    const std::string note = train::skipped_examples_note(data->skipped_lines, all, o.model.context_length);
    if (!note.empty()) std::cout << "train_gpt: " << o.data << ": " << note << "\n";
  }
}

// Samples: the model writes from a newline (or, if the text has none, its first character); an
// instruction run answers the prompts of its first 3 val examples, up to the end-of-text.
std::string write_samples(train::Trainer& trainer, const train::TrainOptions& o) {
  trainer.model().eval();
  std::string samples;
  tg::Generator gen(static_cast<uint64_t>(o.seed));
  std::vector<std::vector<int64_t>> starts(3, {trainer.tokenizer().newline_or(0)});
  if (const train::InstructionData* examples = trainer.instructions()) {
    starts.clear();
    for (size_t k = 0; k < std::min<size_t>(3, examples->val.size()); ++k)
      starts.emplace_back(examples->val[k].ids.begin(), examples->val[k].ids.begin() + examples->val[k].prompt_tokens);
  }
  // an example run's samples end where a response ends: the end-of-text, or the chat template's end of turn
  int64_t stop = trainer.instructions() ? trainer.tokenizer().end_of_text_id() : -1;
  if (o.data_format == "chat")
    stop = tokenizers::chat_end_token(train::chat_training_setup(trainer.tokenizer(), o.data).format, trainer.tokenizer());
  const tg::models::SamplingOptions sampling{.temperature = 0.8, .stop_token = stop};
  for (size_t k = 0; k < starts.size(); ++k) {
    samples += "--- sample " + std::to_string(k + 1) + " ---\n" +
               models::write_text(trainer.model(), trainer.tokenizer(), starts[k], o.sample_tokens, sampling, gen) + "\n";
  }
  return samples;
}

// A classifier's end of run: the whole test split scored (loss, accuracy, confusion matrix: summary.json's
// "test"), and its first 3 texts with the class the model gives them and that class's probability
// (samples.txt).
struct TestReport {
  std::string json, line, samples;
};
TestReport test_classifier(train::Trainer& trainer) {
  const train::ClassificationData& data = *trainer.classification();
  tg::models::ModelForSequenceClassification& model = *trainer.classifier();
  const train::ClassifierEval e = train::evaluate_classifier(model, data.test, trainer.options().batch, data.pad_id);
  TestReport r;
  tg::json::Writer confusion = tg::json::Writer::array();
  for (const std::vector<int64_t>& row : e.confusion) {
    tg::json::Writer counts = tg::json::Writer::array();
    for (int64_t n : row) counts.item(n);
    confusion.item(counts);
  }
  r.json = tg::json::Writer().field("examples", e.examples).field("loss", e.loss).field("acc", e.acc)
               .field("confusion", confusion).str();
  char line[160];
  std::snprintf(line, sizeof line, "train_gpt: test split: acc %.4f, loss %.4f (%lld texts)\n", e.acc, e.loss,
                static_cast<long long>(e.examples));
  r.line = line;
  for (size_t k = 0; k < std::min<size_t>(3, data.test.size()); ++k) {
    const std::vector<double> p = models::class_probabilities(model, data.test[k].ids);
    const int64_t best = std::max_element(p.begin(), p.end()) - p.begin();
    std::snprintf(line, sizeof line, "%.4f", p[static_cast<size_t>(best)]);
    r.samples += "--- test text " + std::to_string(k + 1) + " ---\n" + trainer.tokenizer().decode(data.test[k].ids) +
                 "\nlabel " + data.classes[static_cast<size_t>(data.test[k].label)] + ", predicted " +
                 data.classes[static_cast<size_t>(best)] + " (probability " + line + ")\n";
  }
  return r;
}

// o: the flags as given; given: their names, in order.
int run(train::TrainOptions o, const std::vector<std::string>& given) {
  require_names(given, {{"resume", o.resume}, {"init-from", o.init_from}, {"out", o.out}, {"write-corpus", o.write_corpus},
                        {"merge-lora", o.merge_lora}, {"tokenizer", o.tokenizer}});
  train::infer_data_format(o, given);
  if (o.overwrite && o.merge_lora.empty())
    throw UsageError("--overwrite goes with --merge-lora DIR (it replaces a model that DIR holds)");
  if (o.eval_only) return eval_only(o, given);
  if (!o.merge_lora.empty()) {  // train_gpt --resume RUN --merge-lora OUT
    if (o.resume.empty()) throw UsageError("--merge-lora OUT needs --resume RUN (the LoRA run whose adapters to merge)");
    if (o.threads > 0) tg::set_num_threads(static_cast<int>(o.threads));
    train::save_merged_model(o.resume, o.merge_lora, o.overwrite);
    std::cout << "train_gpt: wrote " << o.merge_lora << "/: " << o.resume
              << "'s base model with its LoRA adapters merged in (a Hugging Face "
              << tg::json::parse_file(o.merge_lora + "/config.json")["model_type"].as_string() << " folder)\n";
    return 0;
  }
  if (!o.write_corpus.empty()) {  // for training the same text elsewhere (examples/pytorch)
    tg::write_file_atomically(o.write_corpus, train::builtin_corpus(), "train_gpt --write-corpus");
    std::cout << "train_gpt: wrote the built-in corpus to " << o.write_corpus << "\n";
    return 0;
  }
  std::vector<train::ChoiceItem> task_items;  // read before the model is built: a bad file is named first
  if (!o.eval_task.empty()) task_items = train::read_eval_task(o.eval_task);
  train::RunLog log;
  const std::unique_ptr<train::Trainer> trainer = start_or_resume(o, given, log);
  if (o.threads > 0) tg::set_num_threads(static_cast<int>(o.threads));
  std::optional<train::EncodedTask> task;
  if (!o.eval_task.empty())
    task = train::encode_task(o.eval_task, task_items, o.eval_task_limit, trainer->tokenizer(),
                              trainer->model().context_length());
  // asked before --out is touched: a bad TG_FAST_KERNELS, TG_BF16_KERNEL or BLIS_ARCH_TYPE stops the run there
  const std::string kernels = std::string(train::kernels_mode()) + " kernels, " + train::precision_mode(o.precision);
  const std::string kernels_in_use = tg::kernel_info();
  const OutputFolder out_folder(o.out, "--out");  // removed again if the run fails before writing into it

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  train::Progress progress(o.steps, trainer->step(), log.elapsed_s(), isatty(STDOUT_FILENO));
  say_what_runs(*trainer, o, kernels_in_use, kernels);
  switch (train::train_loop(*trainer, o, log, progress, task ? &*task : nullptr, g_interrupted)) {
    case train::LoopEnd::interrupted:
      std::cout << "\ntrain_gpt: interrupted; checkpoint saved at step " << trainer->step() << " in " << o.out
                << "/ (continue with --resume " << o.out << ")\n";
      return 130;
    case train::LoopEnd::out_of_time:
      progress.message("train_gpt: the time budget (--max-minutes " + tg::nn::python_float(o.max_minutes) +
                       ") is spent: stopped after step " + std::to_string(trainer->step()));
      break;
    case train::LoopEnd::finished:
      break;
  }
  progress.finish();
  const train::MemoryReport memory = trainer->memory_report();
  std::cout << "train_gpt: " << memory.str() << " (--checkpoint-activations " << o.checkpoint_activations
            << ", --loss-chunk " << o.loss_chunk << ")\n";
  if (trainer->classifier()) {  // a classifier: the test split, kept apart until now
    const TestReport test = test_classifier(*trainer);
    tg::write_file_atomically((std::filesystem::path(o.out) / "samples.txt").string(), test.samples, "train_gpt");
    log.write_summary(o.out, o.precision, memory.json(), test.json);
    std::cout << test.samples << test.line;
    return 0;
  }
  const std::string samples = write_samples(*trainer, o);
  tg::write_file_atomically((std::filesystem::path(o.out) / "samples.txt").string(), samples, "train_gpt");
  log.write_summary(o.out, o.precision, memory.json());
  std::cout << samples;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  train::TrainOptions o;
  std::vector<std::string> given;
  const Program program{"train_gpt",
                        "Trains a small GPT, or a Llama or Qwen model (--arch), on characters or byte-level BPE tokens, and "
                        "writes text with it; with --init-from, fine-tunes a Hugging Face GPT-2, Llama, Qwen2 or Qwen3 "
                        "folder, every weight or LoRA adapters (--lora-rank), on text, instruction examples or "
                        "conversations (--data-format).",
                        train_flags(o)};
  return run_program(program, argc, argv, [&] { return run(o, given); }, &given);
}
