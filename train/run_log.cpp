// train/run_log.cpp — loss.csv, summary.json and the progress display.
#include "train/run_log.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "io/atomic_file.h"
#include "autograd/error.h"
#include "autograd/fast_kernels.h"
#include "io/json.h"
#include "autograd/kernels/gemm.h"
#include "autograd/runtime/memory.h"
#include "io/plots.h"
#include "io/user_file.h"

namespace tg::train {

namespace {

const char* const kHeader = "step,train_loss,val_loss,lr,tokens_per_s,elapsed_s,train_bpb,val_bpb";
// loss.csv of runs from before bits per byte: read on resume, rewritten with the new columns
const char* const kHeaderBeforeBpb = "step,train_loss,val_loss,lr,tokens_per_s,elapsed_s";
// The columns after kHeader's, each written when any row has a value for it, in this order: a
// task's score (--eval-task), a classifier's accuracies (--task classify).
struct OptionalColumn {
  const char* name;
  std::optional<double> LossRow::*value;
};
const OptionalColumn kOptionalColumns[] = {{"task_acc", &LossRow::task_acc},
                                           {"task_acc_norm", &LossRow::task_acc_norm},
                                           {"train_acc", &LossRow::train_acc},
                                           {"val_acc", &LossRow::val_acc}};

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string clock_str(double seconds) {  // 1:05:09 or 5:09
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60), (long long)(s % 60));
  else std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

}  // namespace

std::string RunLog::csv() const {
  std::vector<const OptionalColumn*> extra;  // the optional columns some row has
  for (const OptionalColumn& c : kOptionalColumns)
    if (std::any_of(rows_.begin(), rows_.end(), [&](const LossRow& r) { return (r.*c.value).has_value(); }))
      extra.push_back(&c);
  std::string out = kHeader;
  for (const OptionalColumn* c : extra) out += std::string(",") + c->name;
  out += "\n";
  auto optional = [](std::optional<double> v) { return v ? fmt("%.9g", *v) : std::string(); };
  for (const LossRow& r : rows_) {
    out += std::to_string(r.step) + "," + fmt("%.9g", r.train_loss) + "," + optional(r.val_loss) + "," +
           fmt("%.9g", r.lr) + "," + fmt("%.1f", r.tokens_per_s) + "," + fmt("%.3f", r.elapsed_s) + "," +
           optional(r.train_bpb) + "," + optional(r.val_bpb);
    for (const OptionalColumn* c : extra) out.append(",").append(optional(r.*c->value));
    out += "\n";
  }
  return out;
}

void RunLog::write(const std::string& dir) const {
  write_file_atomically(path_in(dir, "loss.csv"), csv(), "train_gpt");
  Series train{"train (batch)", {}}, val{"val", {}};
  for (const LossRow& r : rows_) {
    train.points.emplace_back(static_cast<double>(r.step), r.train_loss);
    if (r.val_loss) val.points.emplace_back(static_cast<double>(r.step), *r.val_loss);
  }
  std::vector<Series> series = {train};
  if (!val.points.empty()) series.push_back(val);
  write_line_plot_svg(path_in(dir, "loss.svg"), series, "train_gpt: loss", "step", "cross-entropy loss");
}

