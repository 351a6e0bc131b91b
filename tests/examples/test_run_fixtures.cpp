// Files an earlier tapegrad wrote, read by this one (tests/reference/runs/, made by
// make_run_fixtures.sh): the default train_gpt run still logs the same losses, learning rates and
// bits per byte, and run folders saved then still resume and train on bit for bit.
//
// Every run here uses the portable kernels and BLIS's generic ones (as the fixtures were made),
// whose sums do not depend on the CPU, so the numbers are the same on any x86-64 machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/kernels/blis_kernels.h"
#include "autograd/runtime/memory.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::string kRuns = std::string(TG_REFERENCE_DIR) + "/runs";

// The environment the fixtures were made in, or "" when this BLIS has no generic kernels.
std::vector<std::string> fixture_environment() {
  const std::vector<std::string> names = kernels::this_blis().arch_names;
  const auto generic = std::find(names.begin(), names.end(), "generic");
  if (generic == names.end()) return {};
  return {"TG_MAX_ISA=portable", "TG_FAST_KERNELS=1",
          "BLIS_ARCH_TYPE=" + std::to_string(generic - names.begin())};
}

// loss.csv without its timing columns (tokens_per_s, elapsed_s), one string per row.
std::vector<std::string> untimed_rows(const std::string& path) {
  std::istringstream in(read_bytes(path));
  std::vector<std::string> rows;
  std::vector<size_t> timing;  // the timing columns' places, from the header
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (rows.empty())
      for (size_t i = 0; i < cells.size(); ++i)
        if (cells[i] == "tokens_per_s" || cells[i] == "elapsed_s") timing.push_back(i);
    std::string row;
    for (size_t i = 0; i < cells.size(); ++i)
      if (std::find(timing.begin(), timing.end(), i) == timing.end()) row += cells[i] + ",";
    rows.push_back(row);
  }
  return rows;
}

void expect_same_log(const std::string& got, const std::string& want) {
  const std::vector<std::string> a = untimed_rows(got), b = untimed_rows(want);
  ASSERT_EQ(a.size(), b.size()) << got << " vs " << want;
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "row " << i << " of " << got << " vs " << want;
}

// Skips (with the reason) where these runs cannot or need not happen here.
std::string why_not_here() {
  if (tg::built_with_address_sanitizer()) return "minutes under AddressSanitizer; the Release suite runs it";
  if (example_program("train_gpt").empty()) return "train_gpt is not built";
  if (fixture_environment().empty()) return "this BLIS has no generic kernels";
  // These runs set their own kernels: the suites CI repeats with other kernels would repeat them alone.
  if (const char* fast = std::getenv("TG_FAST_KERNELS"); fast && std::string(fast) == "0")
    return "the same run as with the fast kernels on (it sets TG_FAST_KERNELS=1): that suite runs it";
  if (std::getenv("TG_MAX_ISA"))
    return "the same run as without TG_MAX_ISA (it sets TG_MAX_ISA=portable): that suite runs it";
  return "";
}

// The default run at one thread: its numbers are the same at any count (ThreadIdentity), and ctest
// -j runs other tests beside it. At two threads, each waiting for the other at every step while the
// other test held a core, it took 173 s in ctest -j2 on 2 cores (77 s alone).
TEST(RunFixtures, TheDefaultRunLogsTheSameLossesAsBefore) {
  if (const std::string why = why_not_here(); !why.empty()) GTEST_SKIP() << why;
  TempFolder dir;
  const ProgramRun run =
      run_program(example_program("train_gpt"), {"--out", dir.file("run"), "--threads", "1"}, fixture_environment());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  expect_same_log(dir.file("run/loss.csv"), kRuns + "/default_loss.csv");
}

TEST(RunFixtures, SavedRunFoldersResumeBitForBit) {
  if (const std::string why = why_not_here(); !why.empty()) GTEST_SKIP() << why;
  for (const std::string name : {"char_run", "bpe_run"}) {
    SCOPED_TRACE(name);
    TempFolder dir;
    const std::string run_dir = dir.file(name);
    std::filesystem::copy(kRuns + "/" + name, run_dir);
    plan_steps(run_dir, 50);  // the 30-step run as one of 50 stopped at 30: its resume is the plain schedule's
    const ProgramRun run =
        run_program(example_program("train_gpt"), {"--resume", run_dir, "--steps", "50"}, fixture_environment());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    expect_same_log(run_dir + "/loss.csv", kRuns + "/" + name + "_resumed_loss.csv");
    EXPECT_TRUE(read_bytes(run_dir + "/model.safetensors") == read_bytes(kRuns + "/" + name + "_resumed_model.safetensors"))
        << "the resumed model's weights differ from the ones saved before";
  }
}

}  // namespace
}  // namespace tg::test
