// The recording rule, checked on the sources: a backward function reads tensors only through
// its entry's saved list (version-checked when read), so no backward lambda may capture a
// Tensor, by name or through a default capture ([&], [=]); and a storage's version changes in
// one place only, mark_written (autograd/tape_inplace.cpp).
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

// Calls on_match(path, text, match) for every match of `pattern` in the library's sources
// (the .cpp and .h files under autograd/, nn/ and optim/), relative paths from the repository.
template <class OnMatch>
void for_each_match_in_library(const std::regex& pattern, OnMatch on_match) {
  const fs::path root = fs::path(TG_REFERENCE_DIR) / ".." / "..";
  for (const char* folder : {"autograd", "nn", "optim"}) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (entry.path().extension() != ".cpp" && entry.path().extension() != ".h") continue;
      const std::string text = read_all(entry.path());
      const fs::path path = fs::relative(entry.path(), root);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
        on_match(path, text, *it);
    }
  }
}

TEST(RecordingRule, NoBackwardLambdaCapturesATensor) {
  int lambdas = 0;
  for_each_match_in_library(std::regex("\\[([^\\]]*)\\]\\s*\\(const BackwardArgs&"),
                            [&](const fs::path& path, const std::string& text, const std::smatch& lambda) {
    ++lambdas;
    for (const std::string& name : capture_names(lambda[1].str())) {
      EXPECT_TRUE(name != "&" && name != "=" && name != "this")
          << path << ": a backward lambda has the default capture [" << name << "]";
      const std::regex declared_tensor("\\b(Tensor|Grads)\\s*&?\\s+" + name + "\\b|std::vector<Tensor>\\s*&?\\s+" +
                                       name + "\\b");
      EXPECT_FALSE(std::regex_search(text, declared_tensor))
          << path << ": a backward lambda captures '" << name
          << "', which this file declares as a Tensor; save it with record's saved list instead";
    }
  });
  EXPECT_GT(lambdas, 40) << "the pattern no longer finds the backward lambdas";
}

TEST(RecordingRule, EveryBackwardCallsItsArgumentCtx) {
  int callbacks = 0;
  for_each_match_in_library(std::regex("\\(const BackwardArgs&\\s*(\\w+)\\)"),
                            [&](const fs::path& path, const std::string&, const std::smatch& argument) {
    ++callbacks;
    EXPECT_EQ(argument[1].str(), "ctx") << path << ": a backward callback names its BackwardArgs '"
                                        << argument[1].str() << "'; every backward calls it ctx";
  });
  EXPECT_GT(callbacks, 40) << "the pattern no longer finds the backward callbacks";
}

TEST(RecordingRule, OnlyMarkWrittenChangesAVersion) {
  const fs::path home = fs::path("autograd") / "tape_inplace.cpp";  // where mark_written lives
  // version++, ++x.version, version = ..., version += ... (through . or ->), not version == ...
  const std::regex write("(\\.|->)version\\s*(\\+\\+|--|[-+]?=(?!=))|(\\+\\+|--)[\\w().>\\[\\]-]*(\\.|->)version\\b");
  int in_home = 0;
  for_each_match_in_library(write, [&](const fs::path& path, const std::string&, const std::smatch& match) {
    if (path == home) ++in_home;
    else ADD_FAILURE() << path << ": '" << match.str() << "' changes a version by hand; call mark_written";
  });
  EXPECT_EQ(in_home, 1) << "the pattern no longer finds the write in mark_written";
}

}  // namespace
