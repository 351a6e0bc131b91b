// tests/docs/test_guide_inputs.cpp — every guide runs as written on a fresh clone: each file a
// command of README.md or of a guide (docs/*.md) reads is in the repository, or an earlier command
// of the same file wrote it or downloaded it. A guide is read on its own, from the top, as a new
// user reads it; nothing carries over from one guide to the next.
//
// A command is an indented line (four spaces) outside ``` fences, its trailing "  # comment" cut,
// cut again at &&, ;, | into simple commands. What a simple command reads and writes:
//   - reads: the value of --data, --ckpt, --resume, --init-from, --tokenizer (a path, not bpe or
//     char), --prompt-file, --chat-messages, --messages, --gpt2, each of --runs's, `< FILE`,
//     bpe encode|decode's FILE, a Python script's path, and the run folders the scripts take
//     (tapegrad_run.py sample|train RUN, compare_runs.py A B);
//   - writes: the value of --out, --write-corpus, --merge-lora, --logits-out, --ids-out, --dot,
//     --svg, --local-dir, curl's -o, `> FILE`, mkdir's folders, make_random_gpt2.py's OUT,
//     make_random_llama.py's OUT, and gpt_run/ for a train_gpt run without --out.
// A path written counts for the path itself, for the files under it (train_gpt --out DIR writes
// DIR/model.safetensors ...), and for the folder that holds it (curl -o gpt2/$f fills gpt2).
// An upper-case word (DIR, RUN) is a placeholder the prose around it explains, and a value with $
// is the shell's: neither is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(TG_REFERENCE_DIR) / ".." / "..";

std::string read_all(const fs::path& path) { return tg::test::read_bytes(path.string()); }

struct CommandLine {
  int number = 0;    // the line in the file, from 1
  std::string text;  // without its indent and trailing comment
};

// The indented lines outside ``` fences (the guides' shell commands), trailing "  # ..." cut.
std::vector<CommandLine> command_lines(const std::string& markdown) {
  std::vector<CommandLine> lines;
  std::istringstream in(markdown);
  bool fenced = false;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.starts_with("```")) {
      fenced = !fenced;
      continue;
    }
    if (fenced || !line.starts_with("    ")) continue;
    line = std::regex_replace(line.substr(4), std::regex("\\s{2,}#.*$"), "");
    lines.push_back({number, line});
  }
  return lines;
}

// Shell words, with quotes removed; &&, ;, | and the redirections < and > are words of their own.
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  auto finish = [&] {
    if (in_word) words.push_back(word);
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
      else word.push_back(c);
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      finish();
    } else if (c == ';' || c == '|' || c == '<' || c == '>' || (c == '&' && i + 1 < line.size() && line[i + 1] == '&')) {
      finish();
      std::string op(1, c);
      if (c == '&' || (c == '|' && i + 1 < line.size() && line[i + 1] == '|')) op.push_back(line[++i]);
      words.push_back(op);
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  finish();
  return words;
}

// The simple commands of a line: its words cut at &&, ||, ; and |, and a loop's "do" dropped.
std::vector<std::vector<std::string>> simple_commands(const std::string& line) {
  std::vector<std::vector<std::string>> commands(1);
  for (const std::string& w : shell_words(line)) {
    if (w == "&&" || w == "||" || w == ";" || w == "|") commands.emplace_back();
    else if (!(commands.back().empty() && (w == "do" || w == "done"))) commands.back().push_back(w);
  }
  std::erase_if(commands, [](const auto& c) { return c.empty(); });
  return commands;
}

struct Access {
  std::vector<std::string> reads, writes;
};

const std::set<std::string> kReadFlags = {"--data",          "--ckpt",     "--resume", "--init-from", "--tokenizer",
                                          "--prompt-file",   "--chat-messages", "--messages", "--gpt2", "--runs"};
const std::set<std::string> kWriteFlags = {"--out",     "--write-corpus", "--merge-lora", "--logits-out", "--ids-out",
                                           "--dot",     "--svg",          "--local-dir",  "-o"};

bool is_python(const std::string& word) {
  return word == "python3" || word == "/usr/bin/python3" || word == "torchrun";
}

