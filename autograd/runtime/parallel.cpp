// autograd/runtime/parallel.cpp — the thread count (ours and BLIS's) and parallel_for.
//
// One thread runtime for the whole process: parallel_for runs on OpenMP, the runtime Debian's
// default BLIS build (blis-openmp) already uses for its gemms. Our loops and BLIS's products
// then take turns on one team of threads. With a pool of our own beside BLIS's team, the two
// sets of threads spin-waited against each other for the same cores after every product.
//
// BLIS 0.9 keeps its thread count process-wide (later versions keep one per application
// thread), so we set it once, at first use, and again on every set_num_threads.
#include "autograd/runtime/parallel.h"

#include <blis.h>
#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "autograd/internal.h"
#include "autograd/tensor.h"

namespace tg {

namespace {

// OpenMP's threads do not survive fork(): in the child, a parallel region would wait forever
// for the parent's team. So a forked child runs everything on its one thread, ours and BLIS's
// loops alike (PyTorch does the same).
bool g_forked_child = false;

int& thread_count();

void after_fork_in_child() {
  g_forked_child = true;
  thread_count() = 1;
  bli_thread_set_num_threads(1);
}

int& thread_count() {
  static int count = [] {
    choose_blis_kernels();  // before BLIS starts: it picks its kernels once
    const int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    bli_thread_set_num_threads(n);
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    return n;
  }();
  return count;
}

}  // namespace

void set_num_threads(int n) {
  if (n < 1) throw Error("set_num_threads: expected a positive number of threads, got " + std::to_string(n));
  if (g_forked_child) return;  // stays 1: see after_fork_in_child
  thread_count() = n;
  bli_thread_set_num_threads(n);
}

int get_num_threads() { return thread_count(); }

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  const int64_t n = end - begin;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = std::min<int64_t>(get_num_threads(), (n + grain - 1) / grain);
  if (chunks <= 1 || omp_in_parallel()) {
    fn(begin, end);
    return;
  }
  // chunk c covers [begin + c*n/chunks, begin + (c+1)*n/chunks); OpenMP runs every chunk even
  // when it gives the region fewer threads than asked for.
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(static, 1) num_threads(static_cast<int>(chunks))
  for (int64_t c = 0; c < chunks; ++c) {
    try {
      fn(begin + c * n / chunks, begin + (c + 1) * n / chunks);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tg
