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
// and a loop over items of b bytes gives each thread at least grain_for(b) items. A loop with
// fewer than 2 * that runs on the caller and wakes no one. The products count multiply-adds
// instead: kMinMacsPerThread, one core's multiply-add rate times the same time.
//
// The measurement: bench/bench_threads (wake_us at every thread count, read_gbps of one thread).
// Set on a 2-core AMD EPYC (Zen 5) guest with OpenMP (libgomp), 2026-11-29:
//   wake-up 0.6-1.0 us at 2 threads (threads already up); one thread reads at 24-27 GB/s.
// On a 16-core Xeon earlier, libgomp's wake-up at 16 threads was a few microseconds, so the
// constant below takes the larger figure: a thread that waits a little longer for work costs
// less than one woken for nothing.
#pragma once
#include <algorithm>
#include <cstdint>

namespace tg::work_split {

constexpr double kWakeNs = 4000;             // one parallel loop's wake-up and join, in ns
constexpr double kCoreReadBytesPerNs = 25;   // one core's read rate, in bytes per ns (= GB/s)
constexpr double kCoreMacsPerNs = 20;        // one core's float32 multiply-adds per ns, small products
constexpr double kPayback = 4;               // a chunk lasts at least this many wake-ups

constexpr int64_t kMinBytesPerThread = static_cast<int64_t>(kPayback * kWakeNs * kCoreReadBytesPerNs);
constexpr int64_t kMinMacsPerThread = static_cast<int64_t>(kPayback * kWakeNs * kCoreMacsPerNs);

// Items a thread gets at least, for items of `bytes_per_item` bytes (or multiply-adds, below).
constexpr int64_t grain_for(int64_t bytes_per_item) {
  return std::max<int64_t>(1, (kMinBytesPerThread + std::max<int64_t>(bytes_per_item, 1) - 1) /
                                  std::max<int64_t>(bytes_per_item, 1));
}
constexpr int64_t grain_for_macs(int64_t macs_per_item) {
  return std::max<int64_t>(1, (kMinMacsPerThread + std::max<int64_t>(macs_per_item, 1) - 1) /
                                  std::max<int64_t>(macs_per_item, 1));
}

}  // namespace tg::work_split
