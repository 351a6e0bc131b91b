// train/trainer.cpp — the training step and evaluation (trainer.h says what a step does; how a
// run is built, its tokenizer, model and optimizer, is trainer_setup.cpp).
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "autograd/ops.h"
#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "optim/clip_grad.h"
#include "optim/lr_scheduler.h"
#include "train/evaluate.h"

namespace tg::train {

namespace {

// How many of y's targets count (are not cross_entropy's ignore_index, -100).
int64_t count_targets(const Tensor& y) {
  const std::vector<int64_t> ids = y.tolist<int64_t>();
  return static_cast<int64_t>(std::count_if(ids.begin(), ids.end(), [](int64_t id) { return id != -100; }));
}

}  // namespace

Trainer::StepResult Trainer::train_step() {
  for (auto& group : optimizer_->param_groups()) group.lr = learning_rate(options_, step_);
  const std::vector<Batch> micro = step_batches();
  std::vector<int64_t> targets;  // each micro-batch's, and their sum
  for (const Batch& b : micro) targets.push_back(count_targets(b.y));
  const int64_t all_targets = std::accumulate(targets.begin(), targets.end(), int64_t{0});
  trained_model().train();
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


std::vector<Batch> Trainer::step_batches() {
  const int64_t B = options_.batch, N = options_.grad_accum;
  std::vector<Batch> micro;
  if (classification_) {  // N*B texts, each micro-batch padded to its longest
    const Tensor ix = randint(0, std::ssize(classification_->train), {N * B}, &batch_gen_);
    const std::vector<int64_t> picked = ix.tolist<int64_t>();
    for (int64_t k = 0; k < N; ++k) {
      const std::vector<int64_t> which(picked.begin() + k * B, picked.begin() + (k + 1) * B);
      micro.push_back(classification_batch(classification_->train, which, classification_->pad_id));
    }
    return micro;
  }
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

double learning_rate(const TrainOptions& o, int64_t step) {
  if (o.lr_schedule == "constant") return o.lr;
  const int64_t decay_start = o.decay_start > 0 ? o.decay_start : o.warmup;
  const double decay_lr = o.decay_lr >= 0 ? o.decay_lr : o.lr;
  if (step < o.warmup || (decay_start == o.warmup && decay_lr == o.lr))  // the plain schedule
    return o.lr * optim::warmup_cosine(o.warmup, o.steps, o.lr > 0 ? o.min_lr / o.lr : 0.0)(step);
  if (step < decay_start) return o.lr;  // held at the peak until the decay starts
  // (a rounding may put decay_lr a hair below min_lr: the factor stays at most 1)
  const double min_factor = decay_lr > 0 ? std::min(1.0, o.min_lr / decay_lr) : 1.0;
  return decay_lr * optim::warmup_cosine(decay_start, o.steps, min_factor)(step);
}

TrainOptions continued_schedule(const TrainOptions& planned, TrainOptions resumed, int64_t step) {
  const int64_t decay_start = planned.decay_start > 0 ? planned.decay_start : planned.warmup;
  if (resumed.lr_schedule != "cosine" || resumed.steps == planned.steps || step <= decay_start || step >= resumed.steps)
    return resumed;  // no step to come would change its rate
  resumed.decay_lr = learning_rate(planned, step);
  resumed.decay_start = step;
  return resumed;
}

MemoryReport Trainer::memory_report() const {
  MemoryReport m;
  for (const Tensor& p : trained_model().parameters()) {  // a tied weight is listed once
    m.parameters += static_cast<int64_t>(p.nbytes());
    if (p.grad().defined()) m.gradients += static_cast<int64_t>(p.grad().nbytes());
  }
  for (const auto& [name, state] : optimizer_->state_dict()) m.optimizer += static_cast<int64_t>(state.nbytes());
  m.activations = peak_activations_;
  m.peak_rss_mb = peak_rss_mb();
  return m;
}

Tensor Trainer::mean_loss(const Tensor& x, const Tensor& y, const Tensor& key_padding_mask) {
  if (classifier_) return cross_entropy(classifier_->forward(x, key_padding_mask), y);  // y: (B) labels
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

namespace {

// The first n examples of a split, in order: what evaluate reads of each.
template <class Example>
std::vector<Example> first_of(const std::vector<Example>& split, int64_t n) {
  return {split.begin(), split.begin() + std::min<std::ptrdiff_t>(std::ssize(split), n)};
}

}  // namespace

Trainer::Losses Trainer::evaluate() {
  NoGradGuard no_grad;
  model_->eval();
  Losses l;
  if (classification_) {  // the first eval_batches * batch texts of each split, in order
    AutocastGuard autocast(products_dtype(options_));
    const int64_t n = options_.eval_batches * options_.batch, pad = classification_->pad_id;
    const ClassifierEval train = evaluate_classifier(*classifier_, first_of(classification_->train, n), options_.batch, pad);
    const ClassifierEval val = evaluate_classifier(*classifier_, first_of(classification_->val, n), options_.batch, pad);
    const double none = std::nan("");
    l = {train.loss, val.loss, none, none, train.acc, val.acc};
    classifier_->train();
    return l;
  }
  if (instructions_) {  // the first eval_batches * batch examples of each split, in order
    AutocastGuard autocast(products_dtype(options_));
    const int64_t n = options_.eval_batches * options_.batch, pad = instructions_->pad_id;
    const TextEval train = evaluate_instructions(*model_, tokenizer_, first_of(instructions_->train, n), options_.batch, pad);
    const TextEval val = evaluate_instructions(*model_, tokenizer_, first_of(instructions_->val, n), options_.batch, pad);
    l = {train.loss, val.loss, train.bpb, val.bpb, std::nullopt, std::nullopt};
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
