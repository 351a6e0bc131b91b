// train/trainer.h — the training loop of train_gpt, step by step as the usual PyTorch loop
// (examples/pytorch/train_gpt.py does the same in PyTorch; a test checks they agree). One Trainer
// runs a text run, an instruction fine-tune (data_format "jsonl", train/instructions.h), a
// classification fine-tune (task "classify", train/classification_data.h) or a LoRA run.
//
// Read first: the loop above class Trainer, then train_step (one step: the micro-batches, the
// non-finite check, bf16) and evaluate (the losses a run reports). learning_rate and
// continued_schedule are the learning-rate schedule; train/run_folder.h saves and resumes a run.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"
#include "autograd/random/generator.h"
#include "train/classification_data.h"
#include "train/data.h"
#include "models/hf/hf_gpt2.h"
#include "train/instructions.h"
#include "models/lora/lora_adapters.h"
#include "train/memory_report.h"
#include "train/options.h"
#include "tokenizers/tokenizer.h"
#include "models/gpt.h"
#include "models/lora/gpt_lora.h"
#include "models/lora/llama_lora.h"
#include "models/llama.h"
#include "models/sequence_classification.h"
#include "optim/adam.h"

namespace tg::train {

// The learning rate of step (0-based) under o's schedule: --lr with lr_schedule "constant"; else a
// linear warmup from 0 to --lr over --warmup steps, then a half cosine down to --min-lr at --steps
// (optim::warmup_cosine), and --min-lr after. With decay_start or decay_lr set (options.h), the
// rate stays at --lr from --warmup to decay_start and the half cosine runs from decay_lr there:
//   lr(s) = decay_lr * warmup_cosine(decay_start, steps, min_lr / decay_lr)(s)   for s >= decay_start
// (examples/pytorch/train_gpt.py's lr_at is the same sums).
double learning_rate(const TrainOptions& o, int64_t step);

// A run planned as `planned` (its config.json), resumed at `step` with the options `resumed`: when
// --steps differs from the plan and the decay has begun, the rest of the decay is stretched (or
// squeezed) over the new steps from the rate the run has reached: decay_start = step, decay_lr =
// learning_rate(planned, step), so that step's rate is the one it would have had and the next
// ones go on from it without a jump, down to --min-lr at the new --steps. Otherwise (the same
// --steps, a constant rate, a run still in its warmup or before its decay) resumed is returned
// as it is, and the run goes on bit for bit as if never stopped.
TrainOptions continued_schedule(const TrainOptions& planned, TrainOptions resumed, int64_t step);

// What a run allocates up front or at its first step, at the least, in bytes: the weights
// (float32; 2 bytes each for a fine-tune whose frozen weights may stay 16-bit: --dtype auto on a
// LoRA's base, or a classifier's body below --train-layers), one (context x context) causal mask
// (each layer makes its own as it runs), and one micro-batch's logits (batch x context x vocab;
// --loss-chunk rows of them with it; none counted for instruction examples, padded to the
// longest, or a classifier's). A run whose least is more than the machine's memory is refused
// before any of it is made, naming the flags.
double least_run_bytes(const models::GPTConfig& config, const models::LlamaConfig* llama, const TrainOptions& o);

// One training run, as the usual PyTorch loop:
//
//   manual_seed(seed); model = GPTModel(config)        init draws from the default generator
//                      (--arch llama, qwen3: LlamaForCausalLM(llama_config(options)), models/llama.h)
//   opt = AdamW(weight_decay_groups(model), lr, weight_decay)
//   gen = Generator(seed)                              batches draw from their own generator
//   each step s:  every group's lr = lr_at(s)
//                 x, y = get_batch(train, grad_accum * batch, context, gen)
//                 opt.zero_grad()
//                 for each of the grad_accum micro-batches xk, yk (batch sequences each, in order):
//                     with autocast (precision bf16 only: autograd/autocast.h):
//                         loss_k = cross_entropy(model(xk).flatten(0, 1), yk.flatten())
//                     (loss_k / grad_accum).backward()            the gradients add up
//                 clip_grad_norm_ (if grad_clip > 0); opt.step()
//
// With task "classify" (a classification fine-tune, the book's chapter 6) the data are labelled
// texts (train/classification_data.h: split 70/10/20 with --seed), and the model is the body (the
// GPT or Llama / Qwen model above, drawn or read as it would be) with a head drawn right after it
// from the same generator, as torch.nn.Linear(C, n, bias=False) draws it:
//     model = ModelForSequenceClassification(body, C, n)      (models/sequence_classification.h)
// --train-layers says which body weights train beside the head (set_trained_layers).
class Trainer {
 public:
  static constexpr uint64_t kEvalSeed = 2024;

