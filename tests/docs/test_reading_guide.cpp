// tests/docs/test_reading_guide.cpp — the README's readings of the code, and the paths the
// source's comments name, lead to files and functions that exist, so neither can rot when code
// moves.
//
// The README has two readings: "## Read the code" (its numbered stops, up to the next heading of
// any level) and "### A second reading: from GPT-2 to a fine-tune". Each stop is a numbered line
// ("1. ...") followed by its indented continuation lines. In a stop, a backticked path
// (`autograd/tensor.h`) must be a file of the repository, and a backticked name after it
// (`Tensor::view`, `softmax_reference`) must stand in the last path named before it. Other
// backticked words (`TG_FAST_KERNELS=0`, `x.t()`) are not names: a name is an identifier,
// possibly qualified with ::, possibly followed by ().
//
// The paths the comments name: see "paths in comments" below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(TG_REFERENCE_DIR) / ".." / "..";

std::string read_all(const fs::path& path) { return tg::test::read_bytes(path.string()); }

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

// --- paths in comments ----------------------------------------------------------------------
//
// Every repository path a comment of the source names must exist: a comment that says "see
// train/run_folder.h" still says so after the file moves, and nothing else notices. The source
// is every .h, .cpp and .mjs (// and /* */ comments) and every .py, .sh, .cmake, CMakeLists.txt
// and #! script of .ci/ (# comments) under the folders below. A path is a word with a / that
// ends in .h, .cpp, .py, .sh, .mjs or .md. It is the repository's, and checked, when its first
// folder is
//   - a top-level folder (autograd/tape.h, tests/reference/make_op_reference.py, .ci/run),
//   - a folder of autograd/ (kernels/gemm.h: autograd's files and the README name their
//     neighbours so), or
//   - a folder beside the commenting file, below the top level (consumer/main.cpp in .ci/run).
// Anything else is another project's file or no file: torch/nn/init.py, sys/stat.h,
// gtest/gtest.h, build/..., ./build/..., ../README.md; a path inside a longer word (a URL's
// https://github.com/.../encoder.py, /usr/include/blis.h) is not read as one. A file name in
// capitals (examples/NAME.cpp, tests/examples/test_notebook_NNN.cpp, docs/GUIDE.md) is a
// pattern: the capitals stand for any name, and some file of that folder must match it.

const char* const kTopFolders[] = {"autograd", "nn",    "optim", "models", "tokenizers", "train",
                                   "examples", "bench", "tests", "docs",   "cmake",      ".ci"};
const char* const kScanned[] = {"autograd", "nn",    "optim", "models", "tokenizers", "train",
                                "examples", "bench", "tests", "cmake",  ".ci"};

enum class CommentStyle { none, c, hash };

CommentStyle style_of(const fs::path& path) {
  const std::string ext = path.extension().string(), name = path.filename().string();
  if (ext == ".h" || ext == ".cpp" || ext == ".mjs") return CommentStyle::c;
  if (ext == ".py" || ext == ".sh" || ext == ".cmake" || name == "CMakeLists.txt") return CommentStyle::hash;
  if (ext.empty() && path.parent_path().filename() == ".ci" && read_all(path).starts_with("#!"))
    return CommentStyle::hash;
  return CommentStyle::none;
}

using CommentLines = std::vector<std::pair<int, std::string>>;  // (line number, comment text)

