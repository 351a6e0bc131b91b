// examples/common/files.cpp — write to a temporary file beside the target, then rename it.
#include "examples/common/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "autograd/error.h"

namespace tg::examples {

void write_file_atomically(const std::string& path, const std::string& contents, const std::string& who) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  auto fail = [&](const std::string& reason) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(who + ": cannot write '" + path + "': " + reason);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) fail("writing the temporary file failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(ec.message());
}

}  // namespace tg::examples
