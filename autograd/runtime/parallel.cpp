// autograd/runtime/parallel.cpp — the thread count (ours and BLIS's) and parallel_for.
//
// parallel_for cuts a range into chunks and runs them on threads of one of two kinds, chosen when
// tapegrad is built (CMake's TG_OPENMP):
//   - OpenMP (the default where the compiler has it): the runtime Debian's default BLIS build
//     (blis-openmp) already uses for its gemms. Our loops and BLIS's products then take turns on
//     one team of threads. With a pool of our own beside BLIS's team, the two sets of threads
//     spin-waited against each other for the same cores after every product.
//   - a small pool of std::threads of our own, for a compiler without OpenMP (macOS's Apple
//     Clang). Its workers spin for a few tens of microseconds after a loop (the next layer's loop
//     comes sooner), then sleep, so they leave the cores to BLIS's threads.
// Both run the same chunks (the split below), so every result is the same with either, at every
// thread count.
#include "autograd/runtime/parallel.h"

#include <blis.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#if TG_OPENMP
#include <omp.h>
#endif

#include "autograd/error.h"
#include "autograd/kernels/blis_kernels.h"

namespace tg {

namespace {

// Neither OpenMP's threads nor ours survive fork(): in the child, a parallel loop would wait
// forever for the parent's threads. So a forked child runs everything on its one thread, ours
// and BLIS's loops alike (PyTorch does the same).
bool g_forked_child = false;

int& thread_count();

void after_fork_in_child() {
  g_forked_child = true;
  thread_count() = 1;
  bli_thread_set_num_threads(1);
}

// BLIS 0.9 keeps its thread count process-wide (later versions keep one per application
// thread), so we set it once, at first use, and again on every set_num_threads.
int& thread_count() {
  static int count = [] {
    kernels::choose_blis_kernels();  // before BLIS starts (it picks its kernels once); may throw
    const int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    bli_thread_set_num_threads(n);
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    return n;
  }();
  return count;
}

// Runs chunk(c) for every c in [0, chunks), at most `chunks` at a time, the caller running some
// itself; returns when all are done. The first exception a chunk throws is rethrown here.
using ChunkBody = std::function<void(int64_t)>;

// Keeps the first exception any chunk throws.
class FirstError {
 public:
  void run(const ChunkBody& chunk, int64_t c) {
    try {
      chunk(c);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

#if TG_OPENMP

bool in_parallel_loop() { return omp_in_parallel(); }

// OpenMP runs every chunk even when it gives the region fewer threads than asked for.
void run_chunks(int64_t chunks, const ChunkBody& chunk) {
  FirstError error;
#pragma omp parallel for schedule(static, 1) num_threads(static_cast<int>(chunks))
  for (int64_t c = 0; c < chunks; ++c) error.run(chunk, c);
  error.rethrow();
}

#else  // a pool of std::threads

thread_local bool t_in_parallel_loop = false;  // true on a worker, and on a caller while it runs chunks

bool in_parallel_loop() { return t_in_parallel_loop; }

// Workers that wait for a loop, then take its chunks one at a time (a shared counter) until none
// is left. One loop runs at a time; a second caller waits for the first to finish.
//
// Waiting: the layers of a step call loop after loop, microseconds apart, so a worker that has
// finished one spins a while (kSpin) for the next before it goes to sleep on the condition
// variable, and a caller wakes sleepers only when there are some. Waking a sleeping thread costs
// a system call on each side; a spinning one sees the new loop in well under a microsecond
// (bench/bench_threads measures both). After kSpin of nothing the workers sleep, and leave the
// cores to BLIS's threads.
//
// The protocol, all on atomics (sequentially consistent):
//   caller   publishes the loop (body, chunks, next = 0), opens it (open = true), bumps
//            generation; runs chunks itself; closes it (open = false); waits until active == 0
//   worker   sees generation change; active += 1; if open, runs chunks; active -= 1
// A worker counted in `active` either saw the loop open, and the caller waits for it, or finds it
// closed and leaves without touching it. One that comes late may find the next loop open: then it
// runs that loop's chunks, counted in that loop's `active`, which is as good.
class ThreadPool {
 public:
  void run(int64_t chunks, const ChunkBody& chunk) {
    std::lock_guard<std::mutex> one_loop_at_a_time(loop_mutex_);
    grow_to(chunks - 1);  // the caller is the last thread
    FirstError error;
    body_ = &chunk;
    error_ = &error;
    chunks_ = chunks;
    next_.store(0);
    open_.store(true);
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);  // a sleeper is either waiting or will see the new generation
      wake_.notify_all();
    }
    t_in_parallel_loop = true;
    take_chunks();
    t_in_parallel_loop = false;
    open_.store(false);
    for (int64_t spins = 0; active_.load() != 0; ++spins) relax(spins);
    error.rethrow();
  }

 private:
  // One step of a wait, the spins-th: the CPU's pause for the first 64, then giving the core to
  // any other thread that wants it (on a machine with fewer cores than threads, the one being
  // waited for may need this one's core).
  static void relax(int64_t spins) {
    if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    } else {
      std::this_thread::yield();
    }
  }

  // Runs chunks until every one has been taken.
  void take_chunks() {
    for (int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) error_->run(*body_, c);
  }

  // Returns once generation_ differs from `seen`: spinning for up to kSpin, then asleep.
  void wait_for_loop(uint64_t seen) {
    constexpr auto kSpin = std::chrono::microseconds(25);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t spins = 0; generation_.load() == seen; ++spins) {
      if ((spins & 63) == 63 && std::chrono::steady_clock::now() - start > kSpin) {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
        return;
      }
      relax(spins);
    }
  }

  void worker() {
    t_in_parallel_loop = true;
    uint64_t seen = 0;
    for (;;) {
      wait_for_loop(seen);
      seen = generation_.load();
      active_.fetch_add(1);
      if (open_.load()) take_chunks();
      active_.fetch_sub(1);
    }
  }

  void grow_to(int64_t workers) {
    while (threads_ < workers) {
      std::thread([this] { worker(); }).detach();
      ++threads_;
    }
  }

  std::mutex loop_mutex_;   // held by the caller of the running loop
  std::mutex sleep_mutex_;  // with wake_: where workers sleep after kSpin of nothing
  std::condition_variable wake_;
  int64_t threads_ = 0;  // the caller's (under loop_mutex_)
  // The running loop: written by its caller before open_ is set, read by workers after they see it.
  const ChunkBody* body_ = nullptr;
  FirstError* error_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<bool> open_{false};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> active_{0};    // workers between seeing a generation and leaving it
  std::atomic<int64_t> sleepers_{0};  // workers asleep (or about to be) on wake_
};

void run_chunks(int64_t chunks, const ChunkBody& chunk) {
  // Never destroyed: its workers wait for the next loop until the process ends.
  static ThreadPool* const pool = new ThreadPool;
  pool->run(chunks, chunk);
}

#endif  // TG_OPENMP

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
  if (chunks <= 1 || in_parallel_loop()) {
    fn(begin, end);
    return;
  }
  // chunk c covers [begin + c*n/chunks, begin + (c+1)*n/chunks), whichever thread runs it
  run_chunks(chunks, [&](int64_t c) { fn(begin + c * n / chunks, begin + (c + 1) * n / chunks); });
}

}  // namespace tg
