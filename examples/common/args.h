// examples/common/args.h — the examples' command-line flags: each takes one value, written
// "--flag VALUE" or "--flag=VALUE". Any other argument is an error naming it and the flags the
// program takes, so a typo never runs silently without its pictures.
//
// Giving an attention example pictures is two lines:
//   auto svg_dir = tg::examples::svg_dir_from_args(argc, argv);           // --svg DIR, or nothing
//   if (svg_dir) tg::examples::save_attention_heatmaps(*svg_dir, "causal_weights", weights, tokens, true);
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tg::examples {

// flag -> value for the flags present. Errors: "core_demo: unknown argument 'x' (it takes --svg
// DIR, --dot FILE)", "core_demo: --svg needs a value", "core_demo: --svg given twice".
std::map<std::string, std::string> parse_flags(int argc, char** argv, const std::vector<std::string>& flags);

// An example's main(): parses the flags, runs run(flags) and returns its exit code; a tg::Error
// (bad flags, a file that cannot be written) is printed to stderr and gives exit code 2.
int main_with_flags(int argc, char** argv, const std::vector<std::string>& flags,
                    const std::function<int(const std::map<std::string, std::string>&)>& run);

// Creates dir (and its parents) if needed, for pictures to be written into; returns it.
std::string prepare_output_dir(const std::string& dir, const std::string& who);

// The folder of "--svg DIR", created if needed, when the program was given one; the program
// takes no other argument.
std::optional<std::string> svg_dir_from_args(int argc, char** argv);

}  // namespace tg::examples
