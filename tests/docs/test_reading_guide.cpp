// tests/docs/test_reading_guide.cpp — the README's readings of the code name files and functions
// that exist, so they cannot rot when code moves.
//
// The README has two readings: "## Read the code" (its numbered stops, up to the next heading of
// any level) and "### A second reading: from GPT-2 to a fine-tune". Each stop is a numbered line
// ("1. ...") followed by its indented continuation lines. In a stop, a backticked path
// (`autograd/tensor.h`) must be a file of the repository, and a backticked name after it
// (`Tensor::view`, `softmax_reference`) must stand in the last path named before it. Other
// backticked words (`TG_FAST_KERNELS=0`, `x.t()`) are not names: a name is an identifier,
// possibly qualified with ::, possibly followed by ().
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines after the heading line that starts with `heading`, up to the next heading of any level.
std::vector<std::string> section(const std::string& markdown, const std::string& heading) {
  const std::vector<std::string> lines = lines_of(markdown);
  const std::regex any_heading("^#{1,6} .*");
  std::vector<std::string> out;
  bool inside = false;
  for (const std::string& line : lines) {
    if (inside && std::regex_match(line, any_heading)) break;
    if (inside) out.push_back(line);
    if (!inside && line.starts_with(heading)) inside = true;
  }
  return out;
}

// The section's numbered stops, each as one string (its continuation lines joined).
std::vector<std::string> numbered_stops(const std::vector<std::string>& lines) {
  std::vector<std::string> stops;
  const std::regex numbered("^[0-9]+\\. .*");
  bool in_stop = false;
  for (const std::string& line : lines) {
    if (std::regex_match(line, numbered)) {
      stops.push_back(line);
      in_stop = true;
    } else if (in_stop && line.starts_with("   ")) {
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

struct Counts {
  int paths = 0, names = 0;
};

// Checks every stop (see the top of the file); `reading` names the reading in messages.
Counts check_stops(const std::vector<std::string>& stops, const std::string& reading) {
  const std::regex backticked("`([^`]+)`");
  Counts counts;
  for (const std::string& stop : stops) {
    std::string file, text;
    for (auto it = std::sregex_iterator(stop.begin(), stop.end(), backticked); it != std::sregex_iterator(); ++it) {
      const std::string word = (*it)[1].str();
      if (is_path(word)) {
        ++counts.paths;
        file = word;
        EXPECT_TRUE(fs::is_regular_file(kRoot / file))
            << reading << " names " << file << ", which does not exist\nin the stop: " << stop;
        text = read_all(kRoot / file);
      } else if (is_name(word) && !file.empty()) {
        ++counts.names;
        const std::string name = word.size() > 2 && word.ends_with("()") ? word.substr(0, word.size() - 2) : word;
        EXPECT_NE(text.find(name), std::string::npos)
            << reading << " names " << name << " in " << file << ", which does not hold it\nin the stop: " << stop;
      }
    }
  }
  return counts;
}

TEST(ReadingGuide, EveryFileAndFunctionItNamesExists) {
  const std::string readme = read_all(kRoot / "README.md");
  const std::vector<std::string> stops = numbered_stops(section(readme, "## Read the code"));
  ASSERT_GE(stops.size(), 8u) << "README.md: the \"## Read the code\" section should have 8-12 numbered stops";
  EXPECT_LE(stops.size(), 12u) << "README.md: the \"## Read the code\" section should have 8-12 numbered stops";
  const Counts counts = check_stops(stops, "README.md's \"Read the code\"");
  EXPECT_GE(counts.paths, 8) << "the guide should name a file at each stop";
  EXPECT_GE(counts.names, 8) << "the guide should name the function to read at each stop";
}

TEST(ReadingGuide, SecondReadingFromGpt2ToAFineTune) {
  const std::string readme = read_all(kRoot / "README.md");
  const std::string heading = "### A second reading: from GPT-2 to a fine-tune";
  const std::vector<std::string> lines = section(readme, heading);
  ASSERT_FALSE(lines.empty()) << "README.md has no \"" << heading << "\" section (under \"## Read the code\")";
  const std::vector<std::string> stops = numbered_stops(lines);
  ASSERT_GE(stops.size(), 4u) << "README.md: \"" << heading << "\" should have 4-7 numbered stops";
  EXPECT_LE(stops.size(), 7u) << "README.md: \"" << heading << "\" should have 4-7 numbered stops";
  const Counts counts = check_stops(stops, "README.md's second reading");
  EXPECT_GE(counts.paths, static_cast<int>(stops.size())) << "the second reading should name a file at each stop";
  EXPECT_GE(counts.names, static_cast<int>(stops.size())) << "the second reading should name what to read at each stop";
  // The two readings are told apart: no stop of the first is one of the second's.
  const std::vector<std::string> first = numbered_stops(section(readme, "## Read the code"));
  for (const std::string& stop : stops)
    EXPECT_EQ(std::find(first.begin(), first.end(), stop), first.end()) << "counted in both readings: " << stop;
}

}  // namespace
