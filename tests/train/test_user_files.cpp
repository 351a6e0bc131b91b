// User files (io/user_file.h): a path that is not a regular file is refused before it is
// opened, with one line naming the path and what it is, by every reader of user files: a FIFO never
// blocks the program, a character device (a link to one too) is never read, a folder is called a
// folder. Each case is tried on each reader; none of them changes anything in the folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "io/user_file.h"
#include "test_util.h"
#include "tokenizers/tokenizer.h"
#include "train/corpus.h"
#include "train/run_log.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using test::TempFolder;

// The error of fn, which reads the FIFO at fifo. Should fn block in open() (the bug), a watchdog
// opens the FIFO's other end after 5 s so that the test ends, and the test fails.
std::string error_without_blocking(const std::string& fifo, const std::function<void()>& fn) {
  std::atomic<bool> done{false}, had_to_unblock{false};
  std::thread watchdog([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    while (!done) {  // fn is blocked: a writer lets its open() return
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        had_to_unblock = true;
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::string error = test::error_of(fn);
  done = true;
  watchdog.join();
  EXPECT_FALSE(had_to_unblock) << fifo << " blocked the reader";
  return error;
}

// Each reader of user files, with the text its messages start with for a path.
struct Reader {
  const char* name;
  std::function<std::string(const std::string&)> who;
  std::function<void(const std::string&)> read;
};
const std::vector<Reader>& readers() {
  static const std::vector<Reader> all = {
      {"read_user_file", [](const std::string& p) { return p; }, [](const std::string& p) { read_user_file(p); }},
      {"json::parse_file", [](const std::string& p) { return p; }, [](const std::string& p) { json::parse_file(p); }},
      {"load_safetensors", [](const std::string& p) { return "load_safetensors: " + p; },
       [](const std::string& p) { load_safetensors(p); }},
      {"read_input", [](const std::string& p) { return "--data " + p; },
       [](const std::string& p) { train::read_input(p, "--data"); }},
      {"load_tokenizer", [](const std::string& p) { return p; },
       [](const std::string& p) { tokenizers::load_tokenizer(p); }},
  };
  return all;
}

TEST(UserFile, AFifoIsRefusedBeforeItIsOpenedByEveryReader) {
  TempFolder dir;
  const std::string fifo = dir.file("model.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto before = test::folder_listing(dir.path);
  for (const Reader& r : readers())
    EXPECT_EQ(error_without_blocking(fifo, [&] { r.read(fifo); }), r.who(fifo) + ": is a FIFO (named pipe), not a file")
        << r.name;
  // a link to one: the same (links are followed)
  const std::string link = dir.file("link.json");
  fs::create_symlink(fifo, link);
  EXPECT_EQ(error_without_blocking(fifo, [&] { json::parse_file(link); }), link + ": is a FIFO (named pipe), not a file");
  fs::remove(link);
  EXPECT_EQ(test::folder_listing(dir.path), before);
}

TEST(UserFile, ALossCsvThatIsAFifoIsRefused) {
  TempFolder dir;
  const std::string fifo = dir.file("loss.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_without_blocking(fifo, [&] { train::RunLog::read(dir.path, 0); }),
            fifo + ": is a FIFO (named pipe), not a file");
}

TEST(UserFile, FoldersDevicesAndMissingFilesAreNamedForWhatTheyAre) {
  TempFolder dir;
  fs::create_directory(dir.file("folder.json"));
  fs::create_symlink("/dev/zero", dir.file("zero.json"));
  const auto before = test::folder_listing(dir.path);
  for (const Reader& r : readers()) {
    const std::string folder = dir.file("folder.json"), zero = dir.file("zero.json"), none = dir.file("none/x.json");
    EXPECT_EQ(test::error_of([&] { r.read(zero); }), r.who(zero) + ": is a character device, not a file") << r.name;
    if (std::string(r.name) == "load_tokenizer") continue;  // a folder is a tokenizer's folder; a missing path
                                                            // is "no such file or folder" there
    EXPECT_EQ(test::error_of([&] { r.read(folder); }), r.who(folder) + ": is a folder, not a file") << r.name;
    EXPECT_EQ(test::error_of([&] { r.read(none); }), r.who(none) + ": no such file") << r.name;
  }
  EXPECT_EQ(test::folder_listing(dir.path), before);
}

TEST(UserFile, ReadsRegularFilesThroughLinksAndTheirFirstLine) {
  TempFolder dir;
  test::write_bytes(dir.file("a.txt"), "first\nsecond\n");
  fs::create_symlink(dir.file("a.txt"), dir.file("b.txt"));
  EXPECT_EQ(read_user_file(dir.file("b.txt")), "first\nsecond\n");
  EXPECT_EQ(UserFile(dir.file("a.txt")).read_first_line(), "first");
  EXPECT_EQ(UserFile(dir.file("a.txt")).size(), 13u);
  test::write_bytes(dir.file("empty.txt"), "");
  EXPECT_EQ(read_user_file(dir.file("empty.txt")), "");
  EXPECT_EQ(test::error_of([&] { read_input_file(dir.file("empty.txt"), "--data x"); }), "--data x: the file is empty");
}

}  // namespace
}  // namespace tg
