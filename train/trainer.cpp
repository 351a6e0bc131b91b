// train/trainer.cpp — the training step and evaluation.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include <unistd.h>

#include "autograd/ops.h"
#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "nn/chunked_loss.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"

namespace tg::train {

std::vector<Flag> train_flags(TrainOptions& o) {
  constexpr double kBig = 1e12;
  return {
      int_flag("steps", &o.steps,
               "training steps in all: with --resume, the run trains until it has done this many (the total, as "
               "examples/pytorch/tapegrad_run.py train --steps; its --more-steps N counts N beyond the run's)",
               1, kBig),
      number_flag("max-minutes", &o.max_minutes,
                  "stop after the step that spends this much training time (a resumed run's earlier time counts); "
                  "0 = no limit",
                  0, kBig),
      int_flag("batch", &o.batch, "sequences per batch (per micro-batch with --grad-accum; jsonl: examples, padded to the longest)", 1, 1 << 20),
      int_flag("grad-accum", &o.grad_accum,
               "micro-batches of --batch sequences per step, their gradients averaged (= --batch N*B, in less memory; "
               "jsonl: the mean over all their response tokens)",
               1, 1 << 20),
      int_flag("context", &o.model.context_length, "tokens per sequence (the model's context_length; jsonl: at most, longer examples are skipped)", 1, 1 << 20),
      int_flag("emb-dim", &o.model.emb_dim, "embedding width", 1, 1 << 16),
      int_flag("heads", &o.model.n_heads, "attention heads (must divide --emb-dim)", 1, 1 << 16),
      int_flag("layers", &o.model.n_layers, "transformer blocks", 1, 1 << 10),
      number_flag("dropout", &o.model.drop_rate, "dropout rate in [0, 1)", 0, 0.999999),
      switch_flag("tie-weights", &o.model.tie_weights, "the output layer's weight is the token embedding (GPT-2)"),
      number_flag("lr", &o.lr, "peak learning rate (AdamW)", 0, 10),
      number_flag("min-lr", &o.min_lr, "learning rate at the end of the cosine decay", 0, 10),
      text_flag("lr-schedule", &o.lr_schedule, "constant, or linear warmup then cosine decay to --min-lr",
                {"constant", "cosine"}),
      int_flag("warmup", &o.warmup, "warmup steps of the cosine schedule (when not given: 50, at most --steps / 10)", 0,
               kBig),
      number_flag("weight-decay", &o.weight_decay, "AdamW weight decay (matrices and embeddings only)", 0, 10),
      number_flag("grad-clip", &o.grad_clip, "clip the gradients' total norm to this (0 = off)", 0, kBig),
      text_flag("on-nonfinite", &o.on_nonfinite,
                "a step whose loss or gradient norm is inf or nan: stop with an error, or skip its update",
                {"error", "skip"}),
      text_flag("precision", &o.precision,
                "matrix products in float32, or with bfloat16 inputs and float32 sums (mixed precision; may "
                "change when resuming)",
                {"fp32", "bf16"}),
      text_flag("checkpoint-activations", &o.checkpoint_activations,
                "what the blocks recompute in backward instead of keeping: nothing, every block (keeps only "
                "each block's input), or the feed-forward's pre-activation (ffn); the same numbers bit for bit, "
                "less memory, more time (may change when resuming)",
                {"none", "every", "ffn"}),
      int_flag("loss-chunk", &o.loss_chunk,
               "compute the output layer and the loss this many rows (tokens) at a time, making each chunk's "
               "logits again in backward: the batch's (tokens x vocabulary) logits are never whole in memory; "
               "the same loss to rounding (0 = in one piece; may change when resuming)",
               0, 1 << 30),
      seed_flag(&o.seed, "seed of the model's initialisation, dropout and batches"),
      int_flag("eval-every", &o.eval_every,
               "evaluate and save a checkpoint every this many steps, and after the last (when not given: 250, at "
               "most --steps / 5; a resumed run keeps its saved value)",
               1, kBig),
      int_flag("eval-batches", &o.eval_batches, "batches per split in each evaluation", 1, 1 << 20),
      int_flag("threads", &o.threads, "threads for matrix products and loops (0 = all cores)", 0, 1024),
      text_flag("out", &o.out, "folder for the checkpoint, loss.csv, loss.svg, samples and summary"),
      text_flag("resume", &o.resume, "continue the run saved in this folder"),
      text_flag("data", &o.data, "a text file to train on (default: the built-in corpus)"),
      text_flag("data-format", &o.data_format,
                "text, or jsonl: --data holds instruction examples, one {\"instruction\", \"input\", \"output\"} "
                "object a line (\"input\" may be left out), formatted with the Alpaca template; the loss counts only "
                "the responses; the first 90% of the examples train, the rest validate; examples of over --context + 1 "
                "tokens are skipped (when not given: jsonl for a --data FILE.jsonl, else text)",
                {"text", "jsonl"}),
      text_flag("tokenizer", &o.tokenizer,
                "char (the text's characters), bpe (byte-level BPE learned from the training split), or a path: "
                "a tokenizer.json, or a folder with one or with GPT-2's vocab.json and merges.txt (--init-from's by "
                "default; a folder with a tokenizer.json and GPT-2's files it does not name is refused)"),
      text_flag("init-from", &o.init_from,
                "start from the weights of a Hugging Face GPT-2 folder (config.json, model.safetensors), with its "
                "tokenizer; not given: --context 256 (at most the model's), --batch 4, --lr 1e-4, --min-lr 1e-5, "
                "--dropout as its config.json"),
      int_flag("vocab-size", &o.vocab_size, "BPE's vocabulary: 256 bytes + merges (--tokenizer bpe)", 256, 65536),
      int_flag("sample-tokens", &o.sample_tokens,
               "tokens (characters, or BPE tokens) to write in each sample at the end (jsonl: answers to the first 3 "
               "val examples' prompts)", 0, 1 << 20),
      text_flag("write-corpus", &o.write_corpus, "write the built-in corpus to this file and stop"),
      switch_flag("eval-only", &o.eval_only,
                  "with --resume DIR: print the saved model's loss, perplexity and bits per byte on the run's val "
                  "split, or on all of --data FILE (jsonl: on the responses' tokens), and stop"),
      int_flag("lora-rank", &o.lora_rank,
               "with --init-from: train LoRA adapters of this rank (at least 1) and freeze every weight of the model; "
               "the run saves the adapters alone, adapters.safetensors and adapter_config.json in peft's names, "
               "and reads its base model from the --init-from folder (not given: every weight trains)",
               -(1 << 20), 1 << 20),
      number_flag("lora-alpha", &o.lora_alpha,
                  "the adapters' update B A is scaled by alpha / rank (not given: alpha = rank, a scale of 1, as "
                  "peft's defaults r = lora_alpha = 8)",
                  0, 1e9),
      text_flag("lora-targets", &o.lora_targets,
                "which Linears get adapters: attn (q, k, v together and the attention's output: GPT-2's c_attn and "
                "attn.c_proj), mlp (c_fc and mlp.c_proj), or attn,mlp"),
      text_flag("merge-lora", &o.merge_lora,
                "with --resume RUN (a LoRA run): write its base model with the adapters merged in (W + alpha/rank "
                "B A) to this folder, a Hugging Face GPT-2 folder in the base's layout with the tokenizer, and stop"),
  };
}

namespace {

// The first 90% of the text's bytes: BPE's training split (the ids' split, int(0.9 * n)).
size_t train_bytes(const std::string& text) { return static_cast<size_t>(0.9 * static_cast<double>(text.size())); }

// Instruction examples come from a file: --data-format jsonl without --data is a usage error.
void check_data_format(const TrainOptions& o) {
  if (o.data_format == "jsonl" && o.data.empty())
    throw UsageError("--data-format jsonl needs --data FILE (the built-in corpus is text)");
}

tokenizers::Tokenizer make_tokenizer(const TrainOptions& o, const std::string& data) {
  check_data_format(o);
  if (o.tokenizer != "char" && o.tokenizer != "bpe") return tokenizers::load_tokenizer(o.tokenizer);  // a file or folder
  // the text it learns from, and how many of its first bytes are the training split's
  std::string text = data;
  size_t n = train_bytes(text);
  if (o.data_format == "jsonl") {  // instruction examples: as they are formatted, not their JSON
    const std::vector<Instruction> all = parse_instructions(data, o.data);
    text = instructions_as_text(all);
    n = instructions_as_text({all.begin(), all.begin() + instruction_train_count(std::ssize(all))}).size();
  }
  if (o.tokenizer == "char") return tokenizers::CharTokenizer::from_text(text);
  tokenizers::BpeTokenizer bpe = tokenizers::BpeTokenizer::train(std::string_view(text).substr(0, n), o.vocab_size);
  if (bpe.merges().empty()) {
    throw Error("--data: the training split (" + std::to_string(n) +
                " bytes) is too small to learn any BPE merge: no pair of bytes occurs twice in it");
  }
  return bpe;
}

// This machine's memory in bytes, or 0 where the system does not say.
double physical_memory_bytes() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<double>(pages) * static_cast<double>(page);
#endif
  return 0;
}

// What a run allocates up front or at its first step, at the least: the weights (float32), one
// (context x context) causal mask (each layer makes its own as it runs), and one micro-batch's logits (batch x context x vocab;
// --loss-chunk rows of them with it; none counted for instruction examples, padded to the longest).
// A shape whose least is more than the machine's memory is refused before any of it is made,
// naming the flags, instead of failing inside an allocation (or being killed) with no flag named.
void check_run_fits_in_memory(const models::GPTConfig& c, const TrainOptions& o) {
  const double memory = physical_memory_bytes();
  if (memory <= 0) return;
  const auto C = static_cast<double>(c.emb_dim), V = static_cast<double>(c.vocab_size),
             T = static_cast<double>(c.context_length), L = static_cast<double>(c.n_layers);
  const double weights = V * C * (c.tie_weights ? 1 : 2) + T * C + L * (12 * C * C + 13 * C);
  double logit_rows = o.data_format == "jsonl" ? 0 : static_cast<double>(o.batch) * T;
  if (o.loss_chunk > 0) logit_rows = std::min(logit_rows, static_cast<double>(o.loss_chunk));
  const double least = 4 * (weights + T * T + logit_rows * V);
  if (least <= memory) return;
  auto gib = [](double bytes) { return nn::python_float(std::round(bytes / 1073741824.0 * 10) / 10); };
  throw UsageError("--batch " + std::to_string(o.batch) + ", --context " + std::to_string(c.context_length) +
                   ", --emb-dim " + std::to_string(c.emb_dim) + ", --layers " + std::to_string(c.n_layers) +
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
  if (options.lr_schedule == "cosine" && options.warmup >= options.steps)
    throw UsageError("--warmup (" + std::to_string(options.warmup) + ") must be smaller than --steps (" +
                     std::to_string(options.steps) + ") with the cosine schedule");
  if (options.lr_schedule == "cosine" && options.min_lr > options.lr)
    throw UsageError("--min-lr must not be larger than --lr");
  config_ = config.vocab_size > 0 ? config : config_for(options, tokenizer_);
  config_.validate();
  if (config_.vocab_size < tokenizer_.vocab_size())
    throw Error("the model's vocab_size (" + std::to_string(config_.vocab_size) + ") is smaller than the tokenizer's (" +
                std::to_string(tokenizer_.vocab_size()) + ")");
  if (options.model.context_length > config_.context_length)
    throw UsageError("--context (" + std::to_string(options.model.context_length) +
                     ") is longer than the model's context_length (" + std::to_string(config_.context_length) + ")");
  if (options.data_format == "jsonl") {  // instruction examples (instructions.h)
    check_data_format(options);
    instructions_ = load_instruction_data(text, options.data, tokenizer_, options.model.context_length);
  } else if (tokenizer_.type() != std::string("char")) {  // byte-level: the splits are cut in the text's bytes
    const size_t n = train_bytes(text);
    const std::vector<int64_t> train = tokenizer_.encode(text.substr(0, n)), val = tokenizer_.encode(text.substr(n));
    data_ = {from_vector(train, {static_cast<int64_t>(train.size())}),
             from_vector(val, {static_cast<int64_t>(val.size())})};
  } else {
    data_ = split_train_val(tokenizer_.encode(text));
  }
  if (!instructions_) {
    check_split_length(data_.train, options.model.context_length, "training");  // both splits, before any work
    check_split_length(data_.val, options.model.context_length, "validation");
  }
  bytes_per_id_ = tokenizer_.bytes_per_id();
  check_run_fits_in_memory(config_, options);
  manual_seed(static_cast<uint64_t>(options.seed));
  model_ = std::make_unique<models::GPTModel>(config_);
  model_->set_checkpointing(models::checkpointing_from_name(options.checkpoint_activations));
  make_optimizer();
}

void Trainer::make_optimizer() {
  const NamedTensors trained = nn::trainable_parameters(*model_);
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
  models::apply_lora(*model_, config);
  make_optimizer();  // the adapters alone
  lora_ = models::AdapterConfig{config, base};
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

double Trainer::lr_at(int64_t step) const {
  if (options_.lr_schedule == "constant") return options_.lr;
  const double min_factor = options_.lr > 0 ? options_.min_lr / options_.lr : 0.0;
  return options_.lr * optim::warmup_cosine(options_.warmup, options_.steps, min_factor)(step);
}

namespace {

// How many of y's targets count (are not cross_entropy's ignore_index, -100).
int64_t count_targets(const Tensor& y) {
  const std::vector<int64_t> ids = y.tolist<int64_t>();
  return static_cast<int64_t>(std::count_if(ids.begin(), ids.end(), [](int64_t id) { return id != -100; }));
}

}  // namespace

std::vector<Batch> Trainer::step_batches() {
  const int64_t B = options_.batch, N = options_.grad_accum;
  std::vector<Batch> micro;
  if (instructions_) {  // N*B examples, each micro-batch padded to its longest
    const Tensor ix = randint(0, static_cast<int64_t>(instructions_->train.size()), {N * B}, &batch_gen_);
    const std::vector<int64_t> picked = ix.tolist<int64_t>();
    for (int64_t k = 0; k < N; ++k) {
      const std::vector<int64_t> which(picked.begin() + k * B, picked.begin() + (k + 1) * B);
      micro.push_back(instruction_batch(instructions_->train, which, instructions_->pad_id));
    }
    return micro;
  }
  // the N*B sequences that --batch N*B draws, as N micro-batches of B
  const Batch all = get_batch(data_.train, N * B, options_.model.context_length, batch_gen_, "training");
  for (int64_t k = 0; k < N; ++k) micro.push_back({all.x.narrow(0, k * B, B), all.y.narrow(0, k * B, B)});  // (B,T)
  return micro;
}

Trainer::StepResult Trainer::train_step() {
  for (auto& group : optimizer_->param_groups()) group.lr = lr_at(step_);
  const std::vector<Batch> micro = step_batches();
  std::vector<int64_t> targets;  // each micro-batch's, and their sum
  for (const Batch& b : micro) targets.push_back(count_targets(b.y));
  const int64_t all_targets = std::accumulate(targets.begin(), targets.end(), int64_t{0});
  model_->train();
  optimizer_->zero_grad(true);
  const int64_t between_steps = memory_stats().live_bytes;  // parameters, optimizer state, data
  reset_peak_memory_stats();
  StepResult r;
  r.loss = 0.0;
  r.tokens = 0;
  for (size_t k = 0; k < micro.size(); ++k) {
    Tensor loss;
    {
      AutocastGuard autocast(products_dtype(options_));  // backward follows the forward's mode
      loss = mean_loss(micro[k].x, micro[k].y, micro[k].key_padding_mask);  // the mean over its targets
    }
    // the mean over all the step's targets: each mean times its share, i.e. divided by `parts`
    // (= N for text windows, where every micro-batch has B*T targets)
    const double parts = static_cast<double>(all_targets) / static_cast<double>(targets[k]);
    (parts == 1.0 ? loss : loss / parts).backward();
    r.loss += loss.item<double>() / parts;
    r.tokens += micro[k].x.numel();
  }
  const int64_t step_peak = memory_stats().peak_bytes - between_steps;  // activations + gradients, at most
  peak_activations_ = std::max(peak_activations_, step_peak - memory_report().gradients);
  r.grad_norm = options_.grad_clip > 0 ? optim::clip_grad_norm_(trained_, options_.grad_clip).item<double>()
                                       : optim::grad_norm(trained_).item<double>();
  r.skipped = !std::isfinite(r.loss) || !std::isfinite(r.grad_norm);
  if (r.skipped) optimizer_->zero_grad(true);  // the update is dropped; AdamW's state and step count stay
  if (r.skipped && options_.on_nonfinite == "error") {
    throw Error("step " + std::to_string(step_ + 1) + ": the loss (" + nn::python_float(r.loss) +
                ") or the gradients' total norm (" + nn::python_float(r.grad_norm) +
                ") is not finite; the model was not updated. Try a smaller --lr, or --on-nonfinite skip");
  }
  if (!r.skipped) optimizer_->step();
  ++step_;
  return r;
}

MemoryReport Trainer::memory_report() const {
  MemoryReport m;
  for (const Tensor& p : model_->parameters()) {  // a tied weight is listed once
    m.parameters += static_cast<int64_t>(p.nbytes());
    if (p.grad().defined()) m.gradients += static_cast<int64_t>(p.grad().nbytes());
  }
  for (const auto& [name, state] : optimizer_->state_dict()) m.optimizer += static_cast<int64_t>(state.nbytes());
  m.activations = peak_activations_;
  m.peak_rss_mb = peak_rss_mb();
  return m;
}

Tensor Trainer::mean_loss(const Tensor& x, const Tensor& y, const Tensor& key_padding_mask) {
  return model_->loss(x, y, key_padding_mask, options_.loss_chunk);
}

std::pair<double, double> Trainer::mean_loss_and_bpb(const Tensor& split, const std::string& name, Generator& gen) {
  AutocastGuard autocast(products_dtype(options_));
  double total = 0, nats = 0;
  int64_t bytes = 0;
  for (int64_t k = 0; k < options_.eval_batches; ++k) {
    const Batch b = get_batch(split, options_.batch, options_.model.context_length, gen, name);
    const double loss = mean_loss(b.x, b.y, Tensor()).item<double>();
    total += loss;
    nats += loss * static_cast<double>(b.y.numel());  // the batch's summed token losses
    const int64_t* y = b.y.data_ptr<int64_t>();
    for (int64_t i = 0; i < b.y.numel(); ++i) bytes += bytes_per_id_[static_cast<size_t>(y[i])];
  }
  return {total / static_cast<double>(options_.eval_batches), nats / std::log(2.0) / static_cast<double>(bytes)};
}

Trainer::Losses Trainer::evaluate() {
  NoGradGuard no_grad;
  model_->eval();
  Losses l;
  if (instructions_) {  // the first eval_batches * batch examples of each split, in order
    AutocastGuard autocast(products_dtype(options_));
    auto first = [&](const std::vector<InstructionExample>& split) {
      const size_t n = std::min(split.size(), static_cast<size_t>(options_.eval_batches * options_.batch));
      return evaluate_instructions(*model_, tokenizer_, {split.begin(), split.begin() + static_cast<std::ptrdiff_t>(n)},
                                   options_.batch, instructions_->pad_id);
    };
    const TextEval train = first(instructions_->train), val = first(instructions_->val);
    l = {train.loss, val.loss, train.bpb, val.bpb};
    model_->train();
    return l;
  }
  Generator gen(kEvalSeed);
  std::tie(l.train, l.train_bpb) = mean_loss_and_bpb(data_.train, "training", gen);
  std::tie(l.val, l.val_bpb) = mean_loss_and_bpb(data_.val, "validation", gen);
  model_->train();
  return l;
}

}  // namespace tg::train
