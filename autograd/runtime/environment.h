// autograd/runtime/environment.h — the environment variables tapegrad reads, all read one way: a
// value it does not know is an Error naming the variable, the value and what it takes, never a
// silent default (TG_FAST_KERNELS=off must not leave the fast kernels on).
//
//   TG_FAST_KERNELS    0 or 1                    fast_kernels.h: 0 runs the plain reference code
//   TG_BF16_KERNEL     avx512_bf16 or fma        kernels/gemm.h: the bfloat16 gemm's kernel
//   TG_MAX_ISA         avx512, avx2 or portable  kernels/isa.h: the widest instruction set tapegrad uses
//   TG_DETECT_ANOMALY  0 or 1                    tape.h: anomaly mode on every thread
//   TG_GRADCHECK_SEED  a decimal number < 2^32   gradcheck.h: the fuzz runs' seed
//   TG_CACHE_LIMIT_MB  a decimal number          runtime/memory.h: the most freed tensor memory kept
//                                                for reuse, in MiB (0: none); unset: the peak of
//                                                live tensor memory
//   BLIS_ARCH_TYPE     BLIS's kernels by number  BLIS's own variable, checked before BLIS starts:
//                      (-1: BLIS's own pick)     kernels it or this CPU cannot run are an Error
//                                                (kernels/blis_kernels.h)
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tg {

// Unset and empty mean the same: the default. Each is read when it is first needed (the first op,
// the first bfloat16 product), so the Error reaches the caller there, as any other bad input does.
//
// The value of the variable `name`, one of `allowed`; nullopt when it is unset or empty.
// Anything else throws: "TG_FAST_KERNELS=off: expected 0 or 1 (or leave it unset)".
std::optional<std::string> environment_choice(const char* name, const std::vector<std::string>& allowed);

// The value of the variable `name` as a decimal number in [0, max]; nullopt when it is unset or
// empty. Anything else (a sign, a letter, a number past max) throws.
std::optional<uint64_t> environment_number(const char* name, uint64_t max);

}  // namespace tg
