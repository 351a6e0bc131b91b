// examples/plot_runs.cpp — several train_gpt runs in one picture: a column of their loss.csv
// against steps or training time, as one SVG line plot (io/plots.h).
//
//   ./build/examples/plot_runs --runs runs/char,runs/bpe512 --names char,BPE-512 --y val_bpb --x elapsed_s --out cmp.svg
//
// Rows without the column (val_loss, train_bpb and val_bpb are there only where the run
// evaluated; task_acc and task_acc_norm where it scored its --eval-task) are left out. Runs of different tokenizers compare on bits per byte, not on loss.
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "io/flags.h"
#include "io/plots.h"
#include "train/run_log.h"

using namespace tg;

namespace {

struct PlotOptions {
  std::string runs, names, out = "runs.svg", y = "val_bpb", x = "step", title;
};

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) out.push_back(item);
  return out;
}

std::optional<double> column(const train::LossRow& r, const std::string& name) {
  if (name == "train_loss") return r.train_loss;
  if (name == "val_loss") return r.val_loss;
  if (name == "train_bpb") return r.train_bpb;
  if (name == "val_bpb") return r.val_bpb;
  if (name == "lr") return r.lr;
  if (name == "task_acc") return r.task_acc;
  if (name == "task_acc_norm") return r.task_acc_norm;
  return std::nullopt;
}

double x_of(const train::LossRow& r, const std::string& name) {
  return name == "elapsed_s" ? r.elapsed_s : static_cast<double>(r.step);
}

int run(const PlotOptions& o) {
  const std::vector<std::string> runs = comma_list(o.runs);
  std::vector<std::string> names = o.names.empty() ? runs : comma_list(o.names);
  if (runs.empty()) throw UsageError("--runs: give one or more run folders, separated by commas");
  if (names.size() != runs.size())
    throw UsageError("--names: " + std::to_string(names.size()) + " names for " + std::to_string(runs.size()) +
                     " runs");
  std::vector<Series> series;
  for (size_t i = 0; i < runs.size(); ++i) {
    const train::RunLog log = train::RunLog::read(runs[i], INT64_MAX);
    Series s{names[i], {}};
    for (const train::LossRow& r : log.rows())
      if (const std::optional<double> y = column(r, o.y)) s.points.emplace_back(x_of(r, o.x), *y);
    if (s.points.empty())
      throw tg::Error(runs[i] + "/loss.csv: no row has " + o.y +
                      (o.y.starts_with("task_") ? " (the run scored no task: train_gpt --eval-task FORMAT:FILE)" : ""));
    series.push_back(std::move(s));
  }
  const std::string x_label = o.x == "elapsed_s" ? "training time (s)" : "step";
  write_line_plot_svg(o.out, series, o.title.empty() ? o.y : o.title, x_label, o.y);
  std::cout << "plot_runs: wrote " << o.out << " (" << series.size() << " runs)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  PlotOptions o;
  const Program program{"plot_runs",
                        "Draws a column of several train_gpt runs' loss.csv in one SVG line plot.",
                        {text_flag("runs", &o.runs, "run folders, separated by commas"),
                         text_flag("names", &o.names, "a name per run for the legend (default: the folders)"),
                         text_flag("y", &o.y, "the column to draw",
                                   {"val_bpb", "train_bpb", "val_loss", "train_loss", "lr", "task_acc", "task_acc_norm"}),
                         text_flag("x", &o.x, "against steps or training time", {"step", "elapsed_s"}),
                         text_flag("title", &o.title, "the picture's title (default: the column)"),
                         text_flag("out", &o.out, "the SVG file to write")}};
  return run_program(program, argc, argv, [&] { return run(o); });
}
