// bench/bench_threads.cpp — what a thread costs and what it brings: the measurements behind the
// split rules of autograd/runtime/work_split.h.
//
//   ./build/bench/bench_threads                       1, 2, 4, ... up to the cores
//   ./build/bench/bench_threads --threads-sweep 1,2,4,8,16
//
// One line per thread count n:
//   wake_us        a tg::parallel_for of n chunks of 10 us of work each, called over and over,
//                  less the time of one chunk alone: the price of one parallel loop (waking the
//                  other n - 1 threads and waiting for all of them) when the threads are
//                  already up, as they are between the layers of a step
//   idle_wake_us   the same after 2 ms with nothing to do (the threads may have gone to sleep)
//   read_gbps      gemv's row-by-row read of a matrix past the caches (bench_util's
//                  main_memory_bytes(): 256 MiB or more; autograd/kernels/gemv.h), cut
//                  into n bands: the rate one generated token reads its weights at
//   sum_gbps       bench_util's sum loop (s += b[i], a read only, no prefetch hint) on n threads:
//                  what a plain read gets from the hardware alone. A read_gbps well below it
//                  says gemv's loop reads badly on this CPU (a non-temporal prefetch hint halved
//                  it on an Intel Xeon: gemv.h)
//   copy_gbps      bench_util's copy loop (a[i] = b[i], counted as a read and a write) on n threads
// and, at the end, what work_split.h derives from the largest wake-up (of the counts up to the
// cores: past them, chunks wait for a core), one thread's read rate and one thread's rate of
// multiply-adds in the small config's products (matmul of (2048, 128) @ (128, 384), the fast
// kernels small_gemm.h or BLIS as matmul picks them), beside the constants it holds.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "io/flags.h"
#include "autograd/kernels/gemv.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"
#include "bench/bench_util.h"

using namespace tg;
using namespace tg::bench;

namespace {

// Work that keeps one core busy for a while and touches no memory: `steps` dependent steps.
uint64_t busy(uint64_t seed, int64_t steps) {
  for (int64_t i = 0; i < steps; ++i) seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return seed;
}

// Steps of busy() that take about 10 us on this core.
int64_t busy_steps_for_10us() {
  volatile uint64_t sink = 0;  // so the compiler keeps the work
  int64_t steps = 1000;
  while (time_one([&] { sink = busy(static_cast<uint64_t>(steps), steps); }, 3) < 10e-6 && steps < (int64_t{1} << 30))
    steps *= 2;
  return steps;
}

// What a parallel loop costs beyond its work: a loop of n chunks of 10 us each, against one
// chunk alone on the caller. (A chunk must take some time: with empty ones a pool's caller
// runs them all before a worker is even awake, and the loop measures nothing.)
double wake_seconds(int n, int64_t steps, const std::function<void()>& pause = {}) {
  std::vector<uint64_t> out(static_cast<size_t>(n) * 8);  // a cache line per chunk
  auto loop = [&] {
    parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) out[static_cast<size_t>(c) * 8] = busy(static_cast<uint64_t>(c), steps);
    });
  };
  auto alone = [&] { out[0] = busy(1, steps); };
  if (!pause) return time_one(loop) - time_one(alone);
  std::vector<double> loops, alones;
  for (int i = 0; i < 50; ++i) {
    pause();
    loops.push_back(seconds_for(loop, 1));
    pause();
    alones.push_back(seconds_for(alone, 1));
  }
  return median(loops) - median(alones);
}