// The comments of C++ (and JavaScript) source: // to the end of the line, /* */ split into its
// lines. String and character literals are skipped (raw strings too); a ' after a letter or digit
// is a digit separator (1'000), not a literal.
CommentLines c_comments(const std::string& text) {
  CommentLines out;
  int line = 1;
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      const size_t end = std::min(text.find('\n', i), n);
      out.push_back({line, text.substr(i + 2, end - i - 2)});
      i = end;
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = std::min(text.find("*/", i + 2), n);
      size_t start = i + 2;
      for (size_t nl; (nl = text.find('\n', start)) < end; start = nl + 1) {
        out.push_back({line, text.substr(start, nl - start)});
        ++line;
      }
      out.push_back({line, text.substr(start, end - start)});
      i = end + 2;
    } else if (c == '"' && i > 0 && text[i - 1] == 'R') {  // R"delim( ... )delim"
      const size_t open = text.find('(', i);
      const std::string close = ")" + text.substr(i + 1, open - i - 1) + "\"";
      const size_t end = std::min(text.find(close, open), n);
      line += static_cast<int>(std::count(text.begin() + static_cast<std::ptrdiff_t>(i),
                                          text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
      i = end + close.size();
    } else if (c == '"' || (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]))))) {
      size_t j = i + 1;
      while (j < n && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2u : 1u;
      i = j + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// The comments of a script: from a # at the start of a line or after a space to the end of it.
CommentLines hash_comments(const std::string& text) {
  CommentLines out;
  const std::vector<std::string> lines = lines_of(text);
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::string& l = lines[k];
    for (size_t p = l.find('#'); p != std::string::npos; p = l.find('#', p + 1)) {
      if (p == 0 || l[p - 1] == ' ' || l[p - 1] == '\t') {
        out.push_back({static_cast<int>(k + 1), l.substr(p + 1)});
        break;
      }
    }
  }
  return out;
}

// Whether some file of path's folder matches its name, each run of 3+ capitals standing for any name.
bool pattern_matches(const fs::path& path) {
  const std::string name = path.filename().string();
  static const std::regex capitals("[A-Z]{3,}");
  if (!std::regex_search(name, capitals) || !fs::is_directory(path.parent_path())) return false;
  std::string pattern;
  static constexpr std::string_view kSpecials = ".^$|()[]{}*+?\\";
  for (char ch : name) {
    if (kSpecials.find(ch) != std::string_view::npos) pattern += '\\';
    pattern += ch;
  }
  const std::regex wildcard(std::regex_replace(pattern, capitals, ".+"));
  for (const auto& entry : fs::directory_iterator(path.parent_path()))
    if (std::regex_match(entry.path().filename().string(), wildcard)) return true;
  return false;
}

// Where path, named in a comment of file, is in the repository (the rules above), or nullopt when
// it is not the repository's.
std::optional<fs::path> repository_path(const std::string& path, const fs::path& file) {
  const std::string first = path.substr(0, path.find('/'));
  if (std::find(std::begin(kTopFolders), std::end(kTopFolders), first) != std::end(kTopFolders)) return kRoot / path;
  if (first == "." || first == "..") return std::nullopt;
  if (fs::is_directory(kRoot / "autograd" / first)) return kRoot / "autograd" / path;
  const fs::path beside = file.parent_path();  // not the root's: only kTopFolders there (not build/)
  if (!fs::equivalent(beside, kRoot) && fs::is_directory(beside / first)) return beside / path;
  return std::nullopt;
}

TEST(ReadingGuide, EveryPathACommentNamesExists) {
  // a path, not preceded by a character that would make it part of a longer word (a URL, /usr/...)
  const std::regex path_word(
      "(^|[^A-Za-z0-9_./:~$-])([A-Za-z0-9_.][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)+\\.(?:h|cpp|py|sh|mjs|md))"
      "(?![A-Za-z0-9_])");
  std::vector<fs::path> files;
  for (const char* folder : kScanned) {
    for (auto it = fs::recursive_directory_iterator(kRoot / folder); it != fs::recursive_directory_iterator(); ++it) {
      const std::string name = it->path().filename().string();
      if (it->is_directory() && (name.starts_with("build") || name == "__pycache__" || name.starts_with(".")))
        it.disable_recursion_pending();
      else if (it->is_regular_file() && style_of(it->path()) != CommentStyle::none)
        files.push_back(it->path());
    }
  }
  files.push_back(kRoot / "CMakeLists.txt");
  std::sort(files.begin(), files.end());
  int checked = 0;
  std::vector<std::string> missing;
  for (const fs::path& file : files) {
    const std::string text = read_all(file);
    const CommentLines comments = style_of(file) == CommentStyle::c ? c_comments(text) : hash_comments(text);
    const std::string where = fs::relative(file, kRoot).generic_string();
    for (const auto& [line, comment] : comments) {
      if (comment.find('/') == std::string::npos) continue;
      for (auto it = std::sregex_iterator(comment.begin(), comment.end(), path_word); it != std::sregex_iterator();
           ++it) {
        const std::string path = (*it)[2].str();
        const std::optional<fs::path> resolved = repository_path(path, file);
        if (!resolved) continue;  // another project's file (torch/nn/init.py, sys/stat.h), or no file
        ++checked;
        if (!fs::is_regular_file(*resolved) && !pattern_matches(*resolved))
          missing.push_back(where + ":" + std::to_string(line) + ": " + path);
      }
    }
  }
  std::cout << "[ comments ] " << checked << " paths named in the comments of " << files.size() << " files\n";
  EXPECT_GE(checked, 500) << "the scan found too few paths: is the comment reader broken?";
  std::string list;
  for (const std::string& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "comments name files that do not exist (moved? give the new path):" << list;
}

}  // namespace
