// Nothing the user saved is lost or replaced by the programs that write files (train_gpt,
// generate): a FIFO or a device named as an output file is written into, never replaced; a run
// folder whose save was cut short before loss.csv resumes with a new log; an edited loss.csv
// (CRLF, blank lines) resumes; a killed save's temporary files are removed by the next save and
// by resuming, and nothing else of the folder's; a run that fails leaves no empty --out folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "nn/safetensors.h"
#include "io/flags.h"
#include "train/run_folder.h"
#include "train/corpus.h"
#include "test_util.h"

namespace tg::test {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTiny = {"--steps", "3", "--eval-every", "2", "--batch", "2", "--context", "8",
                                        "--emb-dim", "8", "--heads", "2", "--layers", "1", "--eval-batches", "1",
                                        "--warmup", "1", "--sample-tokens", "5", "--threads", "1"};

#define SKIP_WITHOUT_EXAMPLES() \
  if (example_program("train_gpt").empty()) GTEST_SKIP() << "the examples are not built"

// One tiny 3-step run for the whole suite; each test works on its own copy.
class SavedFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (example_program("train_gpt").empty()) return;
    original_ = std::make_unique<TempFolder>();
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--out", original_->file("run")});
    const ProgramRun r = run_program(example_program("train_gpt"), args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { original_.reset(); }

  std::string copy_of_run() {
    const std::string run = dir_.file("run");
    fs::copy(original_->file("run"), run, fs::copy_options::recursive);
    return run;
  }

  static inline std::unique_ptr<TempFolder> original_;
  TempFolder dir_;
};

size_t lines_of(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

std::vector<std::string> names_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(folder)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(SavedFiles, GenerateWritesLogitsIntoAFifoAndLeavesItAFifo) {
  SKIP_WITHOUT_EXAMPLES();
  const std::string run = copy_of_run(), fifo = dir_.file("logits.pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const int reader = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // the write never waits for a reader
  ASSERT_GE(reader, 0) << std::strerror(errno);
  const ProgramRun r = run_program(example_program("generate"),
                                   {"--ckpt", run, "--prompt-ids", "1,2", "--tokens", "0", "--logits-out", fifo});
  std::string bytes(1 << 16, '\0');
  const ssize_t n = ::read(reader, bytes.data(), bytes.size());
  ::close(reader);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  ASSERT_GT(n, 0);
  bytes.resize(static_cast<size_t>(n));
  write_bytes(dir_.file("logits.safetensors"), bytes);  // what came through the pipe is the whole file
  const NamedTensors logits = load_safetensors(dir_.file("logits.safetensors"));
  ASSERT_EQ(logits.size(), 1u);
  EXPECT_EQ(logits[0].first, "logits");
  EXPECT_EQ(logits[0].second.size(0), 2);
  EXPECT_EQ(names_in(dir_.path), (std::vector<std::string>{"logits.pipe", "logits.safetensors", "run"}));
}

// The null device, made in the test's own folder (the system's /dev/null is never at stake):
// --write-corpus and --logits-out go into it, and it stays a device.
TEST_F(SavedFiles, ADeviceNamedAsTheOutputFileStaysADevice) {
  SKIP_WITHOUT_EXAMPLES();
  const std::string null = dir_.file("null");
  if (!make_null_device(null)) GTEST_SKIP() << "cannot make a device here (not root, or a nodev mount)";
  ProgramRun r = run_program(example_program("train_gpt"), {"--write-corpus", null});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status(null)));
  const std::string run = copy_of_run();
  r = run_program(example_program("generate"),
                  {"--ckpt", run, "--prompt-ids", "1", "--tokens", "0", "--logits-out", null});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status(null)));
  EXPECT_EQ(names_in(dir_.path), (std::vector<std::string>{"null", "run"}));  // no temporary file
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status("/dev/null")));
}

// A kill between the checkpoint's renames and loss.csv's: the checkpoint resumes, and says that
// its log starts anew.
TEST_F(SavedFiles, ARunWithoutLossCsvResumesWithANewLog) {
  SKIP_WITHOUT_EXAMPLES();
  const std::string run = copy_of_run();
  fs::remove(run + "/loss.csv");
  const ProgramRun r = run_program(example_program("train_gpt"), {"--resume", run, "--steps", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "train_gpt: " + run + "/loss.csv is missing (a save cut short before it was "
                                 "written): the checkpoint resumes, and a new loss.csv starts after step 3"));
  const std::string csv = read_bytes(run + "/loss.csv");
  EXPECT_EQ(lines_of(csv), 3u);  // the header, steps 4 and 5
  EXPECT_EQ(csv.substr(csv.find('\n') + 1, 2), "4,");
  EXPECT_TRUE(has_part(read_bytes(run + "/summary.json"), "\"steps\": 5"));
}

