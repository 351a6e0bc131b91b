// AtomicFile: the target changes only at commit, an abandoned write leaves no temporary file,
// and errors name the program part, the target and what failed.
#include <gtest/gtest.h>

#include <string>

#include "autograd/io/atomic_file.h"
#include "test_util.h"

namespace tg {
namespace {

using test::read_bytes;
using test::TempFolder;

TEST(AtomicFile, TheTargetChangesOnlyAtCommit) {
  TempFolder dir;
  const std::string target = dir.file("a.txt");
  write_file_atomically(target, "old", "test");
  {
    AtomicFile f(target, "test");
    f.write("new contents");
    f.prepare();
    EXPECT_EQ(read_bytes(target), "old");
    EXPECT_EQ(dir.count(), 2u);  // the target and the temporary file
    f.commit();
  }
  EXPECT_EQ(read_bytes(target), "new contents");
  EXPECT_EQ(dir.count(), 1u);
}

TEST(AtomicFile, AnAbandonedWriteLeavesTheOldFileAndNoTemporary) {
  TempFolder dir;
  const std::string target = dir.file("b.txt");
  write_file_atomically(target, "kept", "test");
  {
    AtomicFile f(target, "test");
    f.write("half of it");
  }
  EXPECT_EQ(read_bytes(target), "kept");
  EXPECT_EQ(dir.count(), 1u);
}

TEST(AtomicFile, ErrorsNameWhoTheTargetAndWhatFailed) {
  TempFolder dir;
  const std::string target = dir.file("no/such/folder/c.txt");
  const std::string message = test::error_of([&] { write_file_atomically(target, "x", "train_gpt"); });
  EXPECT_TRUE(test::has_part(message, "train_gpt: " + target + ": cannot create a temporary file " + target + ".tmp-"));
  EXPECT_TRUE(test::has_part(message, "No such file or directory"));
}

}  // namespace
}  // namespace tg
