// autograd/runtime/parallel.h — how many threads tapegrad uses, and parallel_for for our own loops.
//
//   set_num_threads(n)   BLIS's gemm and our parallel_for both use n threads from now on
//   get_num_threads()    defaults to the number of cores, applied to BLIS on first use
//   parallel_for(begin, end, grain, fn)   fn on chunks of [begin, end), over the threads (below)
//
// The threads are OpenMP's, the same team BLIS's gemms run on, or, in a build without OpenMP
// (TG_OPENMP=OFF), a small pool of std::threads; both run the same chunks, so the same bits
// (autograd/runtime/parallel.cpp says why). Threads do not survive fork(), so in a forked child
// tapegrad runs on one thread and set_num_threads keeps it there (as PyTorch does).
#pragma once
#include <cstdint>
#include <functional>

namespace tg {

void set_num_threads(int n);  // n >= 1
int get_num_threads();

// Splits [begin, end) into at most get_num_threads() chunks of at least `grain` items and calls
// fn(chunk_begin, chunk_end) on each, the caller running one chunk itself; returns when all are
// done. Runs fn(begin, end) inline when the range is no more than one grain, when there is one
// thread, or when called from inside a parallel_for. An exception thrown by any chunk is rethrown
// in the caller. The chunks depend on the thread count: a loop whose result would change with its
// chunk boundaries (a reduction) must not use it so.
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace tg
