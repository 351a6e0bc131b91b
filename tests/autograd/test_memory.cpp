// Tensor memory (autograd/runtime/memory.h): the live counters follow every buffer, freed buffers are
// reused by size (a buffer of up to 1.5 times a tensor's size serves it), and the cache stays
// bounded when sizes keep changing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <algorithm>
#include <vector>

#include "autograd/runtime/memory.h"
#include "autograd/ops.h"

namespace tg {
namespace {

const bool kCaching = !built_with_address_sanitizer();  // memory.cpp turns the cache off under AddressSanitizer

TEST(Memory, LiveCountersFollowBuffersNotViews) {
  const MemoryStats before = memory_stats();
  {
    Tensor a = empty({1000});  // 4000 bytes
    Tensor v = a.view({10, 100}).t();
    const MemoryStats during = memory_stats();
    EXPECT_EQ(during.live_storages - before.live_storages, 1);
    EXPECT_EQ(during.live_bytes - before.live_bytes, 4000);
    EXPECT_GE(during.peak_bytes, during.live_bytes);
  }
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.live_storages, before.live_storages);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
}

TEST(Memory, AFreedBufferIsReusedForTheNextTensorOfItsSize) {
  if (!kCaching) GTEST_SKIP() << "the cache is off under AddressSanitizer";
  empty_cache();  // a buffer up to 1.5 times the size, cached by an earlier test, would serve u
  { Tensor warm = empty({12345}); }
  const int64_t from_system = memory_stats().system_allocations;
  for (int i = 0; i < 10; ++i) {
    Tensor t = empty({12345});
    Tensor u = empty({12340});  // 49360 bytes round up to t's 49408: the same free list
    (void)t;
    (void)u;
  }
  EXPECT_EQ(memory_stats().system_allocations - from_system, 1) << "a second buffer of that size once, then only the cache";
}

TEST(Memory, AFreedBufferServesASmallerTensorOfAtLeastTwoThirdsItsSize) {
  if (!kCaching) GTEST_SKIP() << "the cache is off under AddressSanitizer";
  empty_cache();
  { Tensor big = empty({15000}); }  // 60000 bytes: a 60032-byte buffer (whole 64-byte lines) cached
  const MemoryStats before = memory_stats();
  {
    Tensor t = empty({10100});  // 40400 bytes, 40448 rounded: 60032 is under 1.5 times that
    EXPECT_EQ(memory_stats().system_allocations, before.system_allocations);
    EXPECT_EQ(memory_stats().cached_bytes, before.cached_bytes - 60032);
    Tensor u = empty({9000});  // 36032 bytes: 60032 is over 1.5 times that, so from the system
    EXPECT_EQ(memory_stats().system_allocations, before.system_allocations + 1);
  }
  EXPECT_EQ(memory_stats().cached_bytes, before.cached_bytes + 36032) << "each buffer goes back with its capacity";
  { Tensor again = empty({15000}); }
  EXPECT_EQ(memory_stats().system_allocations, before.system_allocations + 1) << "the 60032 bytes came back whole";
}

TEST(Memory, CacheStaysBoundedWhenSizesKeepChangingAndEmptyCacheFreesIt) {
  if (!kCaching) GTEST_SKIP() << "the cache is off under AddressSanitizer";
  empty_cache();
  reset_peak_memory_stats();
  int64_t most_cached = 0, freed = 0;
  for (int64_t n = 1; n <= 1000; ++n) {  // sizes 16 KiB ... 16 MiB, each used once: 7.8 GiB freed in all
    Tensor t = empty({n * 4096});
    (void)t;
    freed += n * 4096 * 4;
    most_cached = std::max(most_cached, memory_stats().cached_bytes);
  }
  const MemoryStats m = memory_stats();
  // The limit is the peak of live memory since the process began (at least 32 MiB): this loop's
  // own 16 MiB alone, or an earlier test's larger tensors in the same process.
  EXPECT_LE(most_cached, m.cache_limit_bytes);
  if (std::getenv("TG_CACHE_LIMIT_MB") == nullptr) {
    EXPECT_GE(m.cache_limit_bytes, std::max<int64_t>(int64_t{32} << 20, m.peak_bytes));
  }
  EXPECT_LT(most_cached, freed / 2) << "the cache kept most of what was freed";
  empty_cache();
  EXPECT_EQ(memory_stats().cached_bytes, 0);
}

TEST(Memory, ReusedBuffersHoldNoStaleValuesVisibleThroughOps) {
  // zeros/ones/full write every element even when the buffer comes from the cache.
  { Tensor junk = full({777}, 5.0); }
  EXPECT_EQ(zeros({777}).sum().item(), 0.0);
  { Tensor junk = full({777}, 5.0); }
  EXPECT_EQ(ones({777}).sum().item(), 777.0);
}

// At the end of a backward the gradients (new sizes) are made while the activations sit in the
// cache: the cache gives way, so the allocator never holds more than a sixteenth above what the live
// buffers once took.
// (Buffers this big are mapped, not touched by empty(): the test commits almost no memory.)
TEST(Memory, TheCacheGivesWayRatherThanLiftTheProcessAboveItsPeak) {
  if (!kCaching) GTEST_SKIP() << "the cache is off under AddressSanitizer";
  empty_cache();
  constexpr int64_t MiB = int64_t{1} << 20;
  const int64_t others = memory_stats().reserved_bytes;  // other tests' live tensors, if any
  {
    std::vector<Tensor> activations;
    for (int i = 0; i < 4; ++i) activations.push_back(empty({256 * MiB / 4}));  // 4 x 256 MiB, float32
  }
  EXPECT_EQ(memory_stats().cached_bytes, 1024 * MiB) << "freed, they are kept for the next step";
  std::vector<Tensor> gradients;
  for (int i = 0; i < 3; ++i) gradients.push_back(empty({300 * MiB / 4}));  // 3 x 300 MiB: none fits a cached buffer
  const MemoryStats m = memory_stats();
  EXPECT_LE(m.reserved_bytes - others, 1024 * MiB + 1024 * MiB / 16) << "the cache kept " << m.cached_bytes / MiB << " MiB";
  EXPECT_GE(m.reserved_bytes - others, 900 * MiB);
  gradients.clear();
  empty_cache();
  EXPECT_EQ(memory_stats().reserved_bytes, others);
}

// TG_CACHE_LIMIT_MB caps the cache (run with TG_CACHE_LIMIT_MB=0 by tests/CMakeLists.txt: a freed
// buffer goes straight back to the system).
TEST(Memory, TheCacheLimitFollowsTheEnvironment) {
  const char* v = std::getenv("TG_CACHE_LIMIT_MB");
  if (v == nullptr || std::string(v) != "0") GTEST_SKIP() << "TG_CACHE_LIMIT_MB is not 0";
  empty_cache();
  { const Tensor t = ones({1 << 20}); }
  EXPECT_EQ(memory_stats().cached_bytes, 0);
  const int64_t before = memory_stats().system_allocations;
  { const Tensor t = ones({1 << 20}); }
  EXPECT_EQ(memory_stats().system_allocations, before + 1);
}

}  // namespace
}  // namespace tg
