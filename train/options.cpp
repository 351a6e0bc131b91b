// train/options.cpp — the options' fields, the flags a resumed run may change, and the policy
// of a fresh run's flags (check_fresh_run, take_folder_defaults).
#include "train/options.h"

#include <algorithm>
#include <string>
#include <vector>

#include "io/flags.h"
#include "io/user_file.h"
#include "models/lora/lora_adapters.h"
#include "nn/module.h"  // python_float
#include "train/chat_data.h"

namespace tg::train {

std::vector<Flag> option_fields(TrainOptions& o) {
  constexpr double kBig = 1e12;
  return {
      int_flag("steps", &o.steps, "", 1, kBig),
      number_flag("max-minutes", &o.max_minutes, "", 0, kBig),
      int_flag("batch", &o.batch, "", 1, 1 << 20),
      int_flag("grad-accum", &o.grad_accum, "", 1, 1 << 20),
      int_flag("context", &o.model.context_length, "", 1, 1 << 20),
      int_flag("emb-dim", &o.model.emb_dim, "", 1, 1 << 16),
      int_flag("heads", &o.model.n_heads, "", 1, 1 << 16),
      int_flag("layers", &o.model.n_layers, "", 1, 1 << 10),
      text_flag("arch", &o.arch, "", {"gpt2", "llama", "qwen2", "qwen3"}),
      int_flag("kv-heads", &o.kv_heads, "", 0, 1 << 16),
      number_flag("dropout", &o.model.drop_rate, "", 0, 0.999999),
      switch_flag("tie-weights", &o.model.tie_weights, ""),
      number_flag("lr", &o.lr, "", 0, 10),
      number_flag("min-lr", &o.min_lr, "", 0, 10),
      text_flag("lr-schedule", &o.lr_schedule, "", {"constant", "cosine"}),
      int_flag("warmup", &o.warmup, "", 0, kBig),
      int_flag("decay-start", &o.decay_start, "", 0, kBig),
      number_flag("decay-lr", &o.decay_lr, "", -1, 10),
      number_flag("weight-decay", &o.weight_decay, "", 0, 10),
      number_flag("grad-clip", &o.grad_clip, "", 0, kBig),
      text_flag("on-nonfinite", &o.on_nonfinite, "", {"error", "skip"}),
      text_flag("precision", &o.precision, "", {"fp32", "bf16"}),
      text_flag("dtype", &o.dtype, "", {"auto", "float32"}),
      text_flag("checkpoint-activations", &o.checkpoint_activations, "", {"none", "every", "ffn"}),
      int_flag("loss-chunk", &o.loss_chunk, "", 0, 1 << 30),
      seed_flag(&o.seed, ""),
      int_flag("eval-every", &o.eval_every, "", 1, kBig),
      int_flag("eval-batches", &o.eval_batches, "", 1, 1 << 20),
      text_flag("eval-task", &o.eval_task, ""),
      int_flag("eval-task-limit", &o.eval_task_limit, "", 0, kBig),
      int_flag("threads", &o.threads, "", 0, 1024),
      text_flag("out", &o.out, ""),
      text_flag("resume", &o.resume, ""),
      text_flag("data", &o.data, ""),
      text_flag("data-format", &o.data_format, "", {"text", "jsonl", "chat"}),
      text_flag("tokenizer", &o.tokenizer, ""),
      text_flag("task", &o.task, "", {"lm", "classify"}),
      text_flag("columns", &o.columns, ""),
      switch_flag("balance", &o.balance, ""),
      text_flag("val-data", &o.val_data, ""),
      text_flag("test-data", &o.test_data, ""),
      text_flag("train-layers", &o.train_layers, "", {"all", "last", "lora"}),
      text_flag("init-from", &o.init_from, ""),
      int_flag("vocab-size", &o.vocab_size, "", 256, 65536),
      int_flag("sample-tokens", &o.sample_tokens, "", 0, 1 << 20),
      text_flag("write-corpus", &o.write_corpus, ""),
      switch_flag("eval-only", &o.eval_only, ""),
      int_flag("lora-rank", &o.lora_rank, "", -(1 << 20), 1 << 20),
      number_flag("lora-alpha", &o.lora_alpha, "", 0, 1e9),
      text_flag("lora-targets", &o.lora_targets, ""),
      text_flag("merge-lora", &o.merge_lora, ""),
      switch_flag("overwrite", &o.overwrite, ""),
  };
}

const std::vector<std::string>& resumable_flags() {
  static const std::vector<std::string> flags = {
      "steps", "max-minutes", "out", "threads", "eval-every", "eval-task", "eval-task-limit", "sample-tokens", "on-nonfinite", "precision",
      "checkpoint-activations", "loss-chunk", "dtype"};
  return flags;
}

std::string resumable_flag_list() {
  const std::vector<std::string>& resumable = resumable_flags();
  std::string list;
  for (size_t k = 0; k < resumable.size(); ++k)
    list += (k == 0 ? "--" : k + 1 == resumable.size() ? " and --" : ", --") + resumable[k];
  return list;
}

TrainOptions resumed_options(const TrainOptions& saved, TrainOptions typed, const std::vector<std::string>& given) {
  TrainOptions resumed = saved;
  const std::vector<Flag> now = option_fields(typed), before = option_fields(resumed);  // the same flags, in order
  const std::vector<std::string>& resumable = resumable_flags();
  for (const std::string& flag : given) {
    const auto i = std::find_if(now.begin(), now.end(), [&](const Flag& f) { return f.name == flag; }) - now.begin();
    if (i == std::ssize(now) || flag == "resume" || flag == "eval-only" || flag == "merge-lora" ||
        flag == "overwrite")
      continue;  // modes
    if (std::find(resumable.begin(), resumable.end(), flag) != resumable.end()) {
      std::visit([&](auto* from) { *std::get<decltype(from)>(before[i].value) = *from; }, now[i].value);
    } else if (!same_value(now[i], before[i])) {  // repeated as saved is fine
      throw UsageError("--" + flag + " cannot change when resuming (the run keeps its configuration; only " +
                       resumable_flag_list() + " can)");
    }
  }
  resumed.resume = typed.resume;
  if (std::find(given.begin(), given.end(), "out") == given.end()) resumed.out = typed.resume;  // its own folder
  return resumed;
}

models::LlamaConfig llama_config(const TrainOptions& o, int64_t vocab_size) {
  const int64_t C = o.model.emb_dim, heads = o.model.n_heads, kv_heads = o.kv_heads > 0 ? o.kv_heads : heads;
  if (C % heads != 0)
    throw UsageError("--emb-dim (" + std::to_string(C) + ") must be divisible by --heads (" + std::to_string(heads) + ")");
  if (heads % kv_heads != 0)
    throw UsageError("--kv-heads (" + std::to_string(kv_heads) + ") must divide --heads (" + std::to_string(heads) +
                     "): each key/value head serves heads / kv-heads query heads");
  if ((C / heads) % 2 != 0)
    throw UsageError("--emb-dim / --heads (" + std::to_string(C / heads) + ") must be even: RoPE turns each head's "
                     "features in pairs");
  models::LlamaConfig c;
  c.model_type = o.arch;
  c.vocab_size = vocab_size;
  c.hidden_size = C;
  c.intermediate_size = swiglu_width(C);
  c.num_hidden_layers = o.model.n_layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = C / heads;
  c.max_position_embeddings = o.model.context_length;
  c.qkv_bias = o.arch == "qwen2";  // Qwen2's biases on q, k and v
  c.qk_norm = o.arch == "qwen3";
  c.tie_word_embeddings = o.model.tie_weights;
  c.attention_dropout = o.model.drop_rate;
  c.validate();
  return c;
}

ScalarType products_dtype(const TrainOptions& o) { return o.precision == "bf16" ? kBFloat16 : kFloat32; }

models::LoRAConfig lora_config(const TrainOptions& o) {
  models::LoRAConfig c;
  c.r = o.lora_rank;
  c.alpha = o.lora_alpha;
  try {
    models::parse_lora_targets(o.lora_targets, c);
  } catch (const Error& e) {
    throw UsageError(std::string("--lora-targets: ") + e.what());
  }
  return c;
}

namespace {

// A fresh run's --lora-* flags, checked before any work (each refusal names its flag); --lora-alpha
// not given becomes the rank.
void check_lora_flags(TrainOptions& o, const std::vector<std::string>& given) {
  const bool lora = was_given(given, "lora-rank");
  for (const char* flag : {"lora-alpha", "lora-targets"})
    if (was_given(given, flag) && !lora) throw UsageError(std::string("--") + flag + " needs --lora-rank R (LoRA's rank)");
  if (!lora) return;
  if (o.lora_rank < 1)
    throw UsageError("--lora-rank " + std::to_string(o.lora_rank) +
                     ": the rank must be at least 1 (leave --lora-rank out to train every weight)");
  if (o.init_from.empty())
    throw UsageError("--lora-rank needs --init-from DIR: LoRA adapts the weights of a Hugging Face GPT-2, Llama or "
                     "Qwen folder");
  if (!was_given(given, "lora-alpha")) o.lora_alpha = static_cast<double>(o.lora_rank);
  if (!(o.lora_alpha > 0)) throw UsageError("--lora-alpha must be positive, got " + nn::python_float(o.lora_alpha));
  lora_config(o);  // a bad --lora-targets: a UsageError naming it
}

// A fresh run's --task classify and the flags that go with it; --train-layers not given: last from
// a folder (the book's recipe), all from scratch.
void check_classify_flags(TrainOptions& o, const std::vector<std::string>& given) {
  if (!is_classification(o)) {
    for (const char* flag : {"columns", "balance", "train-layers", "val-data", "test-data"})
      if (was_given(given, flag)) throw UsageError(std::string("--") + flag + " goes with --task classify");
    return;
  }
  // (--data, --data-format, --columns and --train-layers lora are the Trainer's to check: train/trainer_setup.cpp)
  if (!was_given(given, "train-layers"))
    o.train_layers = was_given(given, "lora-rank") ? "lora" : o.init_from.empty() ? "all" : "last";
}

// A fresh run's --arch and the flags that go with it (--kv-heads is llama's and qwen3's).
void check_arch_flags(const TrainOptions& o, const std::vector<std::string>& given) {
  if (!o.init_from.empty()) {  // the folder's model_type and config.json say all of it
    for (const char* flag : {"arch", "kv-heads"})
      if (was_given(given, flag))
        throw UsageError(std::string("--") + flag + " comes from the --init-from folder's config.json: leave it out");
    return;
  }
  if (o.arch == "gpt2") {
    if (was_given(given, "kv-heads"))
      throw UsageError("--kv-heads: --arch gpt2 has no grouped-query attention (every head has its own keys and "
                       "values); it goes with --arch llama, qwen2 or qwen3");
    return;
  }
  llama_config(o, 256);  // a size that does not divide: a UsageError naming the flags
}

template <class Config>
void check_lora_rank_of(const TrainOptions& o, const Config& config) {
  if (o.lora_rank < 1) return;
  if (const std::string why = models::lora_rank_problem(config, lora_config(o)); !why.empty())
    throw UsageError("--lora-rank " + std::to_string(o.lora_rank) + ": " + why);
}

}  // namespace

void check_fresh_run(TrainOptions& o, const std::vector<std::string>& given) {
  // --warmup not given: 50 steps, or a tenth of a short run's (--steps 20 warms up for 2)
  if (!was_given(given, "warmup")) o.warmup = default_warmup(o.steps);
  if (!was_given(given, "eval-every")) o.eval_every = default_eval_every(o.steps);  // 150 steps: every 30
  check_arch_flags(o, given);
  check_classify_flags(o, given);
  check_lora_flags(o, given);
}

void check_lora_rank(const TrainOptions& o, const models::GPTConfig& config) { check_lora_rank_of(o, config); }
void check_lora_rank(const TrainOptions& o, const models::LlamaConfig& config) { check_lora_rank_of(o, config); }

void infer_data_format(TrainOptions& o, const std::vector<std::string>& given) {
  if (was_given(given, "data-format") || !o.data.ends_with(".jsonl") || is_classification(o)) return;
  o.data_format = example_format(UserFile(o.data, "--data " + o.data).read_first_line());
}

void take_folder_defaults(TrainOptions& o, const std::vector<std::string>& given, const std::string& model,
                          int64_t context, double dropout) {
  for (const char* flag : {"emb-dim", "heads", "layers", "tie-weights", "vocab-size"})
    if (was_given(given, flag))
      throw UsageError(std::string("--") + flag + " comes from the --init-from folder's config.json: leave it out");
  if (was_given(given, "tokenizer") && (o.tokenizer == "char" || o.tokenizer == "bpe"))
    throw UsageError("--tokenizer " + o.tokenizer + ": " + model + " reads its own tokens; give a path to its files, "
                     "or leave --tokenizer out to use the --init-from folder's");
  if (!was_given(given, "tokenizer")) o.tokenizer = o.init_from;
  if (!was_given(given, "dropout")) o.model.drop_rate = dropout;
  if (!was_given(given, "context")) o.model.context_length = std::min<int64_t>(256, context);
  if (!was_given(given, "batch")) o.batch = 4;
  if (!was_given(given, "lr")) o.lr = 1e-4;
  if (!was_given(given, "min-lr")) o.min_lr = 1e-5;
}

}  // namespace tg::train
