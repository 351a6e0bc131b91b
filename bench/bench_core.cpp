// bench/bench_core.cpp — what tapegrad's machinery costs on top of the work itself.
//
//   (a) tg::matmul against a bare bli_sgemm call on the same operands (same strides, so the
//       transposed and batched cases are the same gemms); the difference is our overhead:
//       checks, shape logic, allocating the output, the batch loop.
//   (b) the fixed cost of recording a tiny op on the tape and running its backward.
//
// Each number is the median over repeats of (time of `iters` calls) / iters, with iters chosen
// so one repeat takes at least ~20 ms; warmup calls come first.
//   ./bench_core                 BLIS on one thread per core
//   ./bench_core --threads 1     single-threaded: steadier on a busy machine
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "bench/bench_util.h"
#include "io/flags.h"

using namespace tg;
using namespace tg::bench;

namespace {

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

int run(int64_t threads) {
  use_threads(threads);
  std::printf("load average %s, %u cores\n\n", load_average().c_str(), std::thread::hardware_concurrency());
  matmul_table();
  tape_table();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t threads = 0;
  const tg::Program program{"bench_core", "What tg::matmul and the tape cost on top of raw BLIS.",
                                      {tg::threads_flag(&threads)}};
  return tg::run_program(program, argc, argv, [&] { return run(threads); });
}
