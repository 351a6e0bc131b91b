// autograd/runtime/work_split.h — how much work pays for a thread: the one place tapegrad's
// parallel loops take their split rules from.
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
// the caller and wakes no one.
#pragma once
#include <algorithm>
#include <cstdint>

namespace tg::work_split {

// The constants are measured with bench/bench_threads (wake_us at every thread count, read_gbps
// of one thread, one thread's multiply-adds a ns in a small product); the figures, and the
// machines they came from, are in docs/performance.md. Where machines or settings disagree, the
// constants hold the larger grain: a thread that waits a little longer for work costs less than
// one woken for nothing. Not yet measured on many cores: a wake-up that grows with the thread
// count there belongs in kWakeNs.
constexpr double kWakeNs = 4000;             // one parallel loop's wake-up and join, in ns
constexpr double kCoreReadBytesPerNs = 25;   // one core's read rate, in bytes per ns (= GB/s)
constexpr double kCoreMacsPerNs = 50;        // one core's float32 multiply-adds per ns, small products (AVX-512)
constexpr double kPayback = 4;               // a chunk lasts at least this many wake-ups

constexpr int64_t kMinBytesPerThread = static_cast<int64_t>(kPayback * kWakeNs * kCoreReadBytesPerNs);
// The products count multiply-adds instead: one core's multiply-add rate times the same time.
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
