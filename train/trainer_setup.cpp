// train/trainer_setup.cpp — how a run is built: its tokenizer, its 90/10 split, its model and
// optimizer, LoRA's adapters (the step itself is trainer.cpp).
#include "train/trainer.h"

#include <algorithm>
#include <cmath>

#include <unistd.h>

#include "autograd/ops.h"
#include "nn/init.h"
#include "train/chat_data.h"

namespace tg::train {

namespace {

// The first 90% of the text's bytes: BPE's training split (train_count, as the ids' split).
size_t train_bytes(const std::string& text) { return static_cast<size_t>(train_count(std::ssize(text))); }

// Examples come from a file: --data-format jsonl or chat without --data is a usage error.
void check_data_format(const TrainOptions& o) {
  if (is_classification(o) && o.data.empty())
    throw UsageError("--task classify needs --data FILE (labelled texts: CSV, TSV or JSONL)");
  if (is_classification(o) && o.data_format != "text")
    throw UsageError("--data-format goes with --task lm: --task classify reads labelled texts (CSV, TSV or JSONL), "
                     "not --data-format " + o.data_format + " examples");
  if (is_classification(o)) parse_columns(o.columns);  // a bad list: named before any work
  if (is_classification(o) && (o.train_layers == "lora") != (o.lora_rank > 0))
    throw UsageError(o.lora_rank > 0 ? "--lora-rank on a classifier goes with --train-layers lora (its adapters and the "
                                       "head train, every other weight is frozen)"
                                     : "--train-layers lora needs --lora-rank R (the adapters' rank) and --init-from DIR");
  if (is_example_data(o) && o.data.empty())
    throw UsageError("--data-format " + o.data_format + " needs --data FILE (the built-in corpus is text)");
}

tokenizers::Tokenizer make_tokenizer(const TrainOptions& o, const std::string& data) {
  check_data_format(o);
  if (o.tokenizer != "char" && o.tokenizer != "bpe") return tokenizers::load_tokenizer(o.tokenizer);  // a file or folder
  // the text it learns from, and how many of its first bytes are the training split's
  std::string text = data;
  size_t n = train_bytes(text);
  if (is_example_data(o)) text = examples_as_text(o.data_format, data, o.data, &n);  // as formatted, not their JSON
  if (is_classification(o)) {  // the texts alone, not their labels or the file's layout
    text = labelled_texts_as_text(data, o.data, parse_columns(o.columns), {o.val_data, o.test_data});
    n = text.size();
  }
  // examples end each response in the end-of-text token, so that the model learns to stop; a
  // classifier's batches are padded with it
  auto with_end = [&](tokenizers::Tokenizer t) {
    return is_example_data(o) || is_classification(o) ? std::move(t).with_end_of_text() : t;
  };
  if (o.tokenizer == "char") return with_end(tokenizers::CharTokenizer::from_text(text));
  tokenizers::BpeTokenizer bpe = tokenizers::BpeTokenizer::train(std::string_view(text).substr(0, n), o.vocab_size);
  if (bpe.merges().empty()) {
    throw Error("--data: the training split (" + std::to_string(n) +
                " bytes) is too small to learn any BPE merge: no pair of bytes occurs twice in it");
  }
  return with_end(std::move(bpe));
}

// This machine's memory in bytes, or 0 where the system does not say.
double physical_memory_bytes() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<double>(pages) * static_cast<double>(page);
#endif
  return 0;
}

// The tokens one forward sees: --context (a fine-tune's model may take more positions: its
// position table, GPT's, is counted at the model's length).
int64_t forward_window(const models::GPTConfig& c, const TrainOptions& o) {
  return o.model.context_length > 0 ? std::min(o.model.context_length, c.context_length) : c.context_length;
}

}  // namespace

double least_run_bytes(const models::GPTConfig& c, const models::LlamaConfig* llama, const TrainOptions& o) {
  const int64_t window = forward_window(c, o);
  const auto C = static_cast<double>(c.emb_dim), V = static_cast<double>(c.vocab_size),
             T = static_cast<double>(window), L = static_cast<double>(c.n_layers);
  double weights = V * C * (c.tie_weights ? 1 : 2) + static_cast<double>(c.context_length) * C + L * (12 * C * C + 13 * C);
  if (llama) {  // no position table; q, k, v, o of the heads' widths, the SwiGLU's three matrices
    const auto qo = static_cast<double>(llama->num_attention_heads * llama->head_dim),
               kv = static_cast<double>(llama->num_key_value_heads * llama->head_dim),
               I = static_cast<double>(llama->intermediate_size);
    weights = V * C * (c.tie_weights ? 1 : 2) + L * (2 * C * qo + 2 * C * kv + 3 * C * I + 2 * C) + C;
  }
  // A Llama / Qwen folder's frozen weights stay 16-bit under --dtype auto when its file is BF16 or
  // F16 (train/run_folder.cpp): a LoRA's base, a classifier's body below --train-layers. The file
  // is not read yet, so the floor counts them at 2 bytes.
  const bool frozen_16bit = llama && !o.init_from.empty() && o.dtype == "auto" &&
                            (o.lora_rank > 0 || (is_classification(o) && o.train_layers != "all"));
  double logit_rows = is_example_data(o) || is_classification(o) ? 0 : static_cast<double>(o.batch) * T;
  if (o.loss_chunk > 0) logit_rows = std::min(logit_rows, static_cast<double>(o.loss_chunk));
  return (frozen_16bit ? 2 : 4) * weights + 4 * (T * T + logit_rows * V);
}

