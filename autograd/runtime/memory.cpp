// autograd/runtime/memory.cpp — where tensor buffers come from: a cache of freed buffers by size in
// front of the system's aligned_alloc, and the counters behind memory_stats().
#include "autograd/runtime/memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <mach/mach.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/runtime/environment.h"

namespace tg {

namespace {

// GCC says it builds under AddressSanitizer with __SANITIZE_ADDRESS__, Clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
constexpr bool kAddressSanitizer = false;
#endif
constexpr bool kCacheEnabled = !kAddressSanitizer;  // let AddressSanitizer see every free
constexpr int64_t kMinCacheLimit = int64_t{32} << 20;

// Buffers are 64-byte aligned (a cache line; what AVX-512 loads like) and sized in whole lines,
// so two requests that round to the same size share a free list.
size_t rounded_size(size_t nbytes) { return nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64; }

// A request takes a cached buffer of at most 1.5 times its size (memory.h says why).
bool close_enough(size_t capacity, size_t size) { return capacity <= size + size / 2; }

// Big buffers are mapped from the kernel and unmapped on free, so a freed one never stays resident.
// Through malloc they might: the C library may keep them in its heap for its next requests
// (glibc does, once it has seen big blocks come and go), and the process then holds both.
constexpr size_t kMapFromSize = size_t{1} << 20;
constexpr bool kMapBigBuffers = kCacheEnabled;  // under AddressSanitizer, malloc: it checks those

// From this size a mapped buffer asks Linux for transparent huge pages (2 MiB each), where the
// system leaves that to the program (Debian's default, "madvise"). A weight read once per
// generated token, or a product's operand read front to back, then crosses a page boundary every
// 2 MiB instead of every 4 KiB: fewer TLB misses, and the hardware prefetcher, which stops at a
// page boundary, runs on. Only whole aligned 2 MiB pages inside the buffer become huge pages, so
// the buffer takes no more memory than before.
constexpr size_t kHugePagesFromSize = size_t{4} << 20;

void* system_allocate(size_t size) {
  if (!kMapBigBuffers || size < kMapFromSize) return std::aligned_alloc(64, size);
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
  if (size >= kHugePagesFromSize) madvise(data, size, MADV_HUGEPAGE);  // advice only: a refusal changes nothing
#endif
  return data;  // page-aligned, so 64-byte aligned
}

void system_free(void* data, size_t size) {
  if (!kMapBigBuffers || size < kMapFromSize) {
    std::free(data);
  } else {
    munmap(data, size);
  }
}

struct Pool {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_lists;  // capacity -> cached buffers (never an empty list)
  MemoryStats stats;
  int64_t live_capacity = 0;  // the live buffers' sizes as allocated (a cached buffer may be bigger than asked)
  int64_t high_water = 0;     // the most live_capacity ever (reset_peak_memory_stats leaves it)
  std::optional<int64_t> limit_from_environment;  // TG_CACHE_LIMIT_MB, read at the first allocation
  bool environment_read = false;
  // The most the cache may hold: TG_CACHE_LIMIT_MB when set, else the peak of live memory (at
  // least kMinCacheLimit).
  int64_t cache_limit() const {
    return limit_from_environment ? *limit_from_environment : std::max(kMinCacheLimit, high_water);
  }