RunLog RunLog::read(const std::string& dir, int64_t up_to_step) {
  const std::string path = path_in(dir, "loss.csv");
  std::istringstream in(read_user_file(path));
  RunLog log;
  std::string line;
  int line_no = 0;
  size_t columns = 8;
  std::string header = kHeader;
  std::vector<const OptionalColumn*> extra;  // the header's optional columns, in its order
  bool header_read = false;
  while (std::getline(in, line)) {
    ++line_no;
    // an editor's touch: CRLF line ends, trailing spaces, blank lines (a last newline too many)
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty()) continue;
    if (!header_read) {
      header_read = true;
      header = line;
      if (line == kHeaderBeforeBpb) {
        columns = 6;
        continue;
      }
      std::vector<std::string> names;
      std::stringstream ss(line);
      for (std::string name; std::getline(ss, name, ',');) names.push_back(name);
      std::string base;
      for (size_t k = 0; k < std::min<size_t>(8, names.size()); ++k) base += (k ? "," : "") + names[k];
      // kHeader, then optional columns in kOptionalColumns's order, each once
      size_t next = 0;
      bool known = base == kHeader;
      for (size_t k = 8; known && k < names.size(); ++k) {
        while (next < std::size(kOptionalColumns) && names[k] != kOptionalColumns[next].name) ++next;
        known = next < std::size(kOptionalColumns);
        if (known) extra.push_back(&kOptionalColumns[next++]);
      }
      if (!known) {
        std::string expected = kHeader;
        for (const OptionalColumn& c : kOptionalColumns) expected += std::string("[,") + c.name + "]";
        throw Error(path + ": line " + std::to_string(line_no) + ": expected the header " + expected + ", got '" + line + "'");
      }
      columns = names.size();
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (line.back() == ',') cells.push_back("");  // not empty: blank lines were skipped
    try {
      if (cells.size() != columns) throw std::invalid_argument("expected " + std::to_string(columns) + " values");
      LossRow r;
      r.step = std::stoll(cells[0]);
      r.train_loss = std::stod(cells[1]);
      if (!cells[2].empty()) r.val_loss = std::stod(cells[2]);
      r.lr = std::stod(cells[3]);
      r.tokens_per_s = std::stod(cells[4]);
      r.elapsed_s = std::stod(cells[5]);
      if (columns >= 8 && !cells[6].empty()) r.train_bpb = std::stod(cells[6]);
      if (columns >= 8 && !cells[7].empty()) r.val_bpb = std::stod(cells[7]);
      for (size_t k = 0; k < extra.size(); ++k)
        if (!cells[8 + k].empty()) r.*extra[k]->value = std::stod(cells[8 + k]);
      if (r.step <= up_to_step) log.rows_.push_back(r);
    } catch (const std::exception&) {
      throw Error(path + ": line " + std::to_string(line_no) + ": expected " + header + ", got '" + line + "'");
    }
  }
  return log;
}

RunLog RunLog::read_for_resume(const std::string& dir, int64_t up_to_step, std::string* note) {
  std::error_code ec;
  if (std::filesystem::exists(path_in(dir, "loss.csv"), ec) || ec) return read(dir, up_to_step);
  *note = "train_gpt: " + path_in(dir, "loss.csv") + " is missing (a save cut short before it was written): the " +
          "checkpoint resumes, and a new loss.csv starts after step " + std::to_string(up_to_step) +
          " (its elapsed_s counts from 0)";
  return RunLog();
}

const char* kernels_mode() { return fast_kernels() ? "fast" : "reference"; }

std::string precision_mode(const std::string& precision) {
  if (precision != "bf16") return precision;
  const kernels::bf16_gemm::Kernel kernel = kernels::bf16_kernel();
  std::string mode = std::string("bf16 (") + kernels::bf16_gemm::kernel_name(kernel) + " kernel";
  if (!kernels::bf16_gemm::kernel_available(kernels::bf16_gemm::Kernel::kAvx512Bf16))
    mode += ": this CPU has no AVX512_BF16; the same numbers, slower";
  return mode + ")";
}

std::string bf16_speed_note(const std::string& precision) {
  if (precision != "bf16" || !fast_kernels()) return "";
  const kernels::ProductSpeeds& speed = kernels::product_speeds();
  if (speed.bfloat16_gflops >= speed.float32_gflops) return "";
  char line[200];
  std::snprintf(line, sizeof line,
                "train_gpt: note: bfloat16 products run at %.0f GFLOP/s here, float32 at %.0f; --precision fp32 is "
                "faster on this CPU",
                speed.bfloat16_gflops, speed.float32_gflops);
  return line;
}

