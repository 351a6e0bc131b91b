// autograd/fast_kernels.h — the one switch between tapegrad's plain code and its fast code.
//
// Every op has a plain `_reference` version (loops a reader can follow, in autograd/ops/) and
// may have a fast path (SIMD, BLIS, fused ops, in autograd/kernels/). With the switch on (the
// default) ops take their fast path where one applies; off, every op runs its reference code,
// the optimizers run their reference loops, and the nn layers run the notebooks' composition
// of ops instead of fused ones. Both give the same numbers to float rounding, so a learner can
// step through the plain code in a debugger and see what a fast run computes.
//
// The environment variable TG_FAST_KERNELS=0 turns the switch off when the program starts
// (1, or none, leaves it on; any other value is an Error at the first op, see
// runtime/environment.h); set_fast_kernels changes it later, for the whole process. Change it
// between steps, not while another thread runs ops.
#pragma once

namespace tg {

bool fast_kernels();
void set_fast_kernels(bool enabled);

// While alive, the switch is `enabled`; then it is put back (for tests and comparisons).
class FastKernelsGuard {
 public:
  explicit FastKernelsGuard(bool enabled);
  ~FastKernelsGuard();
  FastKernelsGuard(const FastKernelsGuard&) = delete;
  FastKernelsGuard& operator=(const FastKernelsGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace tg
