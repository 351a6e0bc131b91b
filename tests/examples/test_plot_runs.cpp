// examples/plot_runs: several runs' loss.csv in one SVG, and its errors (a folder without
// loss.csv, names that do not match the runs, a column no row has).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace tg::test {
namespace {

const char* kHeader = "step,train_loss,val_loss,lr,tokens_per_s,elapsed_s,train_bpb,val_bpb\n";

TEST(PlotRuns, DrawsEachRunsColumnAndNamesWhatIsWrong) {
  const std::string program = example_program("plot_runs");
  if (program.empty()) GTEST_SKIP() << "examples not built";
  TempFolder dir;
  std::filesystem::create_directories(dir.file("a"));
  std::filesystem::create_directories(dir.file("b"));
  write_bytes(dir.file("a/loss.csv"), std::string(kHeader) + "1,4.0,,0,100.0,1.000,,\n2,3.5,3.6,0.001,100.0,2.000,2.1,2.25\n");
  write_bytes(dir.file("b/loss.csv"), std::string(kHeader) + "1,4.0,,0,100.0,1.000,,\n2,3.0,3.1,0.001,100.0,2.000,1.9,1.75\n");
  const std::string out = dir.file("cmp.svg");

  ProgramRun r = run_program(program, {"--runs", dir.file("a") + "," + dir.file("b"), "--names", "first,second",
                                       "--y", "val_bpb", "--x", "elapsed_s", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string svg = read_bytes(out);
  EXPECT_NE(svg.find("first"), std::string::npos);
  EXPECT_NE(svg.find("second"), std::string::npos);
  EXPECT_NE(svg.find("training time (s)"), std::string::npos);

  r = run_program(program, {"--runs", dir.file("a") + "," + dir.file("missing"), "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("missing/loss.csv"), std::string::npos) << r.output;

  r = run_program(program, {"--runs", dir.file("a") + "," + dir.file("b"), "--names", "one", "--out", out});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--names: 1 names for 2 runs"), std::string::npos) << r.output;

  write_bytes(dir.file("a/loss.csv"), std::string(kHeader) + "1,4.0,,0,100.0,1.000,,\n");
  r = run_program(program, {"--runs", dir.file("a"), "--y", "val_loss", "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no row has val_loss"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tg::test
