// autograd/runtime/environment.cpp — reading tapegrad's environment variables (environment.h).
#include "autograd/runtime/environment.h"

#include <algorithm>
#include <cstdlib>

#include "autograd/error.h"

namespace tg {

namespace {

// The variable's value, or nullopt when it is unset or empty.
std::optional<std::string> value_of(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

Error bad_value(const char* name, const std::string& value, const std::string& expected) {
  return Error(std::string(name) + "=" + value + ": expected " + expected + " (or leave it unset)");
}

}  // namespace

std::optional<std::string> environment_choice(const char* name, const std::vector<std::string>& allowed) {
  const std::optional<std::string> value = value_of(name);
  if (!value || std::find(allowed.begin(), allowed.end(), *value) != allowed.end()) return value;
  std::string expected;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (i > 0) expected += i + 1 == allowed.size() ? " or " : ", ";
    expected += allowed[i];
  }
  throw bad_value(name, *value, expected);
}

std::optional<uint64_t> environment_number(const char* name, uint64_t max) {
  const std::optional<std::string> value = value_of(name);
  if (!value) return std::nullopt;
  uint64_t number = 0;
  for (char c : *value) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    // digits only, and number * 10 + digit <= max (asked before it is computed: it could wrap)
    if (c < '0' || c > '9' || digit > max || number > (max - digit) / 10) {
      throw bad_value(name, *value, "a decimal number from 0 to " + std::to_string(max));
    }
    number = number * 10 + digit;
  }
  return number;
}

}  // namespace tg