  // A fresh run on text: tokenizer, split, model and optimizer as the loop above describes. A BPE
  // tokenizer learns its merges from the first 90% of the text's bytes, the training split, and
  // the two splits are encoded apart; characters are taken from the whole text, which is
  // encoded and then split at 90% of its ids. With data_format "jsonl", text is the JSONL file's
  // and the tokenizer learns from its examples as formatted (instructions_as_text); the examples
  // are split as instructions.h says.
  Trainer(const TrainOptions& options, const std::string& text);
  // A run with a tokenizer and a model shape made elsewhere (a run from GPT-2: its tokenizer and
  // config; the caller then loads the weights). config.vocab_size may exceed the tokenizer's (a
  // padded vocabulary), and config.context_length is the model's: the sequences are
  // options.model.context_length tokens long, at most that.
  Trainer(const TrainOptions& options, const std::string& text, tokenizers::Tokenizer tokenizer, const models::GPTConfig& config);
  // A run of a Llama / Qwen model of a Hugging Face folder's config (a run from the folder, or a
  // resumed one): its weights are read next, so the model is built without drawing them
  // (nn::init::SkipInitGuard; the default generator is left as it was). The sequences are
  // options.model.context_length tokens long, at most max_position_embeddings.
  Trainer(const TrainOptions& options, const std::string& text, tokenizers::Tokenizer tokenizer,
          const models::LlamaConfig& config);

  struct StepResult {
    double loss;       // that batch's loss
    double grad_norm;  // the gradients' total 2-norm, before clipping
    bool skipped;      // non-finite loss or norm, update dropped (on_nonfinite "skip")
    int64_t tokens;    // the positions its forwards ran, padding included (for tokens per second)
  };
  // One step at step(). With grad_accum N a step draws the N*B sequences that --batch N*B would,
  // and its gradient is their mean loss's: the same step in a fraction of the activations' memory.
  // The step's loss is the micro-batches' mean.
  //
  // With data_format "jsonl" (instruction fine-tuning, train/instructions.h) the data are
  // examples, not windows of a text: a step draws grad_accum * batch of the training examples,
  // ix = randint(0, n_train, (grad_accum * batch,), gen), with replacement and from the same
  // generator (so a resumed run goes on bit for bit); each micro-batch is its batch examples padded
  // to the longest of them, run with the key padding mask, and y is -100 on the prompt and the
  // padding. The step's loss is the mean over the response tokens of all its micro-batches:
  //     loss = sum over k of loss_k * (targets_k / targets),   loss_k the mean of micro-batch k
  // so --grad-accum N trains as --batch N*B would (for text windows, where every micro-batch has
  // as many targets, this is the plain loss_k / N). A classification step draws ix the same way,
  // each micro-batch its texts padded on the right, and loss = cross_entropy(model(x,
  // key_padding_mask), labels).
  //
  // A step whose loss or gradients' total norm is inf or nan never reaches the model: with
  // on_nonfinite "error" train_step throws (the model, the optimizer and the last checkpoint stay
  // as they were), with "skip" it drops that step's update and goes on (the batch is used up).
  // Weights or optimizer state that an update itself makes inf or nan (finite gradients, a step
  // that overflows) are caught when the run saves: save_run refuses a non-finite checkpoint
  // whatever on_nonfinite says, since skipping later steps cannot mend them (train/run_folder.h).
  //
  // With precision "bf16" the matrix products of the forward, and so of the backward, take
  // bfloat16 inputs and sum in float32; the parameters, their gradients and AdamW stay float32, so
  // a run may switch precision when it resumes.
  StepResult train_step();
  // Mean loss (nats per token) of each split, and bits per byte: the same loss per byte of the
  // text the targets stand for, in bits, so that char and BPE runs compare on one scale:
  //   bpb = sum of the batches' token losses / ln 2 / the bytes of their target tokens
  struct Losses {
    double train, val;
    double train_bpb, val_bpb;  // nan for a classification run
    std::optional<double> train_acc, val_acc;  // a classification run's accuracies
  };
  // Evaluation (model in eval mode, no tape, in the run's precision) draws eval_batches batches
  // from each split with a generator seeded kEvalSeed every time, so val losses compare between
  // steps and between runs. An instruction run takes the first eval_batches * batch examples of
  // each split, in order (all of them when fewer), and reports the mean loss over their response
  // tokens. A classification run takes the first eval_batches * batch texts of the train and val
  // splits, in order: their mean loss and their accuracy (train_acc, val_acc; no bits per byte);
  // its test split is read only by the evaluate program (examples/evaluate.cpp) and at the end of
  // a run.
  Losses evaluate();
  // A resumed run whose --steps differs from the plan it was saved with: options().decay_start and
  // decay_lr as continued_schedule(planned, options(), step()) says.
  void continue_schedule(const TrainOptions& planned) { options_ = continued_schedule(planned, options_, step_); }
  // The memory of the steps so far (train/memory_report.h): parameters, gradients and
  // optimizer state as they are now, and the largest activations of any step.
  MemoryReport memory_report() const;

