// bench/bench_kernels.cpp — the GPT training step's hot kernels against the machine's own limits.
//
//   ./build/bench/bench_kernels                    the small config's shapes, all cores (--threads 0)
//   ./build/bench/bench_kernels --threads 1        single-threaded
//   ./build/bench/bench_kernels --medium           the medium config's shapes
//   ./build/bench/bench_kernels --bf16             only the bfloat16 gemm against raw bli_sgemm
//
// Shapes (fixed letters): small B=16 T=128 C=128 NH=4 hs=32 V=65; medium B=8 T=256 C=384 NH=6
// hs=64 V=65. Each kernel runs through tapegrad's public ops, as the model calls them, with
// inputs that require grad (so the forward records its tape entry, as in training):
//   forward    the op, its output dropped
//   backward   out.backward(dout, retain_graph) on an output recorded once, then the inputs'
//              gradients dropped (as zero_grad(set_to_none) does)
// and times are medians of repeats (bench/bench_util.h). The matmuls also run as raw bli_sgemm
// calls on the same operands, timed in alternation with tapegrad's: the gap is tapegrad's
// overhead (bench_core has more of these, at other shapes).
//
// What each must do, counted as the minimum for the algorithm tapegrad runs (float32 = 4 bytes):
//   matmul x (M,K) @ w^T, w (N,K), M = B*T
//       forward   2MNK FLOPs; reads x, w, writes y: 4(MK + NK + MN) bytes
//       backward  dx = dy @ w and dw = dy^T @ x: 4MNK FLOPs; reads dy, w, x, writes dx, dw
//   attention core, q k v (B,NH,T,hs), S = B*NH*T*T scores (computed in full, mask or not),
//             causal, the weights by masked_scaled_softmax as nn/attention.cpp computes them
//       forward   q @ k^T and weights @ v: 4*S*hs FLOPs; reads q, k, v, writes the output,
//                 and the (B,NH,T,T) scores and weights each written once and read once
//       backward  dv, dweights, dq, dk: 8*S*hs FLOPs; reads dout q k v, writes dq dk dv;
//                 weights read twice, dweights written and read, dscores written, read twice
//   layer_norm (B*T, C)   forward reads x, writes y; backward reads dy, x, writes dx (plus the
//                         per-row mean and rstd and the (C) weight, bias and their gradients)
//   gelu (B,T,4C)         forward reads x, writes y; backward reads dy, x, writes dx
//   masked_scaled_softmax (B,NH,T,T), causal: as softmax below (counted in full, though the
//                         causal rule leaves the keys above the diagonal unread)
//   softmax (B,NH,T,T)    forward reads x, writes y; backward reads dy, y, writes dx
//   cross_entropy (B*T, V) against int64 targets: forward reads logits and targets; backward
//                         also writes dlogits (and reads the per-row log-sum-exp, 8 bytes)
//   AdamW step            per parameter reads p, grad, m, v and writes p, m, v: 28 bytes
// FLOPs are counted for the matmuls only; the elementwise kernels are judged on bytes.
//
// --bf16 runs another table instead: the bfloat16 gemm (kernels/bf16_gemm.h, the best kernel this
// CPU has) against raw bli_sgemm on the same float32 operands and strides, at the linear layers'
// shapes for C = 128 and C = 384 (M = B*T = 2048 rows) and the attention's per-head products
// (T = 256, hs = 64). GFLOP/s counts 2MNK for both; "ratio" is the bfloat16 gemm's speed over sgemm's.
//
// The limits are measured here, on the same threads: compute is raw bli_sgemm on 1024x1024
// matrices (GFLOP/s, best of 5); memory is STREAM's triad at the kernel's own working set (3
// arrays holding as many bytes as the kernel moves; small sets stay in cache, as the kernel's
// do when it is timed in a loop). A kernel's roofline time is max(FLOPs / sgemm peak, bytes /
// triad bandwidth); "roofline" is that time over the measured one (100% = at the limit).
// "faults" counts the minor page faults per call: buffers the allocator took fresh from the
// kernel (glibc maps large blocks anew and unmaps them on free unless its thresholds have
// grown), each page zeroed on first touch; they are part of the kernel's time in training too.
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/bf16_gemm.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "bench/bench_util.h"
#include "io/flags.h"
#include "models/gpt.h"
#include "optim/adam.h"

using namespace tg;
using namespace tg::bench;

