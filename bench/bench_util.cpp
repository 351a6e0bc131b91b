// bench/bench_util.cpp — timing, the machine's limits and process facts for the benchmarks.
#include "bench/bench_util.h"

#include <blis.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

#include "autograd/error.h"
#include "autograd/fast_kernels.h"
#include "autograd/kernels/gemm.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"

namespace tg::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Calls per repeat so that one repeat takes at least `target` seconds.
int64_t calibrate(const std::function<void()>& fn, double target = 0.02) {
  int64_t iters = 1;
  while (seconds_for(fn, iters) < target && iters < (int64_t(1) << 24)) iters *= 2;
  return iters;
}

}  // namespace

// The smallest seconds per call over repeats (for the machine's limits: the best it can do).
double best_seconds(const std::function<void()>& fn, int repeats) {
  fn();  // warmup: page faults, caches, BLIS's packing buffers
  const int64_t n = calibrate(fn);
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) best = std::min(best, seconds_for(fn, n) / static_cast<double>(n));
  return best;
}

double seconds_for(const std::function<void()>& fn, int64_t iters) {
  const auto start = Clock::now();
  for (int64_t i = 0; i < iters; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double time_one(const std::function<void()>& fn, int repeats) {
  for (int i = 0; i < 3; ++i) fn();
  const int64_t n = calibrate(fn);
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) t.push_back(seconds_for(fn, n) / static_cast<double>(n));
  return median(t);
}

std::pair<double, double> time_pair(const std::function<void()>& f, const std::function<void()>& g, int repeats) {
  for (int i = 0; i < 3; ++i) {  // warmup: caches, BLIS's packing buffers, the allocator
    f();
    g();
  }
  const int64_t nf = calibrate(f), ng = calibrate(g);
  std::vector<double> tf, tg_;
  for (int r = 0; r < repeats; ++r) {
    tf.push_back(seconds_for(f, nf) / static_cast<double>(nf));
    tg_.push_back(seconds_for(g, ng) / static_cast<double>(ng));
  }
  return {median(tf), median(tg_)};
}

std::string format_time(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%8.2f us", s * 1e6);
  else std::snprintf(buf, sizeof buf, "%8.3f ms", s * 1e3);
  return buf;
}

Tensor random_matrix(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = normal(rng);
  return from_vector(values, shape, kFloat32);
}

void raw_sgemm(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, int64_t rsa, int64_t csa,
               int64_t rsb, int64_t csb) {
  float one = 1.0f, zero = 0.0f;
  bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &one, const_cast<float*>(a), rsa, csa,
            const_cast<float*>(b), rsb, csb, &zero, c, N, 1);
}

int blis_arch_type() {
  get_num_threads();  // tapegrad chooses BLIS's kernels before BLIS starts
  return static_cast<int>(bli_arch_query_id());
}

int print_run_line(json::Writer& line) {
  line.field("blas", kernel_info()).field("blis_arch_type", blis_arch_type());
  std::cout << line.str() << std::endl;
  return 0;
}

namespace {
// GFLOP/s of one n x n x n product (2 n^3 flops) taking `seconds`.
double cube_gflops(int64_t n, double seconds) {
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / seconds * 1e-9;
}
}  // namespace

double sgemm_peak_gflops(int64_t n, int repeats) {
  const Tensor a = random_matrix({n, n}, 1), b = random_matrix({n, n}, 2);
  std::vector<float> c(static_cast<size_t>(n * n));  // (n,n)
  const double s = best_seconds(
      [&] { raw_sgemm(c.data(), a.data_ptr<float>(), b.data_ptr<float>(), n, n, n, n, 1, n, 1); }, repeats);
  return cube_gflops(n, s);
}

double bf16_gemm_peak_gflops(int64_t n, int repeats) {
  namespace bf = kernels::bf16_gemm;
  const Tensor a = random_matrix({n, n}, 1).to(kBFloat16), b = random_matrix({n, n}, 2).to(kBFloat16);
  std::vector<float> c(static_cast<size_t>(n * n));  // (n,n)
  const bf::Operand pa{a.raw_data(), kBFloat16, n, 1}, pb{b.raw_data(), kBFloat16, n, 1};
  const double s = best_seconds([&] { bf::gemm(c.data(), n, pa, pb, n, n, n, kernels::bf16_kernel()); }, repeats);
  return cube_gflops(n, s);
}

bool is_token_table(const std::string& name) { return name == "tok_emb.weight" || name == "model.embed_tokens.weight"; }

bool head_is_tied(const NamedTensors& parameters) {
  for (const auto& [name, p] : parameters)
    if (name == "out_head.weight" || name == "lm_head.weight") return false;
  return true;
}

