// autograd/fast_kernels.cpp — the switch of fast_kernels.h.
#include "autograd/fast_kernels.h"

#include <atomic>

#include "autograd/kernels/blis_kernels.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/isa.h"
#include "autograd/runtime/environment.h"

namespace tg {

namespace {

bool from_environment() { return environment_choice("TG_FAST_KERNELS", {"0", "1"}).value_or("1") == "1"; }

// Read on first use: a bad TG_FAST_KERNELS throws from that call (and from every call after it,
// as the static stays unset), not while the program is being loaded.
std::atomic<bool>& switch_state() {
  static std::atomic<bool> enabled{from_environment()};
  return enabled;
}

}  // namespace

bool fast_kernels() { return switch_state().load(std::memory_order_relaxed); }
void set_fast_kernels(bool enabled) { switch_state().store(enabled, std::memory_order_relaxed); }

std::string kernel_info() {
  return kernels::blis_kernels_in_use() + " | tapegrad " + kernels::isa_name(kernels::best_isa()) + " kernels, bf16 " +
         kernels::bf16_gemm::kernel_name(kernels::bf16_kernel());
}

FastKernelsGuard::FastKernelsGuard(bool enabled) : previous_(fast_kernels()) { set_fast_kernels(enabled); }
FastKernelsGuard::~FastKernelsGuard() { set_fast_kernels(previous_); }

}  // namespace tg
