// io/flags.h — the command-line flags of every example and benchmark program.
//
// A program lists its flags once, as a table (name, the variable it sets, help, allowed range);
// the same table parses argv, prints --help and validates. "--name value" and "--name=value"
// both work; a switch (a bool flag) takes no value.
//
//   struct Options { std::string svg; int64_t threads = 0; };
//   int main(int argc, char** argv) {
//     Options o;
//     return run_program({"demo", "Draws the demo.", {svg_flag(&o.svg), threads_flag(&o.threads)}},
//                        argc, argv, [&] { return run(o); });
//   }
//
// Read run_program (a program's main, near the end) first, then parse_flags.
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "autograd/error.h"

namespace tg {

// text as a whole decimal integer ("12", "-3"), or nothing ("", "1x", "1.5", out of int64's
// range): the one integer reader of the programs' flags and text inputs.
std::optional<int64_t> read_integer(const std::string& text);

// A bad command line: the message names the flag and what was wrong with it.
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

// The flags several programs share, with one meaning everywhere.
Flag threads_flag(int64_t* threads);  // --threads N: BLIS's and tapegrad's threads, 0 = all cores
Flag seed_flag(int64_t* seed, std::string help);  // --seed N in [0, 2^53 - 1]: exact as a JSON number
Flag svg_flag(std::string* dir);      // --svg DIR: draw the attention weights as SVG heatmaps in DIR
Flag dot_flag(std::string* file);     // --dot FILE: write the graph backward walks (Graphviz DOT)

// The picture programs' flags (core_demo, attention_pictures): --svg DIR and --dot FILE.
struct PictureOptions {
  std::string svg;  // "" = no heatmaps
  std::string dot;  // "" = no graph
};
std::vector<Flag> picture_flags(PictureOptions& o);

// True when two flags (the same flag bound to two option structs) hold the same value.
bool same_value(const Flag& a, const Flag& b);

// Sets the flags named in args (argv without the program name); --help (or -h) sets *help and
// stops. given (optional) receives the names of the flags that were set, in order. Throws
// UsageError.
void parse_flags(const std::vector<Flag>& flags, const std::vector<std::string>& args, bool* help,
                 std::vector<std::string>* given = nullptr);

// Whether the flag (its name without "--") is among those parse_flags says were given.
bool was_given(const std::vector<std::string>& given, const std::string& flag);

// Flags that name a file or folder, each as {name, value}: one given as "" is a UsageError naming
// it ("--resume: expected a file or folder name, got ''"). Left as it is, an empty name reads as the
// flag left out: train_gpt --resume '' would start a new run, --write-corpus '' train the default.
void require_names(const std::vector<std::string>& given, const std::vector<std::pair<std::string, std::string>>& flags);

// What the program is doing, for the one line run_program prints when memory runs out. A scope
// says it, in words that follow "out of memory while":
//   const Activity building("building the model of " + config_path);
// Activities nest; an exception that passes through one leaves the innermost's words for
// run_program (failed_activity), and the next Activity made clears them (that failure was
// handled).
class Activity {
 public:
  explicit Activity(std::string what);
  ~Activity();
  Activity(const Activity&) = delete;
  Activity& operator=(const Activity&) = delete;

 private:
  int exceptions_at_start_;  // std::uncaught_exceptions() when made: more at the end means unwinding
};
// The words of the innermost Activity an exception passed through, else of the innermost
// running now; "" when there is none.
std::string failed_activity();

struct Program {
  std::string name;         // "train_gpt": starts every error line
  std::string about;        // --help's first paragraph
  std::vector<Flag> flags;  // bound to the options run() reads
};

// A program's main(): parses argv into program.flags (given, optional, receives the names of
// the flags set), then returns run()'s exit code. Each error is one line "<name>: <message>" on
// stderr. Exit codes, the same for every program:
//   0  success (or --help, which prints the usage and the table, with the defaults)
//   2  a usage error (UsageError): an unknown flag, a bad or missing value, flags that do not go
//      together. One line: "demo: --steps: expected an integer, got 'ten' (see --help)"
//   1  a failure while running (any other tg::Error): "demo: input.txt: no such file"; memory
//      running out (std::bad_alloc, or a tensor the allocator cannot make) names what the
//      program was doing, as an Activity says it (failed_activity()): "demo: out of memory while
//      building the model of run/config.json"; any other exception: "demo: unexpected error: ...".
//      Never an abort.
int run_program(const Program& program, int argc, char** argv, const std::function<int()>& run,
                std::vector<std::string>* given = nullptr);

// A program whose one flag is --svg DIR (the notebooks): run(svg_dir) gets DIR, made if
// needed (an OutputFolder), or "" when --svg is not given.
int run_program_with_svg(const std::string& name, const std::string& about, int argc, char** argv,
                         const std::function<int(const std::string& svg_dir)>& run);

// Creates dir (and its parents) if needed, for files to be written into; returns it. Errors
// name the flag: "--svg: cannot make the folder 'x': Not a directory".
std::string prepare_output_dir(const std::string& dir, const std::string& flag);

// A program's output folder (--out DIR) for its lifetime: made as prepare_output_dir makes it;
// when its scope is left by an exception (the run failed), the folders it made (DIR and any
// missing parents) are removed again if they are still empty, so a run that fails before
// writing anything leaves no empty folder behind (nor does a failure to make DIR itself, after
// its parents were made). A folder that was there before is never removed, nor one with
// anything in it.
class OutputFolder {
 public:
  OutputFolder(const std::string& dir, const std::string& flag);
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;
  ~OutputFolder();
  const std::string& path() const { return dir_; }

 private:
  void remove_if_empty() const;  // the folders made, the deepest first, while they are empty

  std::string dir_;
  std::vector<std::string> made_;  // the folders made, the deepest last
  int exceptions_ = std::uncaught_exceptions();  // those under way when it was made
};

}  // namespace tg
