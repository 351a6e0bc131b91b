// tests/io/test_flags.cpp — the one flag parser of the examples and benchmarks
// (io/flags.h): the typed table, its messages, and the exit-code rule
// (0 success or --help, 2 usage error, 1 failure).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/flags.h"
#include "test_util.h"

namespace tg {
namespace {

using test::error_of;
using test::has_part;

struct DemoOptions {
  int64_t steps = 10;
  double lr = 0.5;
  std::string schedule = "cosine";
  bool medium = false;
};

std::vector<Flag> demo_flags(DemoOptions& o) {
  return {int_flag("steps", &o.steps, "steps", 1, 100), number_flag("lr", &o.lr, "learning rate", 0, 10),
          text_flag("schedule", &o.schedule, "schedule", {"constant", "cosine"}),
          switch_flag("medium", &o.medium, "bigger shapes")};
}

// The exit code and what the program printed on stdout and stderr.
struct Outcome {
  int code;
  std::string out, err;
};

Outcome run_demo(std::vector<std::string> args, const std::function<int()>& body = [] { return 0; }) {
  DemoOptions o;
  args.insert(args.begin(), "demo");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = run_program({"demo", "A demo.", demo_flags(o)}, static_cast<int>(argv.size()), argv.data(), body);
  const std::string out = testing::internal::GetCapturedStdout();
  return {code, out, testing::internal::GetCapturedStderr()};
}

TEST(Flags, ParsesEveryTypeInBothSpellings) {
  DemoOptions o;
  bool help = false;
  std::vector<std::string> given;
  parse_flags(demo_flags(o), {"--steps", "20", "--lr=0.25", "--schedule", "constant", "--medium"}, &help, &given);
  EXPECT_FALSE(help);
  EXPECT_EQ(o.steps, 20);
  EXPECT_EQ(o.lr, 0.25);
  EXPECT_EQ(o.schedule, "constant");
  EXPECT_TRUE(o.medium);
  EXPECT_EQ(given, (std::vector<std::string>{"steps", "lr", "schedule", "medium"}));
  parse_flags(demo_flags(o), {"--steps", "30", "--help", "--bogus"}, &help);  // --help stops there
  EXPECT_TRUE(help);
}

TEST(Flags, EachBadCommandLineNamesTheFlagAndWhatWasWrong) {
  DemoOptions o;
  bool help = false;
  auto parse = [&](const std::vector<std::string>& args) { return error_of([&] { parse_flags(demo_flags(o), args, &help); }); };
  EXPECT_EQ(parse({"--bogus"}), "unknown flag --bogus");
  EXPECT_EQ(parse({"--steps"}), "--steps: missing value");
  EXPECT_EQ(parse({"--steps", "ten"}), "--steps: expected an integer, got 'ten'");
  EXPECT_EQ(parse({"--steps", "0"}), "--steps: 0 is out of range [1, 100]");
  EXPECT_EQ(parse({"--lr=fast"}), "--lr: expected a number, got 'fast'");
  EXPECT_EQ(parse({"--schedule", "linear"}), "--schedule: expected one of constant|cosine, got 'linear'");
  EXPECT_EQ(parse({"--medium=yes"}), "--medium takes no value");
  EXPECT_EQ(parse({"stray"}), "unexpected argument 'stray': flags start with --");
}

TEST(Flags, ExitCodesAre0ForSuccess2ForUsageErrors1ForFailures) {
  const Outcome ok = run_demo({"--steps", "3"}, [] { return 0; });
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(ok.err, "");

  const Outcome usage = run_demo({"--steps", "ten"});
  EXPECT_EQ(usage.code, 2);
  EXPECT_EQ(usage.err, "demo: --steps: expected an integer, got 'ten' (see --help)\n");

  const Outcome thrown_usage = run_demo({}, []() -> int { throw UsageError("--steps (3) must exceed --warmup (5)"); });
  EXPECT_EQ(thrown_usage.code, 2);
  EXPECT_EQ(thrown_usage.err, "demo: --steps (3) must exceed --warmup (5) (see --help)\n");

  const Outcome failure = run_demo({}, []() -> int { throw Error("input.txt: no such file"); });
  EXPECT_EQ(failure.code, 1);
  EXPECT_EQ(failure.err, "demo: input.txt: no such file\n");
}

TEST(Flags, HelpPrintsTheTableWithTheDefaultsAndExits0) {
  bool ran = false;
  const Outcome help = run_demo({"--steps", "50", "--help"}, [&] {
    ran = true;
    return 0;
  });
  EXPECT_EQ(help.code, 0);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(has_part(help.out, "usage: demo [flags]\n\nA demo.\n"));
  EXPECT_TRUE(has_part(help.out, "(default 10)"));  // the default, not the 50 given before --help
  EXPECT_TRUE(has_part(help.out, "--schedule {constant|cosine}"));
  EXPECT_TRUE(has_part(help.out, "--medium"));
}

TEST(Flags, PrepareOutputDirMakesTheFolderOrNamesTheFlag) {
  test::TempFolder dir;
  const std::string where = dir.file("a/b");
  EXPECT_EQ(prepare_output_dir(where, "--svg"), where);
  EXPECT_TRUE(std::filesystem::is_directory(where));
  std::ofstream(dir.file("file")) << "x";
  const std::string inside = dir.file("file") + "/pics";
  EXPECT_TRUE(has_part(error_of([&] { prepare_output_dir(inside, "--svg"); }),
                       "--svg: cannot make the folder '" + inside + "'"));
}

TEST(Flags, RunProgramWithSvgGivesTheMadeFolderOrNothing) {
  test::TempFolder dir;
  std::string program = "notebook", flag = "--svg", where = dir.file("pics");
  std::vector<char*> argv{program.data(), flag.data(), where.data()};
  std::string seen = "unset";
  auto run = [&](const std::string& svg_dir) {
    seen = svg_dir;
    return 0;
  };
  EXPECT_EQ(run_program_with_svg("notebook", "A notebook.", 3, argv.data(), run), 0);
  EXPECT_EQ(seen, where);
  EXPECT_TRUE(std::filesystem::is_directory(where));
  EXPECT_EQ(run_program_with_svg("notebook", "A notebook.", 1, argv.data(), run), 0);
  EXPECT_EQ(seen, "");
}

}  // namespace
}  // namespace tg
