// autograd/memory.h — how much tensor memory is alive, to watch a training loop for leaks.
//
//   tg::MemoryStats m = tg::memory_stats();
//   m.live_storages   tensor buffers alive now (views share their base's buffer: not counted)
//   m.live_bytes      their sizes in bytes, as asked for
//   m.peak_bytes      the most live_bytes has been since the start or reset_peak_memory_stats()
//
// A training step that frees what it no longer needs leaves these the same after every step
// (once the optimizer has made its state): the tape is released by backward, and with it every
// activation it kept. Counted for all threads together.
#pragma once
#include <cstdint>

namespace tg {

struct MemoryStats {
  int64_t live_storages = 0;
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
};

MemoryStats memory_stats();
void reset_peak_memory_stats();  // peak_bytes = live_bytes

}  // namespace tg
