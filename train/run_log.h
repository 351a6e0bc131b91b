// train/run_log.h — what train_gpt reports while it runs and leaves in its folder:
//
//   loss.csv      a row per step: step,train_loss,val_loss,lr,tokens_per_s,elapsed_s,train_bpb,val_bpb
//                 (train_loss is that step's batch loss; losses with 9 significant digits, so
//                 runs compare bit for bit; val_loss is empty on rows without an evaluation),
//                 then task_acc,task_acc_norm when the run scores a task (--eval-task), and
//                 train_acc,val_acc for a classifier (--task classify)
//   loss.svg      the train loss of every step and the val loss of every evaluation against step
//   summary.json  final train and val loss (and task accuracy, with --eval-task), steps, tokens/s, elapsed seconds, peak RSS in MB,
//                 which kernels ran (kernels_mode) and the precision of the products (fp32 or
//                 bf16; on a resumed run, its last part's)
//   the terminal  a progress bar (step, loss, tokens/s, elapsed, ETA) on a terminal; plain log
//                 lines when the output is a file or a pipe
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg::train {

// Which code the ops run, for reports: "fast", or "reference" when tg::fast_kernels() is off
// (TG_FAST_KERNELS=0; autograd/fast_kernels.h). Not a setting of the math: both give the same
// numbers to float rounding, so it is reported but not saved with a run's configuration.
const char* kernels_mode();
// How the matrix products run: "fp32", or for "bf16" the kernel too, "bf16 (avx512_bf16 kernel)",
// or on a CPU without AVX512_BF16 "bf16 (fma kernel: this CPU has no AVX512_BF16; the same
// numbers, slower)" (kernels/bf16_gemm.h).
std::string precision_mode(const std::string& precision);
// With --precision bf16 and the fast kernels, where bfloat16 products run slower than float32
// ones on this CPU (kernels::product_speeds, measured once): one line that says so, e.g.
// "train_gpt: note: bfloat16 products run at 84 GFLOP/s here, float32 at 152; --precision fp32 is
// faster on this CPU". Else "".
std::string bf16_speed_note(const std::string& precision);

struct LossRow {
  int64_t step;  // steps done (1 after the first)
  double train_loss;
  std::optional<double> val_loss;
  double lr, tokens_per_s, elapsed_s;
  std::optional<double> eval_train_loss;  // the evaluation's train-split loss (summary only)
  std::optional<double> train_bpb, val_bpb;  // the evaluation's bits per byte (Trainer::Losses)
  std::optional<double> task_acc, task_acc_norm;  // the evaluation's --eval-task score
  std::optional<double> train_acc, val_acc;  // a classifier's accuracies (--task classify)
};

class RunLog {
 public:
  // The rows of dir/loss.csv up to and including step (for a resumed run). Blank lines, CRLF
  // line ends and trailing spaces (an editor's) are passed over; other errors name the file and
  // the line.
  static RunLog read(const std::string& dir, int64_t up_to_step);
  // For a resumed run: read(dir, up_to_step), or, when dir has no loss.csv (a run killed between
  // saving its checkpoint and its log), an empty log, with *note saying so: the new loss.csv
  // starts after the resumed step.
  static RunLog read_for_resume(const std::string& dir, int64_t up_to_step, std::string* note);
  void add(const LossRow& row) { rows_.push_back(row); }
  const std::vector<LossRow>& rows() const { return rows_; }
  double elapsed_s() const { return rows_.empty() ? 0.0 : rows_.back().elapsed_s; }
  void write(const std::string& dir) const;  // loss.csv and loss.svg (each atomically)
  // summary.json (atomically); memory_json, when given, is its "memory" member (MemoryReport::json),
  // test_json its "test" member (a classifier's test split: {"examples", "loss", "acc", "confusion"})
  void write_summary(const std::string& dir, const std::string& precision, const std::string& memory_json = "",
                     const std::string& test_json = "") const;
  std::string csv() const;

 private:
  std::vector<LossRow> rows_;
};

class Progress {
 public:
  Progress(int64_t total_steps, int64_t first_step, double elapsed_before, bool terminal);
  double elapsed_s() const;                 // including the time before a resume
  void add_tokens(int64_t tokens);          // a step's tokens (batches of examples vary in length)
  double tokens_per_s() const;              // over this process's steps
  void update(int64_t step, double loss);   // redraw the bar (terminal) or log every so often
  void eval_line(const LossRow& evaluated);  // its step, losses, bits per byte and task score
  void message(const std::string& line);    // a line of its own, above the bar on a terminal
  void finish();

 private:
  int64_t total_, first_, tokens_ = 0;
  double elapsed_before_;
  bool terminal_;
  double start_;  // seconds on the steady clock
  double last_log_ = -1e9;
};

}  // namespace tg::train
