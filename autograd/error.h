// autograd/error.h — tg::Error, the one exception type tapegrad throws.
//
// Every error from an op, the tape, the JSON reader, the generator's state or the random kernels
// is a tg::Error (a std::runtime_error): `catch (const tg::Error&)` catches all of them. The
// message starts with the name of what failed ("max: ...", "Generator::set_state: ...").
#pragma once

#include <stdexcept>

namespace tg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tg