  int64_t step() const { return step_; }
  // For resuming (train/run_folder.cpp): the step reached and the batch generator.
  void set_step(int64_t step) { step_ = step; }
  Generator& batch_generator() { return batch_gen_; }
  models::CausalLM& model() { return *model_; }
  // What trains: the classifier of a classification run, else model().
  nn::Module& trained_model() { return classifier_ ? static_cast<nn::Module&>(*classifier_) : *model_; }
  const nn::Module& trained_model() const { return classifier_ ? static_cast<const nn::Module&>(*classifier_) : *model_; }
  // A classification run's classifier and data; nullptr otherwise.
  models::ModelForSequenceClassification* classifier() { return classifier_.get(); }
  const ClassificationData* classification() const { return classification_ ? &*classification_ : nullptr; }
  // The model as the GPT it is (GPT-2's folders); an Error for a llama or qwen3 run.
  models::GPTModel& gpt();
  // The model as the LlamaForCausalLM it is; an Error for a GPT run.
  models::LlamaForCausalLM& llama();
  optim::AdamW& optimizer() { return *optimizer_; }
  const tokenizers::Tokenizer& tokenizer() const { return tokenizer_; }
  // The GPT's config; for a llama or qwen3 run, the size flags' shape with the vocabulary.
  const models::GPTConfig& config() const { return config_; }
  const TrainOptions& options() const { return options_; }
  // An instruction run's examples (data_format "jsonl"), or nullptr.
  const InstructionData* instructions() const { return instructions_ ? &*instructions_ : nullptr; }
  // A LoRA run (options().lora_rank > 0, a run from a GPT-2 or Llama / Qwen folder), once the base
  // weights are loaded: reseeds the default generator with --seed, adds the adapters
  // (models::apply_lora: their A drawn as peft draws it, every other parameter frozen), as
  // `torch.manual_seed(seed); get_peft_model(model, config)` would, and remakes the optimizer over
  // the adapters alone (opt = AdamW(weight_decay_groups(trainable parameters))), so clipping sees
  // only their gradients. base: the base model's folder, for adapter_config.json
  // (models/lora/lora_adapters.h).
  void apply_lora(const std::string& base);

  // Where a run from a folder came from: what saving it in that folder's layout needs
  // (train/run_folder.h). Set when the run starts from the folder or resumes.
  struct Origin {
    // a run from GPT-2 is saved in Hugging Face's layout: what was read (the prefix of the names,
    // config.json's fields); none: tapegrad's own layout
    std::optional<models::HfGpt2Info> gpt2_layout;
    // a run from a Llama / Qwen folder: the config.json it read, whose fields the run's config.json
    // keeps (rope_scaling, eos_token_id, ...); null for a run from scratch
    json::Value llama_config;
    // a LoRA run: what its adapter_config.json says (set by apply_lora); none: every weight trains
    std::optional<models::AdapterConfig> lora;
  };
  Origin origin;

 private:
  // The mean cross_entropy of a batch over its targets, x and y (B,T): the head and the loss in one
  // piece, or a chunk of rows at a time (--loss-chunk), in training and in evaluation alike.
  Tensor mean_loss(const Tensor& x, const Tensor& y, const Tensor& key_padding_mask);
  std::pair<double, double> mean_loss_and_bpb(const Tensor& split, const std::string& name, Generator& gen);
  std::vector<Batch> step_batches();  // a step's grad_accum micro-batches, drawn from batch_gen_
  void make_optimizer();  // AdamW over the parameters that require grad
  // What the constructors share: the data, the checks and the model (llama: a Llama / Qwen model of
  // that config, built without drawing its weights; nullptr: the options' architecture).
  void build(const std::string& text, const models::GPTConfig& config, const models::LlamaConfig* llama);

  TrainOptions options_;
  tokenizers::Tokenizer tokenizer_;
  std::vector<int64_t> bytes_per_id_;  // (V): the text bytes each token stands for
  Split data_;                                 // text runs
  std::optional<InstructionData> instructions_;  // instruction runs
  std::optional<ClassificationData> classification_;  // classification runs
  models::GPTConfig config_;
  std::optional<models::LlamaConfig> llama_;  // --arch llama or qwen3
  std::shared_ptr<models::CausalLM> model_;
  std::shared_ptr<models::ModelForSequenceClassification> classifier_;  // classification runs: model_ is its body
  std::unique_ptr<optim::AdamW> optimizer_;
  std::vector<Tensor> trained_;  // the parameters the optimizer updates (all, or the adapters)
  Generator batch_gen_;
  int64_t step_ = 0;
  int64_t peak_activations_ = 0;  // bytes: the most any step's activations took (memory_report)
};

}  // namespace tg::train