namespace {

struct Shapes {
  int64_t B, T, C, NH, hs, V;
};
constexpr Shapes kSmall{16, 128, 128, 4, 32, 65};
constexpr Shapes kMedium{8, 256, 384, 6, 64, 65};

// The triad bandwidth at a working set of about `bytes`, measured once per size (rounded to a
// power of two).
double triad_gbps_at(double bytes) {
  static std::map<int64_t, double> measured;
  int64_t n = 4096;  // floats per array; the triad moves 12 bytes per element
  while (12.0 * static_cast<double>(n) < bytes) n *= 2;
  auto it = measured.find(n);
  if (it == measured.end()) it = measured.emplace(n, stream_gbps(Stream::Triad, n)).first;
  return it->second;
}

double g_sgemm_peak = 0;  // GFLOP/s, measured in main

void print_header() {
  std::printf("  %-34s %-13s %11s %8s %8s %8s %7s %9s %9s %8s\n", "kernel", "pass", "time", "GFLOP", "MB", "GFLOP/s",
              "GB/s", "limit", "roofline", "faults");
}

// A measured call: median seconds and minor page faults per call.
struct Measured {
  double seconds, faults;
};
Measured measure(const std::function<void()>& fn) { return {time_one(fn), page_faults_per_call(fn)}; }

// One row: the kernel took m.seconds to do `flops` and move `bytes`.
void print_row(const std::string& kernel, const std::string& pass, const Measured& m, double flops, double bytes) {
  const double seconds = m.seconds;
  const double bw = triad_gbps_at(bytes);
  const double t_flops = flops / (g_sgemm_peak * 1e9), t_bytes = bytes / (bw * 1e9);
  const std::string limit = t_flops >= t_bytes ? "sgemm" : (std::to_string(static_cast<int>(bw)) + " GB/s");
  char gflop[16] = "-", gflops[16] = "-";  // FLOPs are counted for the matmuls only
  if (flops > 0) {
    std::snprintf(gflop, sizeof gflop, "%.4f", flops * 1e-9);
    std::snprintf(gflops, sizeof gflops, "%.1f", flops / seconds * 1e-9);
  }
  std::printf("  %-34s %-13s %s %8s %8.2f %8s %7.1f %9s %8.1f%% %8.0f\n", kernel.c_str(), pass.c_str(),
              format_time(seconds).c_str(), gflop, bytes * 1e-6, gflops, bytes / seconds * 1e-9, limit.c_str(),
              std::max(t_flops, t_bytes) / seconds * 100.0, m.faults);
}

// Times forward(inputs) and backward of its output (with a random dout when it is not a scalar).
struct Timed {
  Measured forward, backward;
};
Timed time_forward_backward(const std::vector<Tensor>& inputs, const std::function<Tensor()>& forward) {
  const Measured fwd = measure([&] { (void)forward(); });
  const Tensor out = forward();
  const Tensor dout = out.dim() == 0 ? Tensor() : random_matrix(out.sizes(), 99);
  const Measured bwd = measure([&] {
    out.backward(dout, /*retain_graph=*/true);
    for (const Tensor& t : inputs) t.zero_grad();
  });
  return {fwd, bwd};
}

// x (B,T,K) @ w^T with w (N,K): a linear layer without bias, and the same gemms on raw
// bli_sgemm, each pass timed in alternation with its raw twin.
void matmul_rows(const std::string& name, int64_t M, int64_t K, int64_t N, const Shapes& s) {
  Tensor x = random_matrix({s.B, s.T, K}, 1).requires_grad_(), w = random_matrix({N, K}, 2).requires_grad_();
  const Tensor y = linear(x, w), dy = random_matrix({s.B, s.T, N}, 3);
  std::vector<float> out(static_cast<size_t>(M * N)), dx(static_cast<size_t>(M * K)), dw(static_cast<size_t>(N * K));
  const float *px = x.data_ptr<float>(), *pw = w.data_ptr<float>(), *pdy = dy.data_ptr<float>();
  const std::function<void()> ours_fwd = [&] { (void)linear(x, w); };
  const std::function<void()> raw_fwd = [&] { raw_sgemm(out.data(), px, pw, M, N, K, K, 1, 1, K); };  // x @ w^T
  const std::function<void()> ours_bwd = [&] {
    y.backward(dy, /*retain_graph=*/true);
    x.zero_grad();
    w.zero_grad();
  };
  const std::function<void()> raw_bwd = [&] {
    raw_sgemm(dx.data(), pdy, pw, M, K, N, N, 1, K, 1);  // dx (M,K) = dy (M,N) @ w (N,K)
    raw_sgemm(dw.data(), pdy, px, N, K, M, 1, N, K, 1);  // dw (N,K) = dy^T (N,M) @ x (M,K)
  };
  const auto [t_ours_fwd, t_raw_fwd] = time_pair(ours_fwd, raw_fwd);
  const auto [t_ours_bwd, t_raw_bwd] = time_pair(ours_bwd, raw_bwd);
  const double mnk = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const double fwd_bytes = 4.0 * static_cast<double>(M * K + N * K + M * N);
  const double bwd_bytes = 4.0 * static_cast<double>(M * N + N * K + M * K + M * K + N * K);
  print_row(name, "forward", {t_ours_fwd, page_faults_per_call(ours_fwd)}, 2 * mnk, fwd_bytes);
  print_row("", "  raw sgemm", {t_raw_fwd, page_faults_per_call(raw_fwd)}, 2 * mnk, fwd_bytes);
  print_row("", "backward", {t_ours_bwd, page_faults_per_call(ours_bwd)}, 4 * mnk, bwd_bytes);
  print_row("", "  raw sgemm", {t_raw_bwd, page_faults_per_call(raw_bwd)}, 4 * mnk, bwd_bytes);
}

// The attention core as nn/attention.cpp runs it: q, k, v are (B,NH,T,hs) views of (B,T,C)
// projections; scores -> masked_scaled_softmax (causal: masked_fill above the diagonal, / sqrt(hs)
// and softmax, one op) -> @ v, heads joined back to (B,T,C).
void attention_rows(const Shapes& s) {
  Tensor q_proj = random_matrix({s.B, s.T, s.C}, 4).requires_grad_();
  Tensor k_proj = random_matrix({s.B, s.T, s.C}, 5).requires_grad_();
  Tensor v_proj = random_matrix({s.B, s.T, s.C}, 6).requires_grad_();
  auto split_heads = [&](const Tensor& t) { return t.view({s.B, s.T, s.NH, s.hs}).transpose(1, 2); };
  const Timed t = time_forward_backward({q_proj, k_proj, v_proj}, [&] {
    const Tensor q = split_heads(q_proj), k = split_heads(k_proj), v = split_heads(v_proj);
    const Tensor scores = q.matmul(k.transpose(2, 3));  // (B,NH,T,T)
    const Tensor weights = masked_scaled_softmax(scores, Tensor(), s.hs, {.causal = true});
    return weights.matmul(v).transpose(1, 2).contiguous().view({s.B, s.T, s.C});
  });
  const double S = static_cast<double>(s.B * s.NH * s.T * s.T), btc = static_cast<double>(s.B * s.T * s.C);
  const double hs = static_cast<double>(s.hs);
  print_row("attention core", "forward", t.forward, 4 * S * hs, 4.0 * (4 * btc + 4 * S));
  print_row("", "backward", t.backward, 8 * S * hs, 4.0 * (7 * btc + 7 * S));
}

// The attention weights alone, (B,NH,T,T) scores in: masked_scaled_softmax, causal.
void attention_weights_rows(const Shapes& s) {
  Tensor scores = random_matrix({s.B, s.NH, s.T, s.T}, 13).requires_grad_();
  const Timed t = time_forward_backward({scores}, [&] { return masked_scaled_softmax(scores, Tensor(), s.hs, {.causal = true}); });
  const double n = static_cast<double>(s.B * s.NH * s.T * s.T);
  print_row("masked_scaled_softmax (B,NH,T,T)", "forward", t.forward, 0, 4.0 * 2 * n);
  print_row("", "backward", t.backward, 0, 4.0 * 3 * n);
}

void elementwise_rows(const Shapes& s) {
  const int64_t BT = s.B * s.T;
  {
    Tensor x = random_matrix({s.B, s.T, s.C}, 7).requires_grad_();
    Tensor w = random_matrix({s.C}, 8).requires_grad_(), b = random_matrix({s.C}, 9).requires_grad_();
    const Timed t = time_forward_backward({x, w, b}, [&] { return layer_norm(x, {s.C}, w, b); });
    const double n = static_cast<double>(BT * s.C), rows = static_cast<double>(BT), c = static_cast<double>(s.C);
    print_row("layer_norm (B*T,C)", "forward", t.forward, 0, 4.0 * (2 * n + 2 * rows + 2 * c));
    print_row("", "backward", t.backward, 0, 4.0 * (3 * n + 2 * rows + 3 * c));
  }
  {
    Tensor x = random_matrix({s.B, s.T, 4 * s.C}, 10).requires_grad_();
    const Timed t = time_forward_backward({x}, [&] { return gelu(x, "tanh"); });
    const double n = static_cast<double>(BT * 4 * s.C);
    print_row("gelu tanh (B,T,4C)", "forward", t.forward, 0, 4.0 * 2 * n);
    print_row("", "backward", t.backward, 0, 4.0 * 3 * n);
  }
  {
    Tensor x = random_matrix({s.B, s.NH, s.T, s.T}, 11).requires_grad_();
    const Timed t = time_forward_backward({x}, [&] { return softmax(x, -1); });
    const double n = static_cast<double>(s.B * s.NH * s.T * s.T);
    print_row("softmax (B,NH,T,T)", "forward", t.forward, 0, 4.0 * 2 * n);
    print_row("", "backward", t.backward, 0, 4.0 * 3 * n);
  }
  {
    Tensor logits = random_matrix({BT, s.V}, 12).requires_grad_();
    std::vector<int64_t> ids(static_cast<size_t>(BT));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919) % static_cast<size_t>(s.V));
    const Tensor targets = from_vector(ids, {BT});
    const Timed t = time_forward_backward({logits}, [&] { return cross_entropy(logits, targets); });
    const double n = static_cast<double>(BT * s.V), rows = static_cast<double>(BT);
    print_row("cross_entropy (B*T,V)", "forward", t.forward, 0, 4.0 * n + 8.0 * rows);
    print_row("", "backward", t.backward, 0, 8.0 * n + 16.0 * rows);
  }
}