namespace {

// A shape whose least_run_bytes is more than the machine's memory is refused before any of it is
// made, naming the flags, instead of failing inside an allocation (or being killed) with no flag
// named. shape_from_flags: --emb-dim and --layers made the model (a run from scratch); else its
// folder's config.json did, and the message says so.
void check_run_fits_in_memory(const models::GPTConfig& c, const models::LlamaConfig* llama, const TrainOptions& o,
                              bool shape_from_flags) {
  const double memory = physical_memory_bytes();
  if (memory <= 0) return;
  const double least = least_run_bytes(c, llama, o);
  if (least <= memory) return;
  const int64_t window = forward_window(c, o);
  auto gib = [](double bytes) { return nn::python_float(std::round(bytes / 1073741824.0 * 10) / 10); };
  const std::string shape = shape_from_flags ? ", --emb-dim " + std::to_string(c.emb_dim) + ", --layers " +
                                                   std::to_string(c.n_layers)
                                             : " and the model's " + std::to_string(c.n_layers) + " layers of width " +
                                                   std::to_string(c.emb_dim) + " (its config.json)";
  throw UsageError("--batch " + std::to_string(o.batch) + ", --context " + std::to_string(window) + shape +
                   ": the weights, an attention mask and one batch's logits alone take " + gib(least) +
                   " GiB, more than this machine's " + gib(memory) + " GiB; make them smaller");
}

// A fresh run's model has the flags' shape and the tokenizer's vocabulary.
models::GPTConfig config_for(const TrainOptions& o, const tokenizers::Tokenizer& tokenizer) {
  models::GPTConfig config = o.model;
  config.vocab_size = tokenizer.vocab_size();  // the text's characters, or BPE's tokens
  return config;
}

}  // namespace

Trainer::Trainer(const TrainOptions& options, const std::string& text)
    : Trainer(options, text, make_tokenizer(options, text), models::GPTConfig{}) {}

Trainer::Trainer(const TrainOptions& options, const std::string& text, tokenizers::Tokenizer tokenizer,
                 const models::GPTConfig& config)
    : options_(options), tokenizer_(std::move(tokenizer)), batch_gen_(static_cast<uint64_t>(options.seed)) {
  build(text, config, nullptr);
}

Trainer::Trainer(const TrainOptions& options, const std::string& text, tokenizers::Tokenizer tokenizer,
                 const models::LlamaConfig& config)
    : options_(options), tokenizer_(std::move(tokenizer)), batch_gen_(static_cast<uint64_t>(options.seed)) {
  // the GPT-shaped summary of the model the checks below read (vocabulary, context, sizes)
  const models::GPTConfig shape{.vocab_size = config.vocab_size, .context_length = config.max_position_embeddings,
                                .emb_dim = config.hidden_size, .n_heads = config.num_attention_heads,
                                .n_layers = config.num_hidden_layers, .drop_rate = 0.0,
                                .tie_weights = config.tie_word_embeddings};
  build(text, shape, &config);
}

