// bench/bench_core.cpp — what tapegrad's machinery costs on top of the work itself.
//
//   (a) tg::matmul against a bare bli_sgemm call on the same operands (same strides, so the
//       transposed and batched cases are the same gemms); the difference is our overhead:
//       checks, shape logic, allocating the output, the batch loop.
//   (b) the fixed cost of recording a tiny op on the tape and running its backward.
//
// Each number is the median over repeats of (time of `iters` calls) / iters, with iters chosen
// so one repeat takes at least ~20 ms; warmup calls come first.
//   ./bench_core                 BLIS on get_num_threads() threads (one per core)
//   ./bench_core --threads 1     single-threaded: steadier on a busy machine
#include <blis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"

using namespace tg;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_for(const std::function<void()>& fn, int64_t iters) {
  const auto start = Clock::now();
  for (int64_t i = 0; i < iters; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Calls per repeat so that one repeat takes at least `target` seconds.
int64_t calibrate(const std::function<void()>& fn, double target = 0.02) {
  int64_t iters = 1;
  while (seconds_for(fn, iters) < target && iters < (int64_t(1) << 24)) iters *= 2;
  return iters;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds per call of each of two functions, timed in alternation (so drift in clock
// speed or load hits both alike).
std::pair<double, double> time_pair(const std::function<void()>& f, const std::function<void()>& g, int repeats = 7) {
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

double time_one(const std::function<void()>& f, int repeats = 7) {
  for (int i = 0; i < 3; ++i) f();
  const int64_t n = calibrate(f);
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) t.push_back(seconds_for(f, n) / static_cast<double>(n));
  return median(t);
}

std::string format_time(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%8.2f us", s * 1e6);
  else std::snprintf(buf, sizeof buf, "%8.3f ms", s * 1e3);
  return buf;
}

// Normal values from std::mt19937 (the bench does not depend on tapegrad's random ops).
Tensor random_matrix(const Shape& shape, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = normal(rng);
  return from_vector(values, shape, kFloat32);
}

// c (M,N) row-major = a @ b through the raw typed API, a and b read through the given strides.
void raw_sgemm(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, int64_t rsa, int64_t csa,
               int64_t rsb, int64_t csb) {
  float one = 1.0f, zero = 0.0f;
  bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &one, const_cast<float*>(a), rsa, csa,
            const_cast<float*>(b), rsb, csb, &zero, c, N, 1);
}

// One row of table (a): `ours` (a tg::matmul call) against `raw` (the same gemms on bli_sgemm),
// which do `flops` floating-point operations.
void print_row(const std::string& name, const std::function<void()>& ours, const std::function<void()>& raw,
               double flops) {
  const auto [t_ours, t_raw] = time_pair(ours, raw);
  std::printf("  %-46s %s %s %+8.1f %%  %7.1f\n", name.c_str(), format_time(t_ours).c_str(),
              format_time(t_raw).c_str(), (t_ours - t_raw) / t_raw * 100.0, flops / t_raw * 1e-9);
}

// a (M,K) @ b (K,N), both read through their strides by the raw call; tg::matmul gets `ours_a`
// (a batched view of the same memory) when given.
void matmul_row(const std::string& name, const Tensor& a, const Tensor& b, const Tensor& ours_a = Tensor()) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  std::vector<float> c(static_cast<size_t>(M * N));  // out (M,N)
  const Tensor lhs = ours_a.defined() ? ours_a : a;
  print_row(
      name, [&] { (void)matmul(lhs, b); },
      [&] {
        raw_sgemm(c.data(), a.data_ptr<float>(), b.data_ptr<float>(), M, N, K, a.stride(0), a.stride(1),
                  b.stride(0), b.stride(1));
      },
      2.0 * static_cast<double>(M * N * K));
}

// Attention scores q @ k^T with q, k (B,NH,T,hs) permuted views of (B,T,NH,hs): the raw side
// loops over the B*NH gemms itself; batch (b, h) starts at b*T*NH*hs + h*hs in both.
void attention_row(int64_t B, int64_t NH, int64_t T, int64_t hs) {
  const Tensor q = random_matrix({B, T, NH, hs}, 10).permute({0, 2, 1, 3});
  const Tensor kt = random_matrix({B, T, NH, hs}, 11).permute({0, 2, 3, 1});  // k^T (B,NH,hs,T)
  std::vector<float> c(static_cast<size_t>(B * NH * T * T));                  // scores (B,NH,T,T)
  const float* pq = q.data_ptr<float>();
  const float* pk = kt.data_ptr<float>();
  auto raw = [&] {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < NH; ++h) {
        const int64_t off = b * T * NH * hs + h * hs;
        raw_sgemm(c.data() + (b * NH + h) * T * T, pq + off, pk + off, T, T, hs, NH * hs, 1, 1, NH * hs);
      }
  };
  const std::string name = "q @ k^T, (" + std::to_string(B) + "," + std::to_string(NH) + "," + std::to_string(T) +
                           "," + std::to_string(hs) + ") views";
  print_row(name, [&] { (void)matmul(q, kt); }, raw, 2.0 * static_cast<double>(B * NH * T * T * hs));
}

void matmul_table() {
  std::printf("(a) tg::matmul vs bli_sgemm, float32, %d threads\n", get_num_threads());
  std::printf("  %-46s %11s %11s %10s  %7s\n", "case", "tg::matmul", "bli_sgemm", "overhead", "GFLOP/s");
  for (int64_t n : {64, 256, 1024}) {
    const std::string d = std::to_string(n);
    matmul_row(d + "x" + d + " @ " + d + "x" + d, random_matrix({n, n}, 6), random_matrix({n, n}, 7));
  }
  // a linear layer: x (B,T,C) @ w (OC,C)^T; w read column-major in place, B and T folded into rows
  const Tensor x = random_matrix({8, 64, 768}, 8), w = random_matrix({768, 768}, 9);
  matmul_row("x (8,64,768) @ w.t(), w (768,768)", x.view({512, 768}), w.t(), x);
  attention_row(4, 8, 128, 64);
}

void tape_table() {
  std::printf("\n(b) one small op on the tape, float32\n");
  std::printf("  %-46s %11s\n", "case", "time");
  Tensor x = random_matrix({16}, 2).requires_grad_(), w = random_matrix({16}, 3).requires_grad_();
  const double fwd = time_one([&] { (void)sum(mul(x, w)); });
  const double fwd_bwd = time_one([&] {
    sum(mul(x, w)).backward();
    x.zero_grad();
    w.zero_grad();
  });
  std::printf("  %-46s %s\n", "(x*w).sum(), 16 elements: forward", format_time(fwd).c_str());
  std::printf("  %-46s %s\n", "(x*w).sum(), 16 elements: forward + backward", format_time(fwd_bwd).c_str());
  {
    NoGradGuard no_grad;
    const double plain = time_one([&] { (void)sum(mul(x, w)); });
    std::printf("  %-46s %s\n", "(x*w).sum(), 16 elements: under NoGradGuard", format_time(plain).c_str());
  }
  try {
    Tensor s = random_matrix({8, 8}, 4).requires_grad_(), v = random_matrix({8, 8}, 5);
    const double t = time_one([&] {
      sum(mul(softmax(s, -1), v)).backward();
      s.zero_grad();
    });
    std::printf("  %-46s %s\n", "(softmax(x, -1) * v).sum(), (8,8): fwd + bwd", format_time(t).c_str());
  } catch (const Error& e) {
    std::printf("  %-46s %s\n", "softmax (8,8)", (std::string("skipped: ") + e.what()).c_str());
  }
}

// The 1-minute load average: on a busy machine, BLIS's threads wait for each other at every
// barrier and multi-threaded times mean little (run with --threads 1 then).
std::string load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "unknown";
  char buf[64] = {0};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  return ok ? std::string(buf).substr(0, std::string(buf).find(' ')) : "unknown";
}

}  // namespace

// ./bench_core [--threads N]
int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--threads") set_num_threads(std::stoi(argv[i + 1]));
  std::printf("load average %s, %u cores\n\n", load_average().c_str(), std::thread::hardware_concurrency());
  matmul_table();
  tape_table();
  return 0;
}
