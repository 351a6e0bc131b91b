// config.json's keys against examples/pytorch/config_keys.json, the list the PyTorch side
// (train_gpt.py, tapegrad_run.py) declares and reads: a train_gpt flag that the Python side has
// not declared, as math it implements or as a setting it carries along, fails here, not in a
// user's hand-off.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "io/json.h"
#include "train/run_folder.h"
#include "train/corpus.h"
#include "test_util.h"

namespace tg {
namespace {

using Keys = std::set<std::string>;

Keys keys_of(const json::Value& object) {
  Keys out;
  for (const json::Member& m : object.as_object()) out.insert(m.key);
  return out;
}

Keys strings_of(const json::Value& array) {
  Keys out;
  for (const json::Value& v : array.as_array()) out.insert(v.as_string());
  return out;
}

std::string listed(const Keys& keys) {
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "(none)" : out;
}

// The keys in a but not in b, for a message.
std::string missing_from(const Keys& a, const Keys& b) {
  Keys out;
  for (const std::string& k : a)
    if (!b.count(k)) out.insert(k);
  return listed(out);
}

TEST(ConfigKeys, EveryKeyTrainGptWritesIsDeclaredByThePythonSide) {
  train::TrainOptions o;
  o.batch = 2;
  o.model.context_length = 8;
  o.model.emb_dim = 8;
  o.model.n_heads = 2;
  o.model.n_layers = 1;
  o.steps = 3;
  o.warmup = 1;
  test::TempFolder dir;
  train::Trainer trainer(o, train::builtin_corpus(4000, 3));
  train::save_run(trainer, dir.path);
  const json::Value config = json::parse_file((std::filesystem::path(dir.path) / "config.json").string());
  const json::Value declared = json::parse_file(std::string(TG_PYTORCH_DIR) + "/config_keys.json");

  const Keys math = strings_of(declared["train"]["math"]), carried = strings_of(declared["train"]["carried"]);
  Keys both;
  for (const std::string& k : math)
    if (carried.count(k)) both.insert(k);
  EXPECT_TRUE(both.empty()) << "config_keys.json lists these as math and as carried: " << listed(both);
  Keys train = math;
  train.insert(carried.begin(), carried.end());

  EXPECT_EQ(keys_of(config), strings_of(declared["top"]))
      << "config.json's own keys; not declared: " << missing_from(keys_of(config), strings_of(declared["top"]));
  EXPECT_EQ(keys_of(config["model"]), strings_of(declared["model"]))
      << "\"model\": written but not declared: " << missing_from(keys_of(config["model"]), strings_of(declared["model"]))
      << "; declared but not written: " << missing_from(strings_of(declared["model"]), keys_of(config["model"]));
  EXPECT_EQ(keys_of(config["train"]), train)
      << "\"train\": written but not declared in examples/pytorch/config_keys.json: "
      << missing_from(keys_of(config["train"]), train)
      << "; declared but not written: " << missing_from(train, keys_of(config["train"]));
}

}  // namespace
}  // namespace tg
