// autograd/parallel.cpp — the thread count (ours and BLIS's) and a small std::thread pool.
//
// BLIS keeps its own threads (OpenMP in Debian's default build); we only tell it how many to
// use. In BLIS 0.9 that setting is process-wide (later versions keep one per application
// thread), so we set it once, at first use, and again on every set_num_threads.
#include "autograd/parallel.h"

#include <blis.h>
#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "autograd/tensor.h"

namespace tg {

namespace {

// True on pool workers, and on a caller while it runs its own chunk: a parallel_for started
// there runs inline instead of queueing work behind itself (which could deadlock the pool).
thread_local bool in_parallel_region = false;

// n - 1 worker threads taking tasks from one queue; the thread calling parallel_for is the n-th.
class ThreadPool {
 public:
  explicit ThreadPool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

 private:
  void work() {
    in_parallel_region = true;
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, and nothing left to do
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();  // never throws: parallel_for's tasks catch everything
    }
  }

  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> tasks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

struct Threads {
  int count = 1;
  std::unique_ptr<ThreadPool> pool;  // made on first use, after fork() too
};

void apply(Threads& t, int n) {
  t.count = n;
  t.pool = nullptr;
  bli_thread_set_num_threads(n);
}

// In the child of a fork() only the forking thread exists: the pool's workers are gone (and
// its mutex may be held by one of them). Forget the pool without touching it (a small leak,
// once per fork) so that the child's first parallel_for makes a new one.
void forget_pool_in_child();

// Made on first use: one thread per core.
Threads& threads() {
  static Threads t = [] {
    Threads d;
    apply(d, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    pthread_atfork(nullptr, nullptr, forget_pool_in_child);
    return d;
  }();
  return t;
}

void forget_pool_in_child() {
  static_cast<void>(threads().pool.release());
  in_parallel_region = false;
}

ThreadPool& pool() {
  Threads& t = threads();
  if (!t.pool) t.pool = std::make_unique<ThreadPool>(t.count - 1);
  return *t.pool;
}

// Waits for the chunks handed to the pool and keeps the first exception any of them threw.
struct Join {
  std::mutex mutex;
  std::condition_variable done;
  int64_t pending = 0;
  std::exception_ptr error;

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = e;
  }
  void finish_one() {
    std::lock_guard<std::mutex> lock(mutex);  // notify under the lock: the waiter may free us
    if (--pending == 0) done.notify_one();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [this] { return pending == 0; });
  }
};

}  // namespace

void set_num_threads(int n) {
  if (n < 1) throw Error("set_num_threads: expected a positive number of threads, got " + std::to_string(n));
  apply(threads(), n);
}

int get_num_threads() { return threads().count; }

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  const int64_t n = end - begin;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = std::min<int64_t>(get_num_threads(), (n + grain - 1) / grain);
  if (chunks <= 1 || in_parallel_region) {
    fn(begin, end);
    return;
  }
  // chunk c covers [begin + c*n/chunks, begin + (c+1)*n/chunks)
  auto chunk_begin = [&](int64_t c) { return begin + c * n / chunks; };
  Join join;
  join.pending = chunks - 1;
  for (int64_t c = 1; c < chunks; ++c) {
    pool().submit([&, c] {
      try {
        fn(chunk_begin(c), chunk_begin(c + 1));
      } catch (...) {
        join.fail(std::current_exception());
      }
      join.finish_one();
    });
  }
  in_parallel_region = true;
  try {
    fn(chunk_begin(0), chunk_begin(1));
  } catch (...) {
    join.fail(std::current_exception());
  }
  in_parallel_region = false;
  join.wait();
  if (join.error) std::rethrow_exception(join.error);
}

}  // namespace tg
