// autograd/runtime/work_split.h — how much work pays for a thread: the one place tapegrad's
// parallel loops take their split rules from, with the measurement that set them.
//
// A parallel loop (tg::parallel_for) wakes the other threads, hands each a chunk and waits for
// the last. That costs about kWakeNs whatever the chunks hold. A chunk is worth a thread of its
// own when it takes kPayback wake-ups' time or more: then the wake-up costs at most 1/kPayback of
// the loop (and a loop split n ways still gains nearly n-fold). The loops here are memory-bound
// (a chunk streams its bytes once), so the time of a chunk is its bytes over one core's read
// rate:
//
//   kMinBytesPerThread = kPayback * kWakeNs * kCoreReadBytesPerNs
//
// and a loop over items of b bytes is cut into chunks of about grain_for(b) items (parallel_for
// makes ceil(n / grain) equal chunks, at most one a thread). A loop of one grain or less runs on
// the caller and wakes no one. The products count multiply-adds instead: kMinMacsPerThread, one
// core's multiply-add rate times the same time.
//
// The measurement: bench/bench_threads (wake_us at every thread count, read_gbps of one thread,
// one thread's multiply-adds a ns in a small product).
// Set on a 2-core AMD EPYC (Zen 5) guest with OpenMP (libgomp), 2026-11-29: wake-up 3.9-5.0 us
// at 2 threads (threads already up; tapegrad's own pool, TG_OPENMP=OFF: 1.7-2.9 us); one thread
// reads at 18-40 GB/s (the guest shares its memory's bandwidth). kCoreMacsPerNs: one thread ran
// the small config's (2048, 128) @ (128, 384) product at 47-70 multiply-adds a ns (AVX-512,
// small_gemm) and 29 (TG_MAX_ISA=avx2) on a 2-core Intel Xeon (Emerald Rapids) guest,
// 2026-12-01; it held an estimate of 20 before, which gave a thread about a third of the
// products it should have. The AVX-512 figure is the one held, the larger grain (as for the
// wake-up below); at 2 threads the small and medium configs trained at the same speed with
// either (3 interleaved rounds, the same losses). Not yet measured on many cores: a
// wake-up that grows with the thread count there belongs in kWakeNs (the larger figure: a thread
// that waits a little longer for work costs less than one woken for nothing).
#pragma once
#include <algorithm>
#include <cstdint>

namespace tg::work_split {

constexpr double kWakeNs = 4000;             // one parallel loop's wake-up and join, in ns
constexpr double kCoreReadBytesPerNs = 25;   // one core's read rate, in bytes per ns (= GB/s)
constexpr double kCoreMacsPerNs = 50;        // one core's float32 multiply-adds per ns, small products (AVX-512)
constexpr double kPayback = 4;               // a chunk lasts at least this many wake-ups

constexpr int64_t kMinBytesPerThread = static_cast<int64_t>(kPayback * kWakeNs * kCoreReadBytesPerNs);
constexpr int64_t kMinMacsPerThread = static_cast<int64_t>(kPayback * kWakeNs * kCoreMacsPerNs);

// Items that hold at least `least` of work, for items of `per_item` each (at least one item).
constexpr int64_t items_holding(int64_t least, int64_t per_item) {
  const int64_t each = std::max<int64_t>(per_item, 1);
  return std::max<int64_t>(1, (least + each - 1) / each);
}

// A chunk's items, for items of `bytes_per_item` bytes (or of `macs_per_item` multiply-adds).
constexpr int64_t grain_for(int64_t bytes_per_item) { return items_holding(kMinBytesPerThread, bytes_per_item); }
constexpr int64_t grain_for_macs(int64_t macs_per_item) { return items_holding(kMinMacsPerThread, macs_per_item); }

}  // namespace tg::work_split
