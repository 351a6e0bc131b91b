// autograd/error.h — tg::Error, the one exception type tapegrad throws.
#pragma once
#include <stdexcept>

namespace tg {

// Every error tapegrad throws (bad shapes, dims, dtypes, values, files, generator states, ...):
// the message starts with the op's or the component's name and says what was wrong.
// `catch (const tg::Error&)` catches them all.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tg
