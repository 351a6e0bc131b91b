// bench/bench_util.h — what the benchmarks share: timing a call, the machine's own limits
// (raw sgemm GFLOP/s, STREAM-like memory bandwidth). Which kernels ran is tg::kernel_info
// (autograd/fast_kernels.h); peak RSS is tg::peak_rss_mb (autograd/runtime/memory.h).
//
// Timing: each number is the median over repeats of (time of `iters` calls) / iters, with iters
// chosen so that one repeat takes at least ~20 ms; a few warmup calls come first.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "io/flags.h"
#include "io/json.h"
#include "models/gpt.h"

namespace tg::bench {

double seconds_for(const std::function<void()>& fn, int64_t iters);  // wall time of iters calls
double median(std::vector<double> v);

// The smallest seconds per call of fn over repeats (for the machine's limits: the best it can do).
double best_seconds(const std::function<void()>& fn, int repeats);
// Median seconds per call of fn.
double time_one(const std::function<void()>& fn, int repeats = 7);
// Median seconds per call of each of two functions, timed in alternation (so drift in clock
// speed or load hits both alike).
std::pair<double, double> time_pair(const std::function<void()>& f, const std::function<void()>& g, int repeats = 7);

std::string format_time(double seconds);  // "  12.34 us" or "   1.234 ms"

// Normal values from std::mt19937 (independent of tapegrad's random ops), float32.
Tensor random_matrix(const Shape& shape, uint32_t seed = 1);

// c (M,N) row-major = a (M,K) @ b (K,N) through BLIS's typed API, a and b read through the
// given row and column strides.
void raw_sgemm(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, int64_t rsa, int64_t csa,
               int64_t rsb, int64_t csb);

// The number of the BLIS kernels this process runs (BLIS's arch_t, as BLIS_ARCH_TYPE takes it),
// after tapegrad has chosen them: compare_gpt.py gives PyTorch the same kernels by this number.
int blis_arch_type();

// A run's JSON line to stdout, after the kernels that ran: "blas" (tg::kernel_info) and
// "blis_arch_type". Returns 0, the run's exit status.
int print_run_line(json::Writer& line);

// The compute limit: GFLOP/s (2*n^3 per call) of raw bli_sgemm on n x n row-major matrices, on
// the threads BLIS has now (tg::set_num_threads sets them), best of `repeats` timed repeats.
double sgemm_peak_gflops(int64_t n = 1024, int repeats = 5);
// The same for bfloat16 products (bfloat16 inputs, float32 sums): tapegrad's bf16 gemm
// (autograd/kernels/bf16_gemm.h, the kernel matmul uses under autocast) on n x n bfloat16
// matrices, on our threads. bf16 runs' MFU counts against it.
double bf16_gemm_peak_gflops(int64_t n = 1024, int repeats = 5);

// The memory limit, as STREAM measures it, on float arrays of n elements split over
// tg::parallel_for's threads:
//   copy    a[i] = b[i]              counted as 2 * 4 * n bytes per pass (one read, one write)
//   triad   a[i] = b[i] + s * c[i]   counted as 3 * 4 * n bytes per pass (two reads, one write)
//   sum     s += b[i]                 counted as 4 * n bytes per pass (one read; in 16 lanes, no
//                                     prefetch hint: what the hardware alone reads at)
// (the write-allocate read some caches add is not counted, as in STREAM). GB/s of the best of
// `repeats` timed repeats. n = 0, the default, measures main memory: the arrays together hold
// main_memory_bytes(). A few MB measures the caches instead.
enum class Stream { Copy, Triad, Sum };
double stream_gbps(Stream kind, int64_t n = 0, int repeats = 7);

// How many bytes a measurement of main memory's rate reads and writes: 4 times the largest cache
// this CPU says it has (Linux's /sys/devices/system/cpu/cpu0/cache), and at least 256 MiB, so
// that little of what a pass touched is still cached when the next pass comes round. A fixed
// 64 MB was not enough: an Intel Xeon (Emerald Rapids) guest has 300 MiB of L3, and two threads
// read 64 MB at 41-48 GB/s, 256 MiB and more at 20-22.
int64_t main_memory_bytes();

// A language model's token table and head, by name (the GPT's tok_emb.weight and out_head.weight,
// a Llama's model.embed_tokens.weight and lm_head.weight). A head tied to the table is listed once
// among the parameters, as the table: head_is_tied says so when no head name is among them.
bool is_token_table(const std::string& name);
bool head_is_tied(const NamedTensors& parameters);

// Minor page faults per call of fn (getrusage's ru_minflt over `calls` calls): memory the
// allocator got fresh from the kernel (glibc's malloc maps large blocks anew unless it reuses
// them), which the kernel then zeroes page by page.
double page_faults_per_call(const std::function<void()>& fn, int calls = 5);

// The GPT benchmarks' configs (bench_gpt's table): the model's shape (vocab_size 0: the
// corpus's characters fill it in) and the training batch.
struct GPTBenchConfig {
  models::GPTConfig model;
  int64_t batch;
};
GPTBenchConfig gpt_bench_config(const std::string& name);  // "tiny", "small" or "medium"
Flag gpt_bench_config_flag(std::string* name);  // --config {tiny|small|medium}

// --threads-sweep 1,2,4,8,16: the benchmarks run once per count, one line each. parse_threads_sweep
// reads the list (a UsageError naming the text when it is not counts from 1 to 1024).
Flag threads_sweep_flag(std::string* counts);
std::vector<int> parse_threads_sweep(const std::string& text);
// run() once with *threads set to each count of the sweep (the run reads *threads), or once as
// it is when the sweep is ""; the first non-zero exit status stops the sweep and is returned.
int for_each_thread_count(const std::string& sweep, int64_t* threads, const std::function<int()>& run);

// Sets tapegrad's (and BLIS's) threads to `requested`, or to all cores when it is 0; returns the count.
int use_threads(int64_t requested);

std::string load_average();  // the 1-minute load average from /proc/loadavg, or "unknown"

}  // namespace tg::bench
