// AtomicFile: the target changes only at commit, an abandoned write leaves no temporary file,
// and errors name the program part, the target and what failed. What is already under the
// target's name is never replaced by anything but a file: a FIFO or a character device is
// written into, a symbolic link keeps pointing where it did, a folder or a socket is an error;
// a killed write's temporary file is removed by the next write of its target, and nothing else.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "io/atomic_file.h"
#include "test_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
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

// A named pipe is a stream the user asked for: the bytes go into it, and it stays a pipe.
TEST(AtomicFile, AFifoIsWrittenIntoAndStaysAFifo) {
  TempFolder dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // Its reader, opened first (read and write: no wait for a writer), so that the write never
  // waits either, whatever the code under test does.
  const int reader = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  write_file_atomically(fifo, "through the pipe", "test");
  char got[64] = {};
  const ssize_t n = ::read(reader, got, sizeof got);
  ::close(reader);
  EXPECT_EQ(std::string(got, n > 0 ? static_cast<size_t>(n) : 0), "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_EQ(dir.count(), 1u);  // no temporary file was made
}

// A character device (the null device, made in the test's own folder so that no system file
// is at stake): written into, never replaced by a regular file.
TEST(AtomicFile, ACharacterDeviceIsWrittenIntoAndStaysADevice) {
  TempFolder dir;
  const std::string null = dir.file("null");
  if (!test::make_null_device(null)) GTEST_SKIP() << "cannot make a device here (not root, or a nodev mount)";
  write_file_atomically(null, "gone", "test");
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status(null)));
  EXPECT_EQ(dir.count(), 1u);
  EXPECT_TRUE(fs::is_character_file(fs::symlink_status("/dev/null")));  // the system's is looked at, never written to
}

// A symbolic link stays a link; the file it points to is replaced, atomically, beside itself,
// and one it points to that is not there yet is made.
TEST(AtomicFile, ASymbolicLinkKeepsPointingAtTheFileItNames) {
  TempFolder dir;
  fs::create_directory(dir.file("data"));
  const std::string real = dir.file("data/real.txt"), link = dir.file("link.txt");
  write_file_atomically(real, "old", "test");
  fs::create_symlink("data/real.txt", link);  // relative: from the link's folder
  write_file_atomically(link, "new", "test");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), "data/real.txt");
  EXPECT_EQ(read_bytes(real), "new");
  EXPECT_EQ(dir.count(), 2u);  // data/ and the link: no temporary file left in either folder
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.file("data")), {}), 1);

  const std::string dangling = dir.file("dangling.txt");
  fs::create_symlink(dir.file("data/later.txt"), dangling);
  write_file_atomically(dangling, "made", "test");
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(read_bytes(dir.file("data/later.txt")), "made");
}

TEST(AtomicFile, AFolderOrASocketIsAnErrorAndStaysAsItWas) {
  TempFolder dir;
  const std::string folder = dir.file("out");
  fs::create_directory(folder);
  write_file_atomically(folder + "/inside.txt", "kept", "test");
  EXPECT_EQ(test::error_of([&] { write_file_atomically(folder, "x", "generate --logits-out"); }),
            "generate --logits-out: " + folder + ": is a folder, not a file");
  EXPECT_EQ(read_bytes(folder + "/inside.txt"), "kept");
  EXPECT_EQ(dir.count(), 1u);

  const std::string socket_path = dir.file("sock");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(::bind(sock, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0) << std::strerror(errno);
  EXPECT_EQ(test::error_of([&] { write_file_atomically(socket_path, "x", "test"); }),
            "test: " + socket_path + ": is a socket, not a file: it is not written over");
  ::close(sock);
  EXPECT_TRUE(fs::is_socket(socket_path));
}

// A killed write leaves "<target>.tmp-" and 8 hex digits; the next write of the target removes
// it, and leaves every other name, and the temporary file of a write still going on, alone.
TEST(AtomicFile, TheNextWriteRemovesAKilledWritesTemporaryFileAndNothingElse) {
  TempFolder dir;
  const std::string target = dir.file("loss.csv");
  const std::vector<std::string> kept = {"loss.csv.tmp-notes", "loss.csv.tmp-0badf00d.keep", "loss.csv.tmp-0BADF00D",
                                         "other.csv.tmp-0badf00d", "loss.csv.tmp-0badf00", "notes.txt"};
  for (const std::string& name : kept) test::write_bytes(dir.file(name), name);
  test::write_bytes(dir.file("loss.csv.tmp-0badf00d"), "half a file");  // a killed write's
  AtomicFile going_on(target, "test");  // a write still going on: its temporary file is locked
  going_on.write("first");
  going_on.prepare();

  write_file_atomically(target, "second", "test");
  EXPECT_FALSE(fs::exists(dir.file("loss.csv.tmp-0badf00d")));
  for (const std::string& name : kept) EXPECT_EQ(read_bytes(dir.file(name)), name);
  EXPECT_EQ(dir.count(), kept.size() + 2);  // and the target, and the write going on's temporary file
  going_on.commit();
  EXPECT_EQ(read_bytes(target), "first");
  EXPECT_EQ(dir.count(), kept.size() + 1);
}

}  // namespace
}  // namespace tg