void Trainer::build(const std::string& text, const models::GPTConfig& config, const models::LlamaConfig* llama) {
  const TrainOptions& options = options_;
  if (options.lr_schedule == "cosine" && options.warmup >= options.steps)
    throw UsageError("--warmup (" + std::to_string(options.warmup) + ") must be smaller than --steps (" +
                     std::to_string(options.steps) + ") with the cosine schedule");
  if (options.lr_schedule == "cosine" && options.min_lr > options.lr)
    throw UsageError("--min-lr must not be larger than --lr");
  if (options.lr_schedule == "cosine" && options.decay_start > 0 && options.decay_start < options.warmup)
    throw UsageError("--decay-start (" + std::to_string(options.decay_start) + ") must be at least --warmup (" +
                     std::to_string(options.warmup) + "): the decay starts after the warmup (0: at its end)");
  config_ = config.vocab_size > 0 ? config : config_for(options, tokenizer_);
  if (!llama) config_.validate();  // a Llama's head_dim need not be emb_dim / heads
  if (config_.vocab_size < tokenizer_.vocab_size())
    throw Error("the model's vocab_size (" + std::to_string(config_.vocab_size) + ") is smaller than the tokenizer's (" +
                std::to_string(tokenizer_.vocab_size()) + ")");
  if (options.model.context_length > config_.context_length)
    throw UsageError("--context (" + std::to_string(options.model.context_length) +
                     ") is longer than the model's context_length (" + std::to_string(config_.context_length) + ")");
  if (is_classification(options)) {  // labelled texts (classification_data.h)
    check_data_format(options);
    classification_ = load_classification_data(text, options.data,
                                               parse_columns(options.columns),
                                               options.balance, static_cast<uint64_t>(options.seed), tokenizer_,
                                               options.model.context_length, {options.val_data, options.test_data});
  } else if (is_example_data(options)) {  // instruction examples or conversations (instructions.h, chat_data.h)
    check_data_format(options);
    instructions_ = load_example_data(options.data_format, text, options.data, tokenizer_, options.model.context_length);
  } else if (tokenizer_.type() != std::string("char")) {  // byte-level: the splits are cut in the text's bytes
    const size_t n = train_bytes(text);
    const std::vector<int64_t> train = tokenizer_.encode(text.substr(0, n)), val = tokenizer_.encode(text.substr(n));
    data_ = {from_vector(train, {static_cast<int64_t>(train.size())}),
             from_vector(val, {static_cast<int64_t>(val.size())})};
  } else {
    data_ = split_train_val(tokenizer_.encode(text));
  }
  if (!instructions_ && !classification_) {
    check_split_length(data_.train, options.model.context_length, "training");  // both splits, before any work
    check_split_length(data_.val, options.model.context_length, "validation");
  }
  bytes_per_id_ = tokenizer_.bytes_per_id();
  if (llama) llama_ = *llama;
  else if (options.arch != "gpt2") llama_ = train::llama_config(options, config_.vocab_size);
  check_run_fits_in_memory(config_, llama_ ? &*llama_ : nullptr, options, /*shape_from_flags=*/config.vocab_size <= 0);
  manual_seed(static_cast<uint64_t>(options.seed));
  if (llama) {  // its weights are read next: none drawn or written (a BF16 base's are never float32)
    const nn::init::SkipInitGuard no_draws(nn::init::SkipInit::kLeaveUnset);
    model_ = std::make_shared<models::LlamaForCausalLM>(*llama_);
  } else if (llama_) {
    model_ = std::make_shared<models::LlamaForCausalLM>(*llama_);
  } else {
    model_ = std::make_shared<models::GPTModel>(config_);
  }
  model_->set_checkpointing(models::checkpointing_from_name(options.checkpoint_activations));
  if (classification_) {  // the head, drawn next from the same generator
    classifier_ = std::make_shared<models::ModelForSequenceClassification>(model_, model_->hidden_size(),
                                                                           std::ssize(classification_->classes));
    models::set_trained_layers(*classifier_, options.train_layers == "lora" ? "none" : options.train_layers);
  }
  make_optimizer();
}

models::GPTModel& Trainer::gpt() {
  auto* gpt = dynamic_cast<models::GPTModel*>(model_.get());
  if (!gpt) throw Error("this run's model is a " + model_->type_name() + " (--arch " + options_.arch + "), not a GPT");
  return *gpt;
}

models::LlamaForCausalLM& Trainer::llama() {
  auto* llama = dynamic_cast<models::LlamaForCausalLM*>(model_.get());
  if (!llama) throw Error("this run's model is a " + model_->type_name() + " (--arch " + options_.arch + "), not a Llama");
  return *llama;
}

void Trainer::make_optimizer() {
  const NamedTensors trained = nn::trainable_parameters(trained_model());
  trained_.clear();
  for (const auto& [name, p] : trained) trained_.push_back(p);
  optim::AdamOptions adamw;
  adamw.lr = options_.lr;
  optimizer_ = std::make_unique<optim::AdamW>(optim::weight_decay_groups(trained, options_.weight_decay), adamw);
}

void Trainer::apply_lora(const std::string& base) {
  const models::LoRAConfig config = lora_config(options_);
  if (config.r < 1) throw Error("apply_lora: this run has no --lora-rank");
  manual_seed(static_cast<uint64_t>(options_.seed));  // the adapters' A: torch.manual_seed(seed); get_peft_model(...)
  auto* llama = dynamic_cast<models::LlamaForCausalLM*>(model_.get());
  if (llama) models::apply_lora(*llama, config);  // q, k, v, o / gate, up, down (models/lora/llama_lora.h)
  else models::apply_lora(gpt(), config);         // c_attn, c_proj / c_fc, c_proj (models/lora/gpt_lora.h)
  make_optimizer();  // the adapters alone
  origin.lora = models::AdapterConfig{config, base, llama ? models::LoraFamily::llama : models::LoraFamily::gpt2,
                                /*classifier=*/classifier_ != nullptr};
}



}  // namespace tg::train
