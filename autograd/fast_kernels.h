// autograd/fast_kernels.h — the one switch between tapegrad's plain code and its fast code.
//
// Every op has a plain `_reference` version (loops a reader can follow, in autograd/ops/) and
// may have a fast path (SIMD, BLIS, fused ops, in autograd/kernels/). With the switch on (the
// default) ops take their fast path where one applies; off, every op runs its reference code,
// the optimizers run their reference loops, and the nn layers run the notebooks' composition
// of ops instead of fused ones. Both give the same numbers to float rounding, so a learner can
// step through the plain code in a debugger and see what a fast run computes.
#pragma once
#include <string>

namespace tg {

// The switch: true where ops take their fast path. The environment variable TG_FAST_KERNELS=0
// turns it off when the program starts (1, or none, leaves it on; any other value is an Error at
// the first op, see runtime/environment.h); set_fast_kernels changes it later, for the whole
// process. Change it between steps, not while another thread runs ops.
bool fast_kernels();
void set_fast_kernels(bool enabled);

// Says which kernels the fast path runs on this machine, in one line:
//   "BLIS 0.9.0 (OpenMP) skx kernels (chosen by tapegrad: BLIS would pick generic) | tapegrad
//    avx512 kernels, bf16 avx512_bf16"
// BLIS's version and threading, the kernels BLIS runs and who chose them (BLIS itself, the
// user's BLIS_ARCH_TYPE, or tapegrad: kernels/blis_kernels.h), then the instruction set of
// tapegrad's own kernels (kernels/isa.h) and the bfloat16 gemm's kernel (kernels/gemm.h). It
// starts BLIS if nothing has yet, so a bad BLIS_ARCH_TYPE or TG_BF16_KERNEL is an Error there.
std::string kernel_info();

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
