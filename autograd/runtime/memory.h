// autograd/runtime/memory.h — tensor memory: what is alive, and the cache that recycles buffers.
//
//   tg::MemoryStats m = tg::memory_stats();
//   m.live_storages   tensor buffers alive now (views share their base's buffer: not counted)
//   m.live_bytes      their sizes in bytes, as asked for
//   m.peak_bytes      the most live_bytes has been since the start or reset_peak_memory_stats()
//   m.cached_bytes    freed buffers kept for reuse (see below)
//   m.system_allocations  buffers taken from the system so far (not from the cache)
//   m.reserved_bytes  what the allocator holds from the system now: live buffers and cache (below)
//   m.cache_limit_bytes  the most the cache may hold now (below): the peak of live memory since
//                     the process began (reset_peak_memory_stats leaves it), or TG_CACHE_LIMIT_MB
//
// Read allocate_storage next: the comment above it says how the cache reuses freed buffers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tg {

// A tensor buffer as the allocator hands it out: `capacity` bytes, at least what was asked.
struct Buffer {
  void* data = nullptr;
  size_t capacity = 0;
};

// Where Storage gets its buffer and gives it back (memory.cpp): 64-byte aligned, from
// the cache of freed buffers when one of about that size is there. allocate_storage throws
// "out of memory: cannot allocate N bytes".
//
// The cache: a freed buffer is kept, by size, and the next tensor of that size takes it. A training
// step asks for the same sizes every time, so after the first steps its buffers come from the cache
// (all of them for a small model; see the margin below): no calls to the system allocator, no fresh
// pages to fault in (the system hands big blocks back to the kernel on free, and zero-fills them
// again on the next touch). With no buffer of its size cached, a tensor takes the smallest cached
// one up to 1.5 times its size: backward frees the activations while it makes the gradients, which
// have other sizes, and without this the two would each keep buffers of their own. A buffer more
// than 1.5 times too big is left for a tensor of its own size, which the next step will ask for
// again.
//
// The cache lifts what the process holds at most a sixteenth (or 32 MiB) above what its tensors
// once needed. Before a buffer is taken from the system, cached buffers (the biggest first) go back
// until the live buffers, the cache and the new one fit in the most the live buffers ever took (or
// take with the new one) plus that margin. So at the end of a training step's backward, when the
// gradients are made while the activations sit freed in the cache, a big model's cache gives way
// instead of adding its activations to the peak, and those buffers come from the system again in
// the next step (docs/performance.md has a measured example). A small model's whole step stays
// cached. m.reserved_bytes is what the allocator holds: the live buffers' sizes as allocated (a
// reused buffer can be up to 1.5 times its tensor) plus the cache. Buffers of 1 MiB or more are
// mapped from the kernel and unmapped when freed (memory.cpp says why), so what the cache gives
// back leaves the process at once; from 4 MiB they ask Linux for transparent huge pages (a weight
// read front to back then crosses a page boundary every 2 MiB, not every 4 KiB). The cache also
// never holds more than the peak of live memory (at least 32 MiB), so a loop whose sizes keep
// changing (generation with a growing context) stays bounded. TG_CACHE_LIMIT_MB=N caps the cache at
// N MiB instead (0: no cache): less memory, and fresh pages to fault in on each step. empty_cache()
// gives everything cached back. Built with AddressSanitizer the cache is off, so a use after free
// is still caught.
Buffer allocate_storage(size_t nbytes);
void release_storage(const Buffer& buffer, size_t nbytes);

// What memory_stats() returns; the fields are described at the top of the file. A training step
// that frees what it no longer needs leaves live_bytes the same after every step (once the
// optimizer has made its state): the tape is released by backward, and with it every activation
// it kept.
struct MemoryStats {
  int64_t live_storages = 0;
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t cached_bytes = 0;
  int64_t system_allocations = 0;
  int64_t reserved_bytes = 0;
  int64_t cache_limit_bytes = 0;
};

MemoryStats memory_stats();
void reset_peak_memory_stats();  // peak_bytes = live_bytes
void empty_cache();              // free every cached buffer

// The whole process: the most resident memory it has had (tensors, the allocator's cache, BLIS's
// buffers, the program itself), as the benchmarks and train_gpt report it.
double peak_rss_mb();  // the process's peak resident memory in MiB (getrusage's ru_maxrss)
// The process's resident memory now, in MiB (Linux: /proc/self/statm; macOS: the task's
// resident_size); where neither is there, the peak.
double resident_mb();

// Whether tapegrad was built under AddressSanitizer (TG_SANITIZE=ON, or -fsanitize=address given by
// hand). Then the cache is off, so that every free reaches the sanitizer. Asked at run time, so the
// answer is the library's own, whatever flags the code asking was built with.
bool built_with_address_sanitizer();

}  // namespace tg
