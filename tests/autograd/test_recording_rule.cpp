// The recording rule, checked on the sources: a backward function reads tensors only through
// its entry's saved list (version-checked when read), so no backward lambda may capture a
// Tensor, by name or through a default capture ([&], [=]).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "a, &b, c = x" -> {"a", "b", "c"}; "&" and "=" stay as they are (default captures).
std::vector<std::string> capture_names(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = std::regex_replace(item, std::regex("^\\s+|\\s+$"), "");
    if (item == "&" || item == "=" || item == "this") {
      names.push_back(item);
      continue;
    }
    item = std::regex_replace(item, std::regex("^&"), "");
    item = std::regex_replace(item, std::regex("\\s*=.*$"), "");
    if (!item.empty()) names.push_back(item);
  }
  return names;
}

TEST(RecordingRule, NoBackwardLambdaCapturesATensor) {
  const fs::path root = fs::path(TG_REFERENCE_DIR) / ".." / "..";
  const std::regex backward_lambda("\\[([^\\]]*)\\]\\s*\\(const BackwardArgs&");
  int lambdas = 0;
  for (const char* folder : {"autograd", "nn", "optim"}) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (entry.path().extension() != ".cpp" && entry.path().extension() != ".h") continue;
      const std::string text = read_all(entry.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), backward_lambda); it != std::sregex_iterator();
           ++it) {
        ++lambdas;
        for (const std::string& name : capture_names((*it)[1].str())) {
          EXPECT_TRUE(name != "&" && name != "=" && name != "this")
              << entry.path() << ": a backward lambda has the default capture [" << name << "]";
          const std::regex declared_tensor("\\b(Tensor|Grads)\\s*&?\\s+" + name + "\\b|std::vector<Tensor>\\s*&?\\s+" +
                                           name + "\\b");
          EXPECT_FALSE(std::regex_search(text, declared_tensor))
              << entry.path() << ": a backward lambda captures '" << name
              << "', which this file declares as a Tensor; save it with record's saved list instead";
        }
      }
    }
  }
  EXPECT_GT(lambdas, 40) << "the pattern no longer finds the backward lambdas";
}

TEST(RecordingRule, EveryBackwardCallsItsArgumentCtx) {
  const fs::path root = fs::path(TG_REFERENCE_DIR) / ".." / "..";
  const std::regex named_argument("\\(const BackwardArgs&\\s*(\\w+)\\)");
  int callbacks = 0;
  for (const char* folder : {"autograd", "nn", "optim"}) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (entry.path().extension() != ".cpp" && entry.path().extension() != ".h") continue;
      const std::string text = read_all(entry.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), named_argument); it != std::sregex_iterator();
           ++it) {
        ++callbacks;
        EXPECT_EQ((*it)[1].str(), "ctx") << entry.path() << ": a backward callback names its BackwardArgs '"
                                         << (*it)[1].str() << "'; every backward calls it ctx";
      }
    }
  }
  EXPECT_GT(callbacks, 40) << "the pattern no longer finds the backward callbacks";
}

}  // namespace