void RunLog::write_summary(const std::string& dir, const std::string& precision, const std::string& memory_json,
                           const std::string& test_json) const {
  std::optional<double> train, val, train_bpb, val_bpb, task_acc, task_acc_norm, train_acc, val_acc;
  for (const LossRow& r : rows_) {
    if (r.train_acc) train_acc = r.train_acc;
    if (r.val_acc) val_acc = r.val_acc;
    if (r.task_acc) task_acc = r.task_acc;
    if (r.task_acc_norm) task_acc_norm = r.task_acc_norm;
    if (r.val_loss) val = r.val_loss;
    if (r.eval_train_loss) train = r.eval_train_loss;
    if (r.train_bpb) train_bpb = r.train_bpb;
    if (r.val_bpb) val_bpb = r.val_bpb;
  }
  // A loss that is inf or nan (finite weights whose outputs overflow) is null: JSON has neither,
  // and the run, saved already, still ends with its summary.
  for (std::optional<double>* v : {&train, &val, &train_bpb, &val_bpb})
    if (*v && !std::isfinite(**v)) v->reset();
  const int64_t steps = rows_.empty() ? 0 : rows_.back().step;
  const std::optional<double> tokens_per_s =
      rows_.empty() ? std::nullopt : std::optional(json::round_to(rows_.back().tokens_per_s, 1));
  json::Writer summary(json::Layout::Pretty);  // losses in full; timings to the digits that are not noise
  summary.field("steps", steps)
      .field("final_train_loss", train)
      .field("final_val_loss", val)
      .field("final_train_bpb", train_bpb)
      .field("final_val_bpb", val_bpb);
  if (task_acc) summary.field("final_task_acc", task_acc).field("final_task_acc_norm", task_acc_norm);
  if (train_acc) summary.field("final_train_acc", train_acc).field("final_val_acc", val_acc);
  if (!test_json.empty()) summary.embed("test", test_json);
  summary
      .field("tokens_per_s", tokens_per_s)
      .field("elapsed_s", json::round_to(elapsed_s(), 3))
      .field("peak_rss_mb", json::round_to(peak_rss_mb(), 1))
      .field("kernels", kernels_mode())
      .field("precision", precision);
  if (!memory_json.empty()) summary.embed("memory", memory_json);
  write_file_atomically(path_in(dir, "summary.json"), summary.str() + "\n", "train_gpt");
}

Progress::Progress(int64_t total_steps, int64_t first_step, double elapsed_before, bool terminal)
    : total_(total_steps), first_(first_step), elapsed_before_(elapsed_before), terminal_(terminal), start_(now_s()) {}

double Progress::elapsed_s() const { return elapsed_before_ + (now_s() - start_); }

void Progress::add_tokens(int64_t tokens) { tokens_ += tokens; }

double Progress::tokens_per_s() const {
  const double t = now_s() - start_;
  return t > 0 ? static_cast<double>(tokens_) / t : 0.0;
}

void Progress::update(int64_t step, double loss) {
  const double t = now_s() - start_;
  const double per_step = step > first_ ? t / static_cast<double>(step - first_) : 0.0;
  const std::string eta = clock_str(per_step * static_cast<double>(total_ - step));
  if (terminal_) {
    const int width = 24, filled = static_cast<int>(width * step / std::max<int64_t>(1, total_));
    std::printf("\r  step %lld/%lld [%s%s] loss %.4f | %.0f tok/s | %s elapsed | ETA %s   ", (long long)step,
                (long long)total_, std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), loss,
                tokens_per_s(), clock_str(elapsed_s()).c_str(), eta.c_str());
    std::fflush(stdout);
  } else if (t - last_log_ >= 10.0 || step == total_) {  // a line every 10 s
    last_log_ = t;
    std::printf("step %lld/%lld loss %.4f %.0f tok/s elapsed %s ETA %s\n", (long long)step, (long long)total_, loss,
                tokens_per_s(), clock_str(elapsed_s()).c_str(), eta.c_str());
    std::fflush(stdout);
  }
}

void Progress::eval_line(const LossRow& r) {
  char line[256];
  if (r.val_acc) {  // a classifier: accuracies, no bits per byte
    std::snprintf(line, sizeof line, "step %lld: train loss %.4f, val loss %.4f, train acc %.4f, val acc %.4f",
                  (long long)r.step, r.eval_train_loss.value_or(NAN), r.val_loss.value_or(NAN),
                  r.train_acc.value_or(NAN), *r.val_acc);
  } else {
    std::snprintf(line, sizeof line, "step %lld: train loss %.4f, val loss %.4f, val bpb %.4f", (long long)r.step,
                  r.eval_train_loss.value_or(NAN), r.val_loss.value_or(NAN), r.val_bpb.value_or(NAN));
  }
  std::string text = line;
  if (r.task_acc) {
    std::snprintf(line, sizeof line, ", task acc %.4f, acc_norm %.4f", *r.task_acc, r.task_acc_norm.value_or(NAN));
    text += line;
  }
  message(text + " (checkpoint saved)");
}

void Progress::message(const std::string& line) {
  std::printf("%s%s\n", terminal_ ? "\r\x1b[K" : "", line.c_str());
  std::fflush(stdout);
}

void Progress::finish() {
  if (terminal_) std::printf("\n");
}

}  // namespace tg::train
