// autograd/fast_kernels.cpp — the switch of fast_kernels.h.
#include "autograd/fast_kernels.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace tg {

namespace {

bool from_environment() {
  const char* v = std::getenv("TG_FAST_KERNELS");
  return !(v && std::string(v) == "0");
}

std::atomic<bool>& switch_state() {
  static std::atomic<bool> enabled{from_environment()};
  return enabled;
}

}  // namespace

bool fast_kernels() { return switch_state().load(std::memory_order_relaxed); }
void set_fast_kernels(bool enabled) { switch_state().store(enabled, std::memory_order_relaxed); }

FastKernelsGuard::FastKernelsGuard(bool enabled) : previous_(fast_kernels()) { set_fast_kernels(enabled); }
FastKernelsGuard::~FastKernelsGuard() { set_fast_kernels(previous_); }

}  // namespace tg