// An AdamW step over the parameters of the config's GPT, with gradients from one backward.
void adamw_row(const Shapes& s) {
  const models::GPTConfig config{.vocab_size = s.V, .context_length = s.T, .emb_dim = s.C, .n_heads = s.NH,
                             .n_layers = s.C == kSmall.C ? 4 : 6, .drop_rate = 0.0, .qkv_bias = false};
  models::GPTModel model(config);
  optim::AdamOptions options;
  options.lr = 2e-3;
  optim::AdamW opt(optim::weight_decay_groups(model.named_parameters(), 0.1), options);
  std::vector<int64_t> ids(static_cast<size_t>(s.B * s.T));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 31) % static_cast<size_t>(s.V));
  const Tensor x = from_vector(ids, {s.B, s.T});
  cross_entropy(model.forward(x).flatten(0, 1), x.flatten()).backward();
  const Measured step = measure([&] { opt.step(); });
  const double params = static_cast<double>(model.num_parameters());
  const std::string name = "AdamW step (" + std::to_string(model.num_parameters()) + " params)";
  print_row(name, "step", step, 0, 28.0 * params);
}

// One product c (M,N) = a (M,K) @ b (K,N), a and b read through the given (row, column) strides:
// the bfloat16 gemm and raw bli_sgemm timed in alternation on the same float32 operands.
struct GemmShape {
  std::string name;
  int64_t M, N, K, rsa, csa, rsb, csb;
};

