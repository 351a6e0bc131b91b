// examples/gpt/options.h — the command-line flags of train_gpt and generate.
//
// Each program lists its flags once (name, value, help, allowed range); the same table parses
// argv, prints --help and validates. Errors are one line naming the flag ("--steps: expected an
// integer, got 'ten'") and the programs exit with code 2 on them.
#pragma once
#include <cstdint>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "autograd/error.h"

namespace tg::examples {

// A bad command line: the message is the whole one-line explanation.
struct UsageError : Error {
  using Error::Error;
};

struct Flag {
  std::string name;  // without the leading "--"
  std::variant<int64_t*, double*, std::string*, bool*> value;
  std::string help;
  double min = -1e300, max = 1e300;  // allowed range for numbers (inclusive)
  std::vector<std::string> choices;  // allowed values for strings (empty = any)
};

// The ways to declare a flag (all fields named, so nothing is left out by accident).
Flag int_flag(std::string name, int64_t* value, std::string help, double min, double max);
Flag number_flag(std::string name, double* value, std::string help, double min, double max);
Flag text_flag(std::string name, std::string* value, std::string help, std::vector<std::string> choices = {});
Flag switch_flag(std::string name, bool* value, std::string help);

// True when two flags (the same flag bound to two option structs) hold the same value.
bool same_value(const Flag& a, const Flag& b);

// Sets the flags named in args (argv without the program name); --help sets *help and stops.
// "--name value" and "--name=value" both work; a bool flag takes no value. given (optional)
// receives the names of the flags that were set, in order.
void parse_flags(const std::vector<Flag>& flags, const std::vector<std::string>& args, bool* help,
                 std::vector<std::string>* given = nullptr);
void print_flags(std::ostream& os, const std::vector<Flag>& flags);  // --help: each flag, its default, help

// The start of a program's run(): parses argv into o through make_flags(o). On --help it prints
// `usage`, then each flag with its default (from a default Options), and returns false.
template <class Options>
bool parse_command_line(Options& o, std::vector<Flag> (*make_flags)(Options&), int argc, char** argv,
                        const std::string& usage) {
  bool help = false;
  parse_flags(make_flags(o), std::vector<std::string>(argv + 1, argv + argc), &help);
  if (!help) return true;
  Options defaults;
  std::cout << usage;
  print_flags(std::cout, make_flags(defaults));
  return false;
}

// A program's main(): runs run(argc, argv) and returns its exit code; a UsageError is printed as
// "<program>: <message>" with exit code 2, any other tg::Error likewise with exit code 1.
int main_reporting_errors(const char* program, int argc, char** argv, int (*run)(int, char**));

}  // namespace tg::examples