  // Gives cached buffers back to the system, the biggest first, until at most `keep` bytes are cached.
  void shrink_cache_locked(int64_t keep) {
    while (stats.cached_bytes > keep) {
      auto biggest = std::prev(free_lists.end());
      system_free(biggest->second.back(), biggest->first);
      stats.cached_bytes -= static_cast<int64_t>(biggest->first);
      biggest->second.pop_back();
      if (biggest->second.empty()) free_lists.erase(biggest);
    }
  }
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: tensors in static objects may die after it
  return *p;
}

}  // namespace

Buffer allocate_storage(size_t nbytes) {
  size_t size = rounded_size(nbytes);
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.environment_read) {  // here, not in release_storage: a bad value throws to the caller
    const std::optional<uint64_t> mb = environment_number("TG_CACHE_LIMIT_MB", uint64_t{1} << 40);
    if (mb) p.limit_from_environment = static_cast<int64_t>(*mb) << 20;
    p.environment_read = true;
  }
  void* data = nullptr;
  auto it = p.free_lists.lower_bound(size);  // the smallest cached capacity >= size
  if (it != p.free_lists.end() && close_enough(it->first, size)) {
    size = it->first;
    data = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) p.free_lists.erase(it);
    p.stats.cached_bytes -= static_cast<int64_t>(size);
  } else {
    // A buffer from the system: first the cache shrinks so that the live buffers, the cache and
    // this one together hold at most the most the live buffers ever took (or take with this one),
    // plus a sixteenth (at least 32 MiB). So the cache lifts the process's memory above its
    // tensors' peak by that much at most; a small model keeps its whole step in the cache.
    const int64_t live_after = p.live_capacity + static_cast<int64_t>(size);
    const int64_t most = std::max(p.high_water, live_after);
    p.shrink_cache_locked(most + std::max(kMinCacheLimit, most / 16) - live_after);
    data = system_allocate(size);
    if (!data && p.stats.cached_bytes > 0) {  // memory is short: give the cache back, try again
      p.shrink_cache_locked(0);
      data = system_allocate(size);
    }
    if (!data) throw Error("out of memory: cannot allocate " + std::to_string(nbytes) + " bytes");
    ++p.stats.system_allocations;
  }
  ++p.stats.live_storages;
  p.stats.live_bytes += static_cast<int64_t>(nbytes);
  p.stats.peak_bytes = std::max(p.stats.peak_bytes, p.stats.live_bytes);
  p.live_capacity += static_cast<int64_t>(size);
  p.high_water = std::max(p.high_water, p.live_capacity);
  return {data, size};
}

void release_storage(const Buffer& buffer, size_t nbytes) {
  void* data = buffer.data;
  const size_t size = buffer.capacity;
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  --p.stats.live_storages;
  p.stats.live_bytes -= static_cast<int64_t>(nbytes);
  p.live_capacity -= static_cast<int64_t>(size);
  if (!kCacheEnabled || static_cast<int64_t>(size) > p.cache_limit()) {
    system_free(data, size);
    return;
  }
  p.shrink_cache_locked(p.cache_limit() - static_cast<int64_t>(size));  // room for this one
  p.free_lists[size].push_back(data);
  p.stats.cached_bytes += static_cast<int64_t>(size);
}

MemoryStats memory_stats() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  MemoryStats m = p.stats;
  m.reserved_bytes = p.live_capacity + p.stats.cached_bytes;
  m.cache_limit_bytes = p.cache_limit();
  return m;
}

void reset_peak_memory_stats() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.stats.peak_bytes = p.stats.live_bytes;
}

void empty_cache() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.shrink_cache_locked(0);
}

bool built_with_address_sanitizer() { return kAddressSanitizer; }

double peak_rss_mb() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
#if defined(__APPLE__)
  return static_cast<double>(r.ru_maxrss) / (1024.0 * 1024.0);  // macOS gives ru_maxrss in bytes
#else
  return static_cast<double>(r.ru_maxrss) / 1024.0;  // Linux (and the BSDs) in KiB
#endif
}

double resident_mb() {
#if defined(__APPLE__)
  mach_task_basic_info info{};
  mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
  if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, reinterpret_cast<task_info_t>(&info), &count) == KERN_SUCCESS)
    return static_cast<double>(info.resident_size) / (1024.0 * 1024.0);
#else
  std::ifstream statm("/proc/self/statm");  // pages: the program's size, then its resident part
  long long size = 0, resident = 0;
  if (statm >> size >> resident)
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
#endif
  return peak_rss_mb();
}

}  // namespace tg