void bf16_gemm_row(const GemmShape& g) {
  namespace bf = tg::kernels::bf16_gemm;
  const Tensor a = random_matrix({g.M * g.K}, 21), b = random_matrix({g.K * g.N}, 22);
  std::vector<float> c(static_cast<size_t>(g.M * g.N));
  const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
  const bf::Kernel kernel = bf::best_kernel();
  const std::function<void()> ours = [&] {
    bf::gemm(c.data(), g.N, {pa, kFloat32, g.rsa, g.csa}, {pb, kFloat32, g.rsb, g.csb}, g.M, g.N, g.K, kernel);
  };
  const std::function<void()> raw = [&] { raw_sgemm(c.data(), pa, pb, g.M, g.N, g.K, g.rsa, g.csa, g.rsb, g.csb); };
  const auto [t_ours, t_raw] = time_pair(ours, raw, 5);
  const double flops = 2.0 * static_cast<double>(g.M) * static_cast<double>(g.N) * static_cast<double>(g.K);
  std::printf("  %-26s %5lld %5lld %5lld %s %8.1f %s %8.1f %6.2f\n", g.name.c_str(), static_cast<long long>(g.M),
              static_cast<long long>(g.N), static_cast<long long>(g.K), format_time(t_ours).c_str(),
              flops / t_ours * 1e-9, format_time(t_raw).c_str(), flops / t_raw * 1e-9, t_raw / t_ours);
}

