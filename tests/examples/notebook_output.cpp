// tests/examples/notebook_output.cpp — see notebook_output.h.
#include "examples/notebook_output.h"

#include <sys/wait.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "autograd/error.h"
#include "io/json.h"
#include "test_util.h"

#ifndef TG_EXAMPLES_DIR
#error "TG_EXAMPLES_DIR (the folder of the built examples) must be defined by the build"
#endif
#ifndef TG_REFERENCE_DIR
#error "TG_REFERENCE_DIR must be defined by the build"
#endif

namespace tg::test {

namespace {

std::string example_path(const std::string& name) { return std::string(TG_EXAMPLES_DIR) + "/" + name; }

// A character that may be part of a name or a number: a number must not touch one.
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// The length of the number token starting at s[i] (-?digits[.digits][e[+-]digits], -?inf, -?nan,
// True, False), or 0.
size_t token_length(const std::string& s, size_t i) {
  for (const char* word : {"True", "False"}) {
    if (s.compare(i, std::char_traits<char>::length(word), word) == 0) return std::char_traits<char>::length(word);
  }
  size_t j = i;
  if (j < s.size() && s[j] == '-') ++j;
  for (const char* word : {"inf", "nan"}) {
    if (s.compare(j, 3, word) == 0) return j + 3 - i;
  }
  const size_t digits_start = j;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  if (j == digits_start) return 0;
  if (j < s.size() && s[j] == '.') {
    ++j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  }
  if (j + 1 < s.size() && s[j] == 'e') {
    size_t k = j + 1;
    if (s[k] == '+' || s[k] == '-') ++k;
    const size_t exponent_start = k;
    while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
    if (k > exponent_start) j = k;
  }
  return j - i;
}

}  // namespace

bool example_exists(const std::string& name) { return std::filesystem::exists(example_path(name)); }

std::string run_example(const std::string& name, const std::string& environment) {
  const std::string path = example_path(name);
  if (!example_exists(name)) throw Error("run_example: " + path + ": no such program (is TG_BUILD_EXAMPLES on?)");
  FILE* pipe = popen((environment + program_launcher() + "'" + path + "'").c_str(), "r");
  if (!pipe) throw Error("run_example: " + path + ": cannot be started");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw Error("run_example: " + path + " failed (wait status " + std::to_string(status) + ") after printing:\n" + out);
  }
  return out;
}

const std::regex& cell_marker() {
  static const std::regex marker(R"(In \[[^\]]*\]:)");
  return marker;
}

std::vector<std::string> numbers_in(const std::string& text) {
  std::vector<std::string> numbers;
  for (size_t i = 0; i < text.size();) {
    const size_t n = (i == 0 || !word_char(text[i - 1])) ? token_length(text, i) : 0;
    if (n > 0 && (i + n == text.size() || !word_char(text[i + n]))) {
      numbers.push_back(text.substr(i, n));
      i += n;
    } else {
      // Skip the rest of this word or number, so no token starts inside it.
      do ++i; while (i < text.size() && word_char(text[i]) && word_char(text[i - 1]));
    }
  }
  return numbers;
}

double number_value(const std::string& token) {
  if (token == "True") return 1.0;
  if (token == "False") return 0.0;
  const bool negative = !token.empty() && token[0] == '-';
  const std::string body = negative ? token.substr(1) : token;
  if (body == "inf") return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::strtod(token.c_str(), nullptr);
}

std::vector<PrintedCell> split_cells(const std::string& text, const std::regex& marker) {
  std::vector<PrintedCell> cells;
  std::string body;
  auto close = [&] {
    if (!cells.empty()) cells.back().numbers = numbers_in(body);
    body.clear();
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, marker)) {
      close();
      cells.push_back({line, {}});
    } else {
      body += line + "\n";
    }
  }
  close();
  return cells;
}

::testing::AssertionResult numbers_match(const std::vector<std::string>& got, const std::vector<std::string>& want,
                                         double atol, double rtol, const std::string& where) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << where << ": printed " << got.size() << " numbers, expected " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = number_value(got[i]), w = number_value(want[i]);
    const bool same = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!same) {
      return ::testing::AssertionFailure() << where << ": number " << i << " is " << got[i] << ", expected " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

void expect_same_cells(const std::vector<PrintedCell>& got, const std::vector<PrintedCell>& want, double atol,
                       double rtol) {
  ASSERT_EQ(got.size(), want.size()) << "number of cells";
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].label, want[i].label) << "cell " << i;
    EXPECT_TRUE(numbers_match(got[i].numbers, want[i].numbers, atol, rtol, "cell " + std::to_string(i) + " " + got[i].label));
  }
}

void expect_notebook_cells(const std::vector<PrintedCell>& got, const std::string& json_file, double atol, double rtol) {
  const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/" + json_file);
  const json::Value& labels = doc["labels"];
  ASSERT_EQ(got.size(), labels.size()) << "number of cells, against " << json_file;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].label, "In [" + labels[i].as_string() + "]:") << "cell " << i << ", against " << json_file;
  }
  for (const json::Value& cell : doc["cells"].as_array()) {
    const size_t index = static_cast<size_t>(cell["index"].as_int64());
    std::vector<std::string> want;
    for (const json::Value& number : cell["numbers"].as_array()) want.push_back(number.as_string());
    std::vector<std::string> got_numbers = got.at(index).numbers;
    // A cell whose output the notebook cut short is compared on the numbers the notebook shows.
    const json::Value* truncated = cell.find("truncated");
    if (truncated && truncated->as_bool() && got_numbers.size() > want.size()) got_numbers.resize(want.size());
    EXPECT_TRUE(numbers_match(got_numbers, want, atol, rtol, json_file + ": cell " + std::to_string(index) + " " + got.at(index).label));
  }
}

std::string read_reference_text(const std::string& file_name) {
  const std::string path = std::string(TG_REFERENCE_DIR) + "/" + file_name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("read_reference_text: " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tg::test
