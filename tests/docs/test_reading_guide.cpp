// tests/docs/test_reading_guide.cpp — the README's "Read the code" guide names files and
// functions that exist, so the guide cannot rot when code moves.
//
// Each stop of the guide is a numbered line ("1. ...") followed by its indented continuation
// lines. In a stop, a backticked path (`autograd/tensor.h`) must be a file of the repository,
// and a backticked name after it (`Tensor::view`, `softmax_reference`) must stand in the last
// path named before it. Other backticked words (`TG_FAST_KERNELS=0`, `x.t()`) are not names: a
// name is an identifier, possibly qualified with ::, possibly followed by ().
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(TG_REFERENCE_DIR) / ".." / "..";

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The section's numbered stops, each as one string (its continuation lines joined).
std::vector<std::string> guide_stops(const std::string& readme) {
  const size_t begin = readme.find("\n## Read the code\n");
  if (begin == std::string::npos) return {};
  const size_t end = readme.find("\n## ", begin + 1);
  std::istringstream section(readme.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
  std::vector<std::string> stops;
  const std::regex numbered("^[0-9]+\\. .*");
  bool in_stop = false;
  for (std::string line; std::getline(section, line);) {
    if (std::regex_match(line, numbered)) {
      stops.push_back(line);
      in_stop = true;
    } else if (in_stop && line.rfind("   ", 0) == 0) {
      stops.back() += " " + line;
    } else {
      in_stop = false;
    }
  }
  return stops;
}

bool is_path(const std::string& word) {
  return word.find('/') != std::string::npos && std::regex_match(word, std::regex("[A-Za-z0-9_./-]+\\.(h|cpp|py|md)"));
}

bool is_name(const std::string& word) {
  return std::regex_match(word, std::regex("[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_~][A-Za-z0-9_]*)*(\\(\\))?"));
}

TEST(ReadingGuide, EveryFileAndFunctionItNamesExists) {
  const std::string readme = read_all(kRoot / "README.md");
  const std::vector<std::string> stops = guide_stops(readme);
  ASSERT_GE(stops.size(), 8u) << "README.md: the \"## Read the code\" section should have 8-12 numbered stops";
  EXPECT_LE(stops.size(), 12u) << "README.md: the \"## Read the code\" section should have 8-12 numbered stops";
  const std::regex backticked("`([^`]+)`");
  int paths = 0, names = 0;
  for (const std::string& stop : stops) {
    std::string file, text;
    for (auto it = std::sregex_iterator(stop.begin(), stop.end(), backticked); it != std::sregex_iterator(); ++it) {
      const std::string word = (*it)[1].str();
      if (is_path(word)) {
        ++paths;
        file = word;
        EXPECT_TRUE(fs::is_regular_file(kRoot / file)) << "the guide names " << file << ", which does not exist\n"
                                                       << "in the stop: " << stop;
        text = read_all(kRoot / file);
      } else if (is_name(word) && !file.empty()) {
        ++names;
        const std::string name = word.size() > 2 && word.ends_with("()") ? word.substr(0, word.size() - 2) : word;
        EXPECT_NE(text.find(name), std::string::npos)
            << "the guide names " << name << " in " << file << ", which does not hold it\nin the stop: " << stop;
      }
    }
  }
  EXPECT_GE(paths, 8) << "the guide should name a file at each stop";
  EXPECT_GE(names, 8) << "the guide should name the function to read at each stop";
}

}  // namespace