// The same, each call after 2 ms with nothing to do.
double idle_wake_seconds(int n, int64_t steps) {
  return wake_seconds(n, steps, [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
}

// GB/s of gemv over the (M, K) matrix a, cut into n bands of rows, one per thread.
double read_gbps(const Tensor& a, int n) {
  const int64_t M = a.size(0), K = a.size(1);
  const Tensor x = random_matrix({K}, 2);
  std::vector<float> y(static_cast<size_t>(M));
  const float* pa = a.data_ptr<float>();
  const double s = best_seconds([&] {
    parallel_for(0, M, (M + n - 1) / n, [&](int64_t r0, int64_t r1) {  // inside: sgemv_rows runs on this thread
      gemv::sgemv_rows(y.data() + r0, 1, pa + r0 * K, K, x.data_ptr<float>(), r1 - r0, K);
    });
  }, 5);
  return static_cast<double>(M * K * 4) / s * 1e-9;
}

// One thread's multiply-adds per ns in a product of the small GPT config's training (its
// attention's input projection, B * T = 2048 rows of C = 128 against 3C = 384 columns).
double macs_per_ns_one_thread() {
  constexpr int64_t M = 2048, K = 128, N = 384;
  const int before = get_num_threads();
  set_num_threads(1);
  const Tensor a = random_matrix({M, K}, 3), b = random_matrix({K, N}, 4);
  const double s = best_seconds([&] { (void)matmul(a, b); }, 7);
  set_num_threads(before);
  return static_cast<double>(M * N * K) / s * 1e-9;
}

std::vector<int> default_sweep() {
  std::vector<int> counts;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int n = 1; n < cores; n *= 2) counts.push_back(n);
  counts.push_back(cores);
  return counts;
}

int run(const std::string& sweep_text) {
  const std::vector<int> sweep = sweep_text.empty() ? default_sweep() : parse_threads_sweep(sweep_text);
  std::printf("load average %s, %u cores\n\n", load_average().c_str(), std::thread::hardware_concurrency());
  std::printf("  threads  wake_us  idle_wake_us  read_gbps  sum_gbps  copy_gbps\n");
  const int64_t steps = busy_steps_for_10us();
  // gemv's matrix, past the caches, made once for every count (its values do not change how fast it
  // is read, so a constant: drawing 1.2 GB of random numbers took seconds a count)
  constexpr int64_t K = 4096;
  const Tensor matrix = full({main_memory_bytes() / 4 / K, K}, 0.5);
  double wake_at_most = 0, read_one = 0;
  for (int n : sweep) {
    set_num_threads(n);
    const double wake = wake_seconds(n, steps), idle = idle_wake_seconds(n, steps), read = read_gbps(matrix, n);
    const double sum = stream_gbps(Stream::Sum), copy = stream_gbps(Stream::Copy);
    std::printf("  %7d  %7.2f  %12.2f  %9.1f  %8.1f  %9.1f\n", n, wake * 1e6, idle * 1e6, read, sum, copy);
    if (n == 1) read_one = read;
    else if (n <= static_cast<int>(std::thread::hardware_concurrency())) wake_at_most = std::max(wake_at_most, wake);
  }
  if (read_one > 0 && wake_at_most > 0) {
    const double bytes = work_split::kPayback * wake_at_most * 1e9 * read_one;
    std::printf("\nderived: kPayback (%g) x wake-up (%.2f us) x one thread's read (%.1f GB/s) = %.0f KiB a thread\n",
                work_split::kPayback, wake_at_most * 1e6, read_one, bytes / 1024);
  }
  const double macs = macs_per_ns_one_thread();
  std::printf("one thread's products: %.1f multiply-adds a ns\n", macs);
  if (wake_at_most > 0)
    std::printf("derived: kPayback (%g) x wake-up (%.2f us) x one thread's products (%.1f multiply-adds a ns) = %.0fk "
                "multiply-adds a thread\n",
                work_split::kPayback, wake_at_most * 1e6, macs, work_split::kPayback * wake_at_most * 1e9 * macs / 1000);
  std::printf("work_split.h holds: wake-up %.2f us, one thread's read %.1f GB/s: %lld KiB a thread; "
              "%.1f multiply-adds a ns: %lldk multiply-adds a thread\n",
              work_split::kWakeNs * 1e-3, work_split::kCoreReadBytesPerNs,
              static_cast<long long>(work_split::kMinBytesPerThread / 1024), work_split::kCoreMacsPerNs,
              static_cast<long long>(work_split::kMinMacsPerThread / 1000));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sweep;
  const Program program{"bench_threads",
                        "What waking the threads costs and how fast 1..n threads read memory: "
                        "the measurements behind autograd/runtime/work_split.h.",
                        {threads_sweep_flag(&sweep)}};
  return run_program(program, argc, argv, [&] { return run(sweep); });
}
