// autograd/io/atomic_file.cpp — temporary file, fsync, rename, fsync of the folder.
#include "autograd/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "autograd/error.h"

namespace tg {

AtomicFile::AtomicFile(const std::string& target, const std::string& who) : target_(target), who_(who) {
  std::random_device random;
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%08x", static_cast<unsigned>(random()));
    temp_path_ = target + suffix;
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) fail("cannot create a temporary file " + temp_path_);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)), temp_path_(std::move(other.temp_path_)), who_(std::move(other.who_)),
      fd_(other.fd_), renamed_(other.renamed_) {
  other.fd_ = -1;
  other.renamed_ = true;  // the moved-from object owns no temporary file any more
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!renamed_) ::unlink(temp_path_.c_str());
}

void AtomicFile::fail(const std::string& what) const {
  throw Error(who_ + ": " + target_ + ": " + what + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

void AtomicFile::write(const void* data, uint64_t count) {
  if (fd_ < 0) fail("write after prepare");
  const char* in = static_cast<const char*>(data);
  while (count > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(count, 1u << 30));
    const ssize_t wrote = ::write(fd_, in, chunk);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) fail("cannot write " + temp_path_);
    in += wrote;
    count -= static_cast<uint64_t>(wrote);
  }
}

void AtomicFile::prepare() {
  if (fd_ < 0) return;
  if (::fsync(fd_) != 0) fail("cannot sync " + temp_path_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close " + temp_path_);
}

void AtomicFile::commit() {
  prepare();
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0) fail("cannot rename " + temp_path_ + " to it");
  renamed_ = true;
  const std::string folder = std::filesystem::path(target_).parent_path().string();
  const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = dir >= 0 && ::fsync(dir) == 0;
  if (dir >= 0) ::close(dir);
  if (!synced) fail("saved, but cannot sync its folder");
}

void write_file_atomically(const std::string& path, const std::string& contents, const std::string& who) {
  AtomicFile file(path, who);
  file.write(contents);
  file.commit();
}

}  // namespace tg