// loss.csv opened in an editor and saved: CRLF line ends, trailing spaces, blank lines.
TEST_F(SavedFiles, AnEditedLossCsvResumes) {
  SKIP_WITHOUT_EXAMPLES();
  const std::string run = copy_of_run();
  const std::string csv = read_bytes(run + "/loss.csv");
  std::string edited;
  for (char c : csv) edited += c == '\n' ? std::string("  \r\n") : std::string(1, c);
  edited.insert(edited.find('\n') + 1, "\r\n");  // a blank line after the header
  write_bytes(run + "/loss.csv", edited + "\r\n\n");
  ProgramRun r = run_program(example_program("train_gpt"), {"--resume", run, "--steps", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string resumed = read_bytes(run + "/loss.csv");
  EXPECT_EQ(resumed.substr(0, csv.size()), csv);  // the 3 rows, as written before the edit
  EXPECT_EQ(lines_of(resumed), 5u);

  // Any other damage is still one line naming the line (the blank line 2 counts).
  write_bytes(run + "/loss.csv", csv.substr(0, csv.find('\n') + 1) + "\nnot,a,row\n");
  r = run_program(example_program("train_gpt"), {"--resume", run, "--steps", "5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "train_gpt: " + run + "/loss.csv: line 3: expected step,train_loss,"));
}

// What a killed save leaves: temporary files of the run's own files. A user's files beside
// them, even with names much like them, stay.
const std::vector<std::string> kLeftovers = {"model.safetensors.tmp-0badf00d", "optimizer.safetensors.tmp-12345678",
                                             "loss.csv.tmp-abcdef01", "summary.json.tmp-00000000",
                                             "model.safetensors.prev.tmp", "optimizer.safetensors.prev.tmp"};
const std::vector<std::string> kUsersFiles = {"notes.txt", "model.safetensors.tmp-mine",
                                              "model.safetensors.prev.tmp.bak", "mine.tmp-0badf00d",
                                              "loss.csv.tmp-abcdef01.old"};

void plant(const std::string& run) {
  for (const std::string& name : kLeftovers) write_bytes(run + "/" + name, "half a file");
  for (const std::string& name : kUsersFiles) write_bytes(run + "/" + name, "the user's " + name);
}

void expect_cleaned(const std::string& run) {
  for (const std::string& name : kLeftovers) EXPECT_FALSE(fs::exists(run + "/" + name)) << name;
  for (const std::string& name : kUsersFiles) EXPECT_EQ(read_bytes(run + "/" + name), "the user's " + name);
}

TEST_F(SavedFiles, ResumingRemovesAKilledSavesTemporaryFilesAndNothingElse) {
  SKIP_WITHOUT_EXAMPLES();
  const std::string run = copy_of_run();
  const std::vector<std::string> before = names_in(run);
  plant(run);
  const ProgramRun r = run_program(example_program("train_gpt"), {"--resume", run});  // no step: nothing saved
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_cleaned(run);
  std::vector<std::string> want = before;
  want.insert(want.end(), kUsersFiles.begin(), kUsersFiles.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names_in(run), want);
}

TEST(SavedFilesSave, TheNextSaveRemovesAKilledSavesTemporaryFilesAndNothingElse) {
  train::TrainOptions o;
  o.batch = 2;
  o.model.context_length = 8;
  o.model.emb_dim = 8;
  o.model.n_heads = 2;
  o.model.n_layers = 1;
  o.steps = 2;
  o.warmup = 1;
  train::Trainer trainer(o, train::builtin_corpus(4000, 3));
  TempFolder dir;
  train::save_run(trainer, dir.path);
  trainer.train_step();
  plant(dir.path);
  train::save_run(trainer, dir.path);
  // loss.csv and summary.json are train_gpt's to write (their own writes remove theirs)
  for (const std::string& name : kLeftovers) {
    if (name.starts_with("model") || name.starts_with("optimizer")) {
      EXPECT_FALSE(fs::exists(dir.file(name))) << name;
    }
  }
  for (const std::string& name : kUsersFiles) EXPECT_EQ(read_bytes(dir.file(name)), "the user's " + name);
  EXPECT_TRUE(fs::exists(dir.file("model.safetensors.prev")));
}

TEST_F(SavedFiles, AFailedRunLeavesNoFolderItMade) {
  SKIP_WITHOUT_EXAMPLES();
  // The parent is made, then the folder cannot be: a name longer than any filesystem takes.
  const std::string out = dir_.file("new/" + std::string(300, 'x'));
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), {"--out", out});
  const ProgramRun r = run_program(example_program("train_gpt"), args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "train_gpt: --out: cannot make the folder '" + out + "': "));
  EXPECT_FALSE(fs::exists(dir_.file("new")));
  EXPECT_TRUE(fs::is_directory(dir_.path));
}

// A run that throws with its OutputFolder in scope.
void fail_with_folder(const std::string& dir, const std::string& file_written = "") {
  try {
    const OutputFolder folder(dir, "--out");
    EXPECT_TRUE(fs::is_directory(dir));
    if (!file_written.empty()) write_bytes(dir + "/" + file_written, "written");
    throw Error("the run failed");
  } catch (const Error&) {
  }
}

TEST(OutputFolder, AFailedRunRemovesTheEmptyFoldersItMadeAndNoOthers) {
  TempFolder dir;
  fail_with_folder(dir.file("runs/a/b"));
  EXPECT_FALSE(fs::exists(dir.file("runs")));  // runs/a/b, runs/a and runs were all made
  EXPECT_EQ(dir.count(), 0u);

  fs::create_directories(dir.file("kept/empty"));
  fail_with_folder(dir.file("kept/empty"));
  fail_with_folder(dir.file("kept/new/deeper/"));
  EXPECT_TRUE(fs::is_directory(dir.file("kept/empty")));  // there before: stays, empty as it is
  EXPECT_FALSE(fs::exists(dir.file("kept/new")));

  fail_with_folder(dir.file("written/run"), "loss.csv");
  EXPECT_EQ(read_bytes(dir.file("written/run/loss.csv")), "written");

  { const OutputFolder folder(dir.file("done"), "--out"); }  // a run that succeeded
  EXPECT_TRUE(fs::is_directory(dir.file("done")));
}

}  // namespace
}  // namespace tg::test