int64_t main_memory_bytes() {
  int64_t largest = 0;  // the largest cache of cpu0 (Linux; elsewhere none is found and the floor holds)
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    std::ifstream size_file(entry.path() / "size");  // "300M", "2048K"
    int64_t size = 0;
    char unit = 0;
    if (!(size_file >> size)) continue;
    size_file >> unit;
    largest = std::max(largest, size << (unit == 'G' ? 30 : unit == 'M' ? 20 : unit == 'K' ? 10 : 0));
  }
  return std::max<int64_t>(int64_t{256} << 20, 4 * largest);
}

double stream_gbps(Stream kind, int64_t n, int repeats) {
  const int arrays = kind == Stream::Sum ? 1 : kind == Stream::Copy ? 2 : 3;  // the arrays a pass streams
  if (n == 0) n = main_memory_bytes() / 4 / arrays;
  std::vector<float> b(static_cast<size_t>(n), 1.0f);                               // read by every kind
  std::vector<float> a(static_cast<size_t>(kind == Stream::Sum ? 0 : n), 0.0f);     // written by copy and triad
  std::vector<float> c(static_cast<size_t>(kind == Stream::Triad ? n : 0), 2.0f);   // triad's second read
  const int64_t grain = std::max<int64_t>(1, n / get_num_threads());
  std::vector<float> sums(static_cast<size_t>(kind == Stream::Sum ? n / grain + 1 : 0));  // the sum loop's, a chunk each
  std::function<void()> pass;
  if (kind == Stream::Copy) {
    pass = [&] {
      parallel_for(0, n, grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) a[static_cast<size_t>(i)] = b[static_cast<size_t>(i)];
      });
    };
  } else if (kind == Stream::Sum) {
    pass = [&] {
      parallel_for(0, n, grain, [&](int64_t i0, int64_t i1) {
        float lanes[16] = {};  // 16 sums side by side, so the compiler reads vectors (a float sum is not reordered)
        int64_t i = i0;
        for (; i + 16 <= i1; i += 16)
          for (int j = 0; j < 16; ++j) lanes[j] += b[static_cast<size_t>(i + j)];
        for (; i < i1; ++i) lanes[0] += b[static_cast<size_t>(i)];
        float sum = 0.0f;
        for (float lane : lanes) sum += lane;
        sums[static_cast<size_t>(i0 / grain)] = sum;  // kept: the loop is not optimised away
      });
    };
  } else {
    pass = [&] {
      parallel_for(0, n, grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          a[static_cast<size_t>(i)] = b[static_cast<size_t>(i)] + 3.0f * c[static_cast<size_t>(i)];
      });
    };
  }
  return arrays * 4.0 * static_cast<double>(n) / best_seconds(pass, repeats) * 1e-9;
}

double page_faults_per_call(const std::function<void()>& fn, int calls) {
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  for (int i = 0; i < calls; ++i) fn();
  getrusage(RUSAGE_SELF, &after);
  return static_cast<double>(after.ru_minflt - before.ru_minflt) / calls;
}

GPTBenchConfig gpt_bench_config(const std::string& name) {
  auto shape = [](int64_t emb_dim, int64_t heads, int64_t layers, int64_t context) {
    return models::GPTConfig{.context_length = context, .emb_dim = emb_dim, .n_heads = heads, .n_layers = layers};
  };
  if (name == "tiny") return {.model = shape(64, 4, 2, 64), .batch = 16};
  if (name == "small") return {.model = shape(128, 4, 4, 128), .batch = 16};
  if (name == "medium") return {.model = shape(384, 6, 6, 256), .batch = 8};
  throw Error("unknown config '" + name + "' (expected tiny, small or medium)");
}

Flag gpt_bench_config_flag(std::string* name) {
  return text_flag("config", name, "the model's shape and batch (the table atop bench/bench_gpt.cpp)",
                             {"tiny", "small", "medium"});
}

std::vector<int> parse_threads_sweep(const std::string& text) {
  std::vector<int> counts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || n < 1 || n > 1024)
      throw UsageError("--threads-sweep: expected thread counts from 1 to 1024 separated by commas (as 1,2,4,8,16), got '" +
                       text + "'");
    counts.push_back(n);
    start = comma + 1;
  }
  return counts;
}

int for_each_thread_count(const std::string& sweep, int64_t* threads, const std::function<int()>& run) {
  if (sweep.empty()) return run();
  for (int n : parse_threads_sweep(sweep)) {
    *threads = n;
    if (const int status = run(); status != 0) return status;
  }
  return 0;
}

Flag threads_sweep_flag(std::string* counts) {
  return text_flag("threads-sweep", counts,
                   "run once per thread count in this list (as 1,2,4,8,16), one line each; replaces --threads");
}

int use_threads(int64_t requested) {
  const int threads =
      requested > 0 ? static_cast<int>(requested) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_num_threads(threads);
  return threads;
}

std::string load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "unknown";
  char buf[64] = {0};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  return ok ? std::string(buf).substr(0, std::string(buf).find(' ')) : "unknown";
}

}  // namespace tg::bench
