// autograd/memory.cpp — the live-memory counters behind memory_stats(), kept by Storage.
#include "autograd/memory.h"

#include <atomic>

#include "autograd/internal.h"

namespace tg {

namespace {
std::atomic<int64_t> g_live_storages{0};
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};
}  // namespace

void note_storage_allocated(size_t nbytes) {
  g_live_storages.fetch_add(1, std::memory_order_relaxed);
  const int64_t live = g_live_bytes.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed) +
                       static_cast<int64_t>(nbytes);
  int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void note_storage_freed(size_t nbytes) {
  g_live_storages.fetch_sub(1, std::memory_order_relaxed);
  g_live_bytes.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
}

MemoryStats memory_stats() {
  MemoryStats m;
  m.live_storages = g_live_storages.load(std::memory_order_relaxed);
  m.live_bytes = g_live_bytes.load(std::memory_order_relaxed);
  m.peak_bytes = g_peak_bytes.load(std::memory_order_relaxed);
  return m;
}

void reset_peak_memory_stats() { g_peak_bytes.store(g_live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace tg
