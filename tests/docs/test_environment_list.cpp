// tests/docs/test_environment_list.cpp — the README's list of the TG_* variables is the one that
// autograd/runtime/environment.h keeps, and that file lists every TG_* variable the library reads,
// so a variable added to the code without its line there, or to that file without the README,
// fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(TG_REFERENCE_DIR) / ".." / "..";

std::string read_all(const fs::path& path) { return tg::test::read_bytes(path.string()); }

// Every match of `pattern`'s first group in `text`.
std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
    found.insert((*it)[1].str());
  return found;
}

// environment.h's table: the comment lines "//   TG_NAME   values   where".
std::set<std::string> environment_h_variables() {
  return matches(read_all(kRoot / "autograd/runtime/environment.h"), std::regex("\\n//   (TG_[A-Z0-9_]+) "));
}

// The README's sentence "Every `TG_*` variable tapegrad reads (`TG_A`, `TG_B`, ...)": its parenthesis.
std::set<std::string> readme_variables() {
  const std::string readme = read_all(kRoot / "README.md");
  const std::string opening = "Every `TG_*` variable tapegrad reads (";
  const size_t begin = readme.find(opening);
  if (begin == std::string::npos) return {};
  const size_t end = readme.find(')', begin + opening.size());
  return matches(readme.substr(begin, end - begin), std::regex("`(TG_[A-Z0-9_]+)`"));
}

// The "TG_..." string literals of the library's sources: the variables it reads.
std::set<std::string> variables_the_library_reads() {
  std::set<std::string> found;
  for (const char* folder : {"autograd", "nn", "optim", "models", "tokenizers", "train"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp") continue;
      const std::set<std::string> names = matches(read_all(entry.path()), std::regex("\"(TG_[A-Z0-9_]+)\""));
      found.insert(names.begin(), names.end());
    }
  }
  return found;
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

TEST(EnvironmentList, TheReadmeListsEveryVariableOfEnvironmentH) {
  const std::set<std::string> listed = environment_h_variables();
  ASSERT_GE(listed.size(), 4u) << "autograd/runtime/environment.h's table of variables was not found";
  EXPECT_EQ(joined(readme_variables()), joined(listed))
      << "README.md's \"Every `TG_*` variable tapegrad reads (...)\" must name the variables of "
         "autograd/runtime/environment.h, no more and no fewer";
}

TEST(EnvironmentList, EnvironmentHListsEveryVariableTheLibraryReads) {
  const std::set<std::string> listed = environment_h_variables();
  for (const std::string& name : variables_the_library_reads())
    EXPECT_TRUE(listed.contains(name)) << "the library reads " << name
                                       << ", which autograd/runtime/environment.h's table does not list";
}

// The check can fail: a README sentence that leaves one out differs from the file's list.
TEST(EnvironmentList, AShortListIsCaught) {
  std::set<std::string> short_list = environment_h_variables();
  ASSERT_FALSE(short_list.empty());
  short_list.erase(short_list.begin());
  EXPECT_NE(joined(short_list), joined(environment_h_variables()));
}

}  // namespace
