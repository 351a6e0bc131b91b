// tests/test_util.h — small helpers the test files share.
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <string>

namespace tg::test {

// The message of the exception fn() throws, or "" if it throws none (a check on the message
// then fails and prints it).
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// EXPECT_TRUE(has_part(message, "dim 3 out of range")): on failure prints both.
inline ::testing::AssertionResult has_part(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message: " << (message.empty() ? "(nothing was thrown)" : message)
                                       << "\n  lacks: " << part;
}

}  // namespace tg::test
