// examples/common/files.h — writing a file so that a reader never sees half of it.
//
// The contents go to "<path>.tmp<pid>" first, which is then renamed over path: a program that
// stops half-way leaves the old file (or none), never a truncated one.
#pragma once
#include <string>

namespace tg::examples {

// Throws tg::Error "<who>: cannot write 'plots/a.svg': <reason>" when the file cannot be made
// (no such folder, no permission, disk full); the temporary file is removed then.
void write_file_atomically(const std::string& path, const std::string& contents, const std::string& who);

}  // namespace tg::examples