// A linear layer x (M,K) @ w^T, w (N,K) row-major: forward, then backward's dx = dy @ w and
// dw = dy^T @ x, with the strides the autograd ops pass.
void bf16_linear_rows(const std::string& name, int64_t M, int64_t K, int64_t N) {
  bf16_gemm_row({name + " fwd", M, N, K, K, 1, 1, K});     // x @ w^T: w read transposed
  bf16_gemm_row({name + " dx", M, K, N, N, 1, K, 1});      // dy (M,N) @ w (N,K)
  bf16_gemm_row({name + " dw", N, K, M, 1, N, K, 1});      // dy^T (N,M) @ x (M,K)
}

int run_bf16(int64_t requested_threads) {
  const int threads = use_threads(requested_threads);
  std::printf("bench_kernels --bf16: the %s bfloat16 gemm against raw bli_sgemm, %d threads, load average %s\n",
              tg::kernels::bf16_gemm::kernel_name(tg::kernels::bf16_gemm::best_kernel()), threads,
              load_average().c_str());
  std::printf("%s\n\n", tg::kernel_info().c_str());
  std::printf("  %-26s %5s %5s %5s %11s %8s %11s %8s %6s\n", "product", "M", "N", "K", "bf16", "GFLOP/s", "sgemm",
              "GFLOP/s", "ratio");
  const int64_t M = 2048;
  for (const int64_t C : {128, 384}) {
    const std::string c = "C=" + std::to_string(C) + " ";
    bf16_linear_rows(c + "qkv", M, C, 3 * C);
    bf16_linear_rows(c + "proj", M, C, C);
    bf16_linear_rows(c + "up", M, C, 4 * C);
    bf16_linear_rows(c + "down", M, 4 * C, C);
    bf16_linear_rows(c + "head", M, C, 65);
  }
  const int64_t T = 256, hs = 64;  // one (batch, head) of the medium config's attention
  bf16_gemm_row({"att q @ k^T", T, T, hs, hs, 1, 1, hs});
  bf16_gemm_row({"att w @ v", T, hs, T, T, 1, hs, 1});
  bf16_gemm_row({"att dw @ v^T", T, T, hs, hs, 1, 1, hs});
  bf16_gemm_row({"att w^T @ dy", T, hs, T, 1, T, hs, 1});
  return 0;
}

int run(int64_t requested_threads, bool medium) {
  const int threads = use_threads(requested_threads);
  const Shapes s = medium ? kMedium : kSmall;
  g_sgemm_peak = sgemm_peak_gflops(1024);
  std::printf("bench_kernels: %s shapes B=%lld T=%lld C=%lld NH=%lld hs=%lld V=%lld, %d threads, load average %s\n",
              medium ? "medium" : "small", static_cast<long long>(s.B), static_cast<long long>(s.T),
              static_cast<long long>(s.C), static_cast<long long>(s.NH), static_cast<long long>(s.hs),
              static_cast<long long>(s.V), threads, load_average().c_str());
  std::printf("%s\n", tg::kernel_info().c_str());
  std::printf("limits: raw sgemm 1024^3 %.1f GFLOP/s; main memory (3 x 64 MB arrays) triad %.1f GB/s, copy %.1f GB/s\n\n",
              g_sgemm_peak, stream_gbps(Stream::Triad), stream_gbps(Stream::Copy));
  print_header();
  const int64_t M = s.B * s.T;
  matmul_rows("linear C->C (q, k, v, out_proj)", M, s.C, s.C, s);
  matmul_rows("linear C->4C (feed-forward up)", M, s.C, 4 * s.C, s);
  matmul_rows("linear 4C->C (feed-forward down)", M, 4 * s.C, s.C, s);
  matmul_rows("linear C->V (out_head)", M, s.C, s.V, s);
  attention_rows(s);
  attention_weights_rows(s);
  elementwise_rows(s);
  adamw_row(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t threads = 0;
  bool medium = false, bf16 = false;
  const tg::Program program{
      "bench_kernels", "The GPT training step's hot kernels against the machine's own limits (a roofline).",
      {tg::threads_flag(&threads),
       tg::switch_flag("medium", &medium, "the medium config's shapes (default: the small config's)"),
       tg::switch_flag("bf16", &bf16, "only the bfloat16 gemm against raw bli_sgemm (its own table)")}};
  return tg::run_program(program, argc, argv,
                                   [&] { return bf16 ? run_bf16(threads) : run(threads, medium); });
}