std::vector<std::string> split_commas(const std::string& value) {
  std::vector<std::string> parts;
  std::stringstream in(value);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

// What one simple command reads and writes (see the top of the file).
Access access_of(std::vector<std::string> words) {
  Access a;
  while (!words.empty() && std::regex_match(words[0], std::regex("[A-Z_][A-Z0-9_]*=.*"))) words.erase(words.begin());
  if (words.empty()) return a;
  const std::string& program = words[0];
  bool has_out = false;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string flag = words[i], value;
    const size_t eq = flag.find('=');
    if (flag.starts_with("--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < words.size()) {
      value = words[i + 1];
    }
    if (flag == "<" && !value.empty()) a.reads.push_back(value);
    if (flag == ">" && !value.empty()) a.writes.push_back(value);
    if (kReadFlags.contains(flag) && !value.empty()) {
      if (flag == "--tokenizer" && (value == "bpe" || value == "char")) continue;
      for (const std::string& v : flag == "--runs" ? split_commas(value) : std::vector<std::string>{value})
        a.reads.push_back(v);
    }
    if (kWriteFlags.contains(flag) && !value.empty() && (flag != "-o" || program == "curl")) {
      a.writes.push_back(value);
      has_out = has_out || flag == "--out";
    }
  }
  if (program == "mkdir") {
    for (size_t i = 1; i < words.size(); ++i)
      if (!words[i].starts_with("-")) a.writes.push_back(words[i]);
  }
  if (program.ends_with("/examples/train_gpt") && !has_out) a.writes.push_back("gpt_run");
  if (program.ends_with("/examples/bpe") && words.size() > 1 && (words[1] == "encode" || words[1] == "decode")) {
    const std::set<std::string> switches = {"--allow-special"};
    for (size_t i = 2; i < words.size(); ++i) {
      if (words[i] == ">" || words[i] == "<") break;
      if (words[i].starts_with("--")) {
        if (!switches.contains(words[i]) && words[i].find('=') == std::string::npos) ++i;
        continue;
      }
      a.reads.push_back(words[i]);  // FILE
    }
  }
  if (is_python(program)) {
    // The script is the first word ending in .py; the words right after it that are no flags are
    // its positional arguments.
    auto script = std::find_if(words.begin(), words.end(), [](const std::string& w) { return w.ends_with(".py"); });
    if (script != words.end()) {
      a.reads.push_back(*script);
      std::vector<std::string> positional;
      for (auto it = script + 1; it != words.end() && !it->starts_with("-") && *it != ">" && *it != "<"; ++it)
        positional.push_back(*it);
      const std::string name = fs::path(*script).filename().string();
      if (name == "make_random_gpt2.py" && !positional.empty()) a.writes.push_back(positional[0]);
      if (name == "make_random_llama.py" && positional.size() >= 2) a.writes.push_back(positional[1]);
      if (name == "tapegrad_run.py" && positional.size() >= 2) a.reads.push_back(positional[1]);
      if (name == "compare_runs.py") a.reads.insert(a.reads.end(), positional.begin(), positional.end());
    }
  }
  return a;
}

// "gpt2/$f" -> "gpt2": the part of a path before its first word of the shell's; "runs/big/" -> "runs/big".
std::string normal_path(std::string path) {
  const size_t dollar = path.find('$');
  if (dollar != std::string::npos) path = path.substr(0, path.rfind('/', dollar) == std::string::npos ? 0 : path.rfind('/', dollar));
  while (path.size() > 1 && path.ends_with("/")) path.pop_back();
  if (path.starts_with("./")) path = path.substr(2);
  return path;
}

bool is_placeholder(const std::string& value) {
  return value.find('$') != std::string::npos || std::regex_match(value, std::regex("[A-Z][A-Z0-9_]*"));
}

// Whether `path` is `written`, lies under it, or holds it.
bool covered_by(const std::string& path, const std::string& written) {
  return path == written || path.starts_with(written + "/") || written.starts_with(path + "/");
}

// One complaint a line, "FILE:LINE: reads PATH, which is neither in the repository nor written or
// downloaded by an earlier command of FILE", for each input of `markdown` (named `file`) that
// `exists` does not know and no earlier command wrote.
std::vector<std::string> missing_inputs(const std::string& file, const std::string& markdown,
                                        const std::function<bool(const std::string&)>& exists) {
  std::vector<std::string> problems, written;
  for (const CommandLine& line : command_lines(markdown)) {
    for (const std::vector<std::string>& command : simple_commands(line.text)) {
      const Access a = access_of(command);
      for (const std::string& raw : a.reads) {
        if (is_placeholder(raw)) continue;
        const std::string path = normal_path(raw);
        const bool made = std::any_of(written.begin(), written.end(),
                                      [&](const std::string& w) { return covered_by(path, w); });
        if (!made && !exists(path))
          problems.push_back(file + ":" + std::to_string(line.number) + ": reads " + path +
                             ", which is neither in the repository nor written or downloaded by an earlier command "
                             "of " + file);
      }
      for (const std::string& raw : a.writes)  // gpt2/$f: the loop fills gpt2
        if (!std::regex_match(raw, std::regex("[A-Z][A-Z0-9_]*"))) written.push_back(normal_path(raw));
    }
  }
  return problems;
}

bool in_repository(const std::string& path) { return !path.empty() && fs::exists(kRoot / path); }

std::vector<fs::path> readme_and_guides() {
  std::vector<fs::path> files = {kRoot / "README.md"};
  for (const auto& entry : fs::directory_iterator(kRoot / "docs"))
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(GuideInputs, EveryFileACommandReadsIsInTheRepositoryOrMadeEarlier) {
  int inputs = 0;
  for (const fs::path& path : readme_and_guides()) {
    const std::string name = fs::relative(path, kRoot).lexically_normal().string();
    const std::string text = read_all(path);
    for (const CommandLine& line : command_lines(text))
      for (const auto& command : simple_commands(line.text)) inputs += static_cast<int>(access_of(command).reads.size());
    for (const std::string& problem : missing_inputs(name, text, in_repository)) ADD_FAILURE() << problem;
  }
  EXPECT_GE(inputs, 40) << "the guides' commands read far fewer files than they do: is the parser broken?";
}

// The checker itself, on a small guide: what it must let through and what it must catch.
TEST(GuideInputs, TheCheckerCatchesAGuideThatReadsWhatNothingMade) {
  const std::string guide =
      "# A guide\n"
      "\n"
      "    curl -fL -o input.txt https://example.org/input.txt\n"
      "    ./build/examples/train_gpt --data input.txt --out runs/a   # fine: downloaded\n"
      "    ./build/examples/generate --ckpt runs/a --prompt \"x\"\n"
      "    ./build/examples/generate --ckpt runs/b --prompt \"x\"\n"
      "    ./build/examples/train_gpt --data other.txt --out runs/b\n"
      "    mkdir -p gpt2 && for f in config.json vocab.json; do curl -fL -o gpt2/$f https://example.org/$f; done\n"
      "    ./build/examples/train_gpt --init-from gpt2 --data examples/data/chats.jsonl --steps 3\n"
      "    ./build/examples/generate --ckpt gpt_run --chat-messages question.json\n"
      "    ./build/examples/bpe encode --tokenizer gpt2 text.txt\n"
      "    /usr/bin/python3 examples/pytorch/no_such_script.py gpt2\n"
      "    ./build/examples/train_gpt --data missing.txt --init-from DIR\n"
      "\n"
      "```cpp\n"
      "    tg::load(\"fenced.safetensors\");   // code, not a command\n"
      "```\n";
  const std::vector<std::string> expected = {
      "guide.md:6: reads runs/b, which is neither in the repository nor written or downloaded by an earlier command "
      "of guide.md",
      "guide.md:7: reads other.txt, which is neither in the repository nor written or downloaded by an earlier command "
      "of guide.md",
      "guide.md:10: reads question.json, which is neither in the repository nor written or downloaded by an earlier "
      "command of guide.md",
      "guide.md:11: reads text.txt, which is neither in the repository nor written or downloaded by an earlier command "
      "of guide.md",
      "guide.md:12: reads examples/pytorch/no_such_script.py, which is neither in the repository nor written or "
      "downloaded by an earlier command of guide.md",
      "guide.md:13: reads missing.txt, which is neither in the repository nor written or downloaded by an earlier "
      "command of guide.md",
  };
  EXPECT_EQ(missing_inputs("guide.md", guide, in_repository), expected);
}

TEST(GuideInputs, ShellWordsAndRedirections) {
  EXPECT_EQ(shell_words("a --prompt \"The old fox\" < in.txt > out.txt && b"),
            (std::vector<std::string>{"a", "--prompt", "The old fox", "<", "in.txt", ">", "out.txt", "&&", "b"}));
  const Access a = access_of(shell_words("./build/examples/core_demo --dot graph.dot"));
  EXPECT_EQ(a.writes, std::vector<std::string>{"graph.dot"});
  EXPECT_EQ(missing_inputs("g.md", "    dot -Tsvg < graph.dot > graph.svg\n", in_repository),
            std::vector<std::string>{"g.md:1: reads graph.dot, which is neither in the repository nor written or "
                                     "downloaded by an earlier command of g.md"});
}

}  // namespace
