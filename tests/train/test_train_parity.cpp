// The training loop against PyTorch (tests/reference/train_torch.json, made by
// make_train_reference.py with examples/pytorch/train_gpt.py): from the same seed and text, the
// loss of every step and the final evaluation agree within 1e-4 relative — 100 steps with the
// cosine schedule and clipping, 100 with a constant lr, 20 with dropout (the same masks), 30
// with --grad-accum 2, 30 with --tie-weights.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "io/json.h"
#include "autograd/runtime/parallel.h"
#include "train/corpus.h"
#include "train/trainer.h"

namespace tg {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double hex_double(const json::Value& v) { return std::bit_cast<double>(std::stoull(v.as_string(), nullptr, 16)); }

const std::string& parity_corpus() {
  static const std::string text = read_file(std::string(TG_REFERENCE_DIR) + "/parity_corpus.txt");
  return text;
}

TEST(TrainParity, ParityCorpusIsTheBuiltinCorpus) { EXPECT_EQ(parity_corpus(), train::builtin_corpus(20000, 7)); }

// The run's flags (as train_gpt takes them) applied to the defaults.
train::TrainOptions options_of(const json::Value& run) {
  train::TrainOptions o;
  std::vector<std::string> args = {"--steps", std::to_string(run["steps"].as_int64())};
  const json::Value& flags = run["flags"];
  for (const json::Member& flag : flags.as_object()) {
    std::string name = flag.key;
    for (char& c : name) c = c == '_' ? '-' : c;
    args.push_back("--" + name);
    if (flag.value.is_bool()) continue;  // a switch (true): the flag alone
    args.push_back(flag.value.is_string() ? flag.value.as_string() : flag.value.number_text());
  }
  bool help = false;
  parse_flags(train::option_fields(o), args, &help);
  return o;
}

TEST(TrainParity, LossOfEveryStepEqualsPyTorchs) {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/train_torch.json");
  const json::Value& runs = doc["runs"];
  ASSERT_EQ(runs.size(), 5u);
  for (size_t r = 0; r < runs.size(); ++r) {
    const json::Value& run = runs[r];
    const std::string id = run["id"].as_string();
    train::Trainer trainer(options_of(run), parity_corpus());
    const json::Value& losses = run["losses"];
    double worst = 0;
    for (size_t s = 0; s < losses.size(); ++s) {
      const double got = trainer.train_step().loss, want = hex_double(losses[s]);
      worst = std::max(worst, std::abs(got - want) / std::abs(want));
      ASSERT_LE(std::abs(got - want), 1e-4 * std::abs(want)) << id << " step " << s << ": " << got << " vs PyTorch " << want;
    }
    const train::Trainer::Losses e = trainer.evaluate();
    EXPECT_LE(std::abs(e.train - hex_double(run["eval"][0])), 1e-4 * hex_double(run["eval"][0])) << id;
    EXPECT_LE(std::abs(e.val - hex_double(run["eval"][1])), 1e-4 * hex_double(run["eval"][1])) << id;
    std::cout << "  " << id << ": " << losses.size() << " steps, worst relative difference " << worst << "\n";
  }
}

}  // namespace
}  // namespace tg
