// autograd/autocast.cpp — the per-thread autocast mode (see autocast.h).
#include "autograd/autocast.h"

#include <string>

#include "autograd/error.h"

namespace tg {

namespace {
thread_local ScalarType autocast_mode = kFloat32;
}  // namespace

ScalarType autocast_dtype() { return autocast_mode; }

AutocastGuard::AutocastGuard(ScalarType dtype) : previous_(autocast_mode) {
  if (dtype != kBFloat16 && dtype != kFloat32) {
    throw Error(std::string("AutocastGuard: dtype must be bfloat16 (on) or float32 (off), got ") + dtype_name(dtype));
  }
  autocast_mode = dtype;
}

AutocastGuard::~AutocastGuard() { autocast_mode = previous_; }

}  // namespace tg
