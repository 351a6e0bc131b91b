// examples/common/args.cpp — flag parsing for the examples.
#include "examples/common/args.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "autograd/error.h"

namespace tg::examples {

namespace {

std::string program_name(int argc, char** argv) {
  return argc > 0 && argv[0] ? std::filesystem::path(argv[0]).filename().string() : std::string("program");
}

}  // namespace

std::map<std::string, std::string> parse_flags(int argc, char** argv, const std::vector<std::string>& flags) {
  const std::string program = program_name(argc, argv);
  std::string usage;
  for (const std::string& f : flags) usage += (usage.empty() ? "" : ", ") + f + " VALUE";
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (std::find(flags.begin(), flags.end(), arg) == flags.end()) {
      throw Error(program + ": unknown argument '" + std::string(argv[i]) + "' (it takes " +
                  (usage.empty() ? std::string("no arguments") : usage) + ")");
    }
    if (!has_value) {
      if (i + 1 >= argc) throw Error(program + ": " + arg + " needs a value");
      value = argv[++i];
    }
    if (value.empty()) throw Error(program + ": " + arg + " needs a value");
    if (!values.emplace(arg, value).second) throw Error(program + ": " + arg + " given twice");
  }
  return values;
}

int main_with_flags(int argc, char** argv, const std::vector<std::string>& flags,
                    const std::function<int(const std::map<std::string, std::string>&)>& run) {
  try {
    return run(parse_flags(argc, argv, flags));
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}

std::string prepare_output_dir(const std::string& dir, const std::string& who) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw Error(who + ": cannot make the folder '" + dir + "': " + (ec ? ec.message() : std::string("not a folder")));
  }
  return dir;
}

std::optional<std::string> svg_dir_from_args(int argc, char** argv) {
  const auto flags = parse_flags(argc, argv, {"--svg"});
  const auto it = flags.find("--svg");
  if (it == flags.end()) return std::nullopt;
  return prepare_output_dir(it->second, program_name(argc, argv) + " --svg");
}

}  // namespace tg::examples
