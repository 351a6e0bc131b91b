// tests/fetched_files.h — the tests that read files .ci/install-deps.sh fetches into .cache/ (the
// tokenizer.json and tokenizer_config.json of Qwen and Llama, never committed).
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tg::test {

// Whether path is there. If not, the running test is marked skipped, or failed when the
// environment sets TG_REQUIRE_TOKENIZER_FILES=1 (as .ci/run does); the caller then returns.
inline bool fetched_file_ready(const std::string& path) {
  if (std::filesystem::is_regular_file(path)) return true;
  const std::string why = path + " is missing; fetch it with `bash .ci/install-deps.sh`";
  const char* require = std::getenv("TG_REQUIRE_TOKENIZER_FILES");
  if (require && std::string(require) == "1") ADD_FAILURE() << why << ", required by TG_REQUIRE_TOKENIZER_FILES=1";
  else [&] { GTEST_SKIP() << why; }();
  return false;
}

}  // namespace tg::test
