// bench/bench_gpt.cpp — training speed of tapegrad's GPT, as one JSON line.
//
//   ./build/bench/bench_gpt --config small --threads 2 --steps 50 [--warmup 3] [--data input.txt]
//                           [--precision fp32|bf16] [--checkpoint-activations none|every|ffn]
//                           [--lora-rank R [--lora-alpha A] [--lora-targets attn,mlp]]
//   ./build/bench/bench_gpt --init-from DIR --data input.txt --batch 1 --context 1024 [--loss-chunk 128] ...
//                           (a Hugging Face GPT-2 folder's model and tokenizer instead of --config's; a
//                           folder of GPT-2's shape with random weights: examples/pytorch/make_random_gpt2.py;
//                           or a Llama / Qwen folder's, as train_gpt --init-from starts them: a real
//                           model's shape with random weights: examples/pytorch/make_random_llama.py)
//   ./build/bench/bench_gpt --config small --threads-sweep 1,2,4,8,16
//                           (one run, one line, per thread count: the same flags otherwise)
//
// It trains with train/trainer.h's Trainer (the loop of train_gpt, step for step: AdamW, the
// cosine schedule of a default 1500-step run, gradient clipping at 1, seed 1337), dropout 0,
// on the built-in corpus unless --data. The first W (--warmup) steps are not timed; each of the
// next S (--steps) steps is timed on its own (batch, forward, backward, clipping, optimizer step,
// reading the loss). bench/bench_gpt_torch.py does the same in PyTorch and prints the same line.
//
//   config   d     heads  layers  context  batch
//   tiny     64    4      2       64       16
//   small    128   4      4       128      16
//   medium   384   6      6       256      8
//
// The line's fields:
//   kernels             which code ran: "fast" (the default) or "reference" (TG_FAST_KERNELS=0:
//                       every op's plain _reference loops, autograd/fast_kernels.h)
//   precision           "fp32", or "bf16": the step's forward under AutocastGuard(kBFloat16)
//                       (autograd/autocast.h), as train_gpt --precision bf16
//   bf16_kernel         the bf16 gemm kernel that ran (kernels/bf16_gemm.h): "avx512_bf16", or
//                       "fma" on a CPU without AVX512_BF16 (or with TG_BF16_KERNEL=fma); "none" for fp32
//   tokens_per_s        batch * context * S / (sum of the S step times)
//   ms_per_step_median  the median step time
//   ms_per_step_min     the fastest step: on a shared machine other work only adds time, so the
//                       ratio of two options' minima shows their own costs best
//   cpu_ms_per_step_median  the median step's CPU time, all threads together
//                       (CLOCK_PROCESS_CPUTIME_ID): on a virtual machine whose host runs other
//                       guests, time taken from it (steal) counts in the wall time, not here
//   mfu                 model FLOPs utilisation: flops_per_token * tokens_per_s / peak, where
//                       flops_per_token = 6 * N + 6 * L * T * d
//                       (Kaplan et al. 2020, "Scaling laws", table 1: forward 2N + 2LTd, the
//                       backward twice the forward) with N the parameters that are not
//                       embeddings (the blocks, the final norm and the head: every parameter but
//                       the token and position tables, and the head's V x C once more when it is
//                       tied to the token table, as it is in GPT-2 and these Llamas), L layers, T the
//                       context, d the width. 2LTd is q @ k^T and weights @ v at the causal
//                       average (a query sees (T+1)/2 keys); tapegrad and PyTorch both compute
//                       the full T x T, twice that, so mfu undercounts the attention's work.
//                       peak = GFLOP/s of raw bli_sgemm on 1024x1024 matrices at this thread
//                       count (best of 5 repeats, measured after training), or --peak-gflops.
//                       With --precision bf16: GFLOP/s of tapegrad's bf16 gemm on 1024x1024
//                       bfloat16 matrices (bench_util.h: bf16_gemm_peak_gflops) instead.
//   peak_rss_mb         getrusage's ru_maxrss, read before the sgemm run
//   peak_tensor_mb      the most tensor memory alive at once during a step (memory.peak_tensors_mb)
//   memory              the split of a step's peak (train/memory_report.h), in MiB:
//                       parameters_mb, gradients_mb, optimizer_mb, activations_mb, peak_tensors_mb
//                       (their sum), peak_rss_mb
//   checkpoint_activations  none, every or ffn (train_gpt's flag): what the blocks recompute
//   lora                "none", or "r=R alpha=A attn,mlp": LoRA adapters (train_gpt's --lora-* flags,
//                       models/lora/gpt_lora.h) on the config's model, which is then frozen; the model is the
//                       config's fresh one, not a GPT-2 (the time and memory are the same)
//   params_trained      the parameters the optimizer updates (all of them without LoRA); mfu's
//                       flops_per_token counts the whole backward even then (a frozen weight's
//                       gradient, a third of its work, is not computed: mfu overstates the work)
//   cached_mb           freed tensor buffers the allocator keeps for reuse, after the last step
//   first_loss          the loss of step 1 (the first warmup step when W > 0): the same seed
//                       and config give the same value in PyTorch
//   final_loss          the loss of the last step
//   blas                the kernels that ran: BLIS's version, threading build and kernels (and
//                       who chose them), tapegrad's own (tg::kernel_info, autograd/fast_kernels.h)
//   blis_arch_type      the number of BLIS's kernels, as BLIS_ARCH_TYPE takes it (for compare_gpt.py)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "io/json.h"
#include "autograd/kernels/gemm.h"
#include "autograd/runtime/memory.h"
#include "autograd/runtime/parallel.h"
#include "bench/bench_util.h"
#include "io/flags.h"
#include "models/hf/hf_llama.h"
#include "train/run_folder.h"
#include "train/corpus.h"
#include "train/run_log.h"
#include "train/trainer.h"

using namespace tg;

namespace {

// --help's first paragraph.
const char* const kAbout =
    "Trains the GPT for --warmup + --steps steps and prints one JSON line: tokens/s, "
    "ms per step, MFU, peak RSS, losses, and which kernels ran (fast, or reference with TG_FAST_KERNELS=0).";

struct BenchOptions {
  std::string config = "tiny";
  int64_t threads = 0;  // 0 = all cores
  std::string threads_sweep;  // "1,2,4": one run (one line) per count instead
  int64_t steps = 20;
  int64_t warmup = 3;
  std::string data;
  double peak_gflops = 0;  // 0 = measure
  int64_t seed = 1337;
  std::string precision = "fp32";
  std::string checkpoint_activations = "none";
  int64_t lora_rank = 0;  // 0 = no LoRA
  double lora_alpha = 0;  // 0 = the rank
  std::string lora_targets = "attn";
  std::string init_from;  // a Hugging Face GPT-2 folder: its model instead of --config's
  int64_t batch = 0;      // 0 = the config's (--init-from: 4)
  int64_t context = 0;    // 0 = the config's (--init-from: 256, at most the model's)
  double dropout = 0;
  int64_t loss_chunk = 0;
  std::string dtype = "auto";  // a Llama / Qwen LoRA base's weights: the checkpoint's dtype, or float32
};

std::vector<Flag> bench_flags(BenchOptions& o) {
  return {
      tg::bench::gpt_bench_config_flag(&o.config),
      threads_flag(&o.threads),
      tg::bench::threads_sweep_flag(&o.threads_sweep),
      int_flag("steps", &o.steps, "timed training steps", 1, 1e9),
      int_flag("warmup", &o.warmup, "untimed training steps before them", 0, 1e9),
      text_flag("data", &o.data, "a text file to train on (default: the built-in corpus)"),
      number_flag("peak-gflops", &o.peak_gflops, "the machine's peak for mfu (0 = measure raw sgemm)", 0, 1e9),
      seed_flag(&o.seed, "seed of the model's initialisation and the batches"),
      text_flag("precision", &o.precision, "matrix products in float32, or bfloat16 inputs with float32 sums",
                {"fp32", "bf16"}),
      text_flag("checkpoint-activations", &o.checkpoint_activations,
                "what the blocks recompute in backward instead of keeping (train_gpt's flag)", {"none", "every", "ffn"}),
      int_flag("lora-rank", &o.lora_rank, "LoRA adapters of this rank train, the model frozen (0 = none)", 0, 1 << 20),
      number_flag("lora-alpha", &o.lora_alpha, "the adapters' scale is alpha / rank (0 = the rank)", 0, 1e9),
      text_flag("lora-targets", &o.lora_targets, "attn, mlp or attn,mlp (train_gpt's flag)"),
      text_flag("init-from", &o.init_from,
                "a Hugging Face GPT-2, Llama or Qwen folder (config.json, the weights, its tokenizer): train its model "
                "on its tokens instead of --config's (as train_gpt --init-from)"),
      int_flag("batch", &o.batch, "sequences per step (0 = the config's; with --init-from, 4)", 0, 1 << 20),
      int_flag("context", &o.context, "tokens per sequence (0 = the config's; with --init-from, 256)", 0, 1 << 20),
      number_flag("dropout", &o.dropout, "dropout rate (default 0)", 0, 0.999999),
      int_flag("loss-chunk", &o.loss_chunk, "the head and the loss this many rows at a time (train_gpt's flag; 0 = off)",
               0, 1 << 30),
      text_flag("dtype", &o.dtype,
                "a Llama / Qwen LoRA base's frozen weights: auto keeps a BF16 or F16 file's matrices 16-bit, float32 "
                "widens them (train_gpt's flag)", {"auto", "float32"}),
  };
}

// The config's shape on train_gpt's defaults (dropout 0 there too).
train::TrainOptions train_options(const BenchOptions& b) {
  const tg::bench::GPTBenchConfig c = tg::bench::gpt_bench_config(b.config);
  train::TrainOptions o;
  o.model = c.model;  // dropout 0
  o.batch = c.batch;
  o.seed = b.seed;
  o.threads = b.threads;
  o.data = b.data;
  o.precision = b.precision;
  o.checkpoint_activations = b.checkpoint_activations;
  o.lora_rank = b.lora_rank;
  o.lora_alpha = b.lora_alpha > 0 ? b.lora_alpha : static_cast<double>(b.lora_rank);
  o.lora_targets = b.lora_targets;
  o.loss_chunk = b.loss_chunk;
  o.dtype = b.dtype;
  o.model.drop_rate = b.dropout;
  if (!b.init_from.empty()) {  // train_gpt --init-from's defaults; the shape comes from the folder
    o.init_from = o.tokenizer = b.init_from;
    o.batch = 4;
    o.model.context_length = 256;
  }
  if (b.batch > 0) o.batch = b.batch;
  if (b.context > 0) o.model.context_length = b.context;
  return o;
}

// The CPU time of the whole process so far, every thread's, in seconds.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Parameters that are not embeddings (all but the token and position tables; a head tied to the
// token table counted as the head), for the FLOPs count.
int64_t non_embedding_parameters(const tg::models::CausalLM& model) {
  const NamedTensors parameters = model.named_parameters();
  int64_t n = 0, token_table = 0;
  for (const auto& [name, p] : parameters) {
    if (tg::bench::is_token_table(name)) token_table = p.numel();
    else if (name != "pos_emb.weight") n += p.numel();
  }
  return tg::bench::head_is_tied(parameters) ? n + token_table : n;
}

int run(const BenchOptions& b) {
  const int threads = tg::bench::use_threads(b.threads);
  const std::unique_ptr<train::Trainer> made =
      b.init_from.empty() ? std::make_unique<train::Trainer>(train_options(b), train::read_data(b.data))
      : models::is_hf_llama_folder(b.init_from)
          ? train::start_from_llama_folder(train_options(b), train::read_data(b.data), nullptr)
          : train::start_from_gpt2_folder(train_options(b), train::read_data(b.data), nullptr);
  train::Trainer& trainer = *made;
  const train::TrainOptions& o = trainer.options();  // with --init-from, the folder's shape
  if (o.lora_rank > 0 && b.init_from.empty()) trainer.apply_lora("");  // the config's own model as the base
  int64_t n_trained = 0;
  for (const auto& [name, p] : tg::nn::trainable_parameters(trainer.model())) n_trained += p.numel();
  const std::string lora = o.lora_rank > 0 ? "r=" + std::to_string(o.lora_rank) + " alpha=" +
                                                 tg::nn::python_float(o.lora_alpha) + " " + o.lora_targets
                                           : "none";

  using Clock = std::chrono::steady_clock;
  double first_loss = 0, loss = 0;
  std::vector<double> seconds, cpu_seconds;  // one per timed step
  for (int64_t s = 0; s < b.warmup + b.steps; ++s) {
    const auto start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    loss = trainer.train_step().loss;
    const double dt = std::chrono::duration<double>(Clock::now() - start).count();
    const double cpu_dt = process_cpu_seconds() - cpu_start;
    if (s == 0) first_loss = loss;
    if (s >= b.warmup) {
      seconds.push_back(dt);
      cpu_seconds.push_back(cpu_dt);
    }
  }
  const train::MemoryReport split = trainer.memory_report();  // peak RSS before the sgemm run's matrices
  const tg::MemoryStats memory = tg::memory_stats();

  double total = 0;
  for (double dt : seconds) total += dt;
  const double tokens_per_s = static_cast<double>(o.batch * o.model.context_length * b.steps) / total;
  const int64_t n_params = trainer.model().num_parameters();
  const int64_t n_non_embedding = non_embedding_parameters(trainer.model());
  const double flops_per_token = 6.0 * static_cast<double>(n_non_embedding) +
                                 6.0 * static_cast<double>(o.model.n_layers * o.model.context_length * o.model.emb_dim);
  const bool measure_peak = b.peak_gflops <= 0;
  const bool bf16 = b.precision == "bf16";
  const double peak = !measure_peak ? b.peak_gflops
                      : bf16        ? tg::bench::bf16_gemm_peak_gflops(1024)
                                    : tg::bench::sgemm_peak_gflops(1024);
  const std::string peak_source = !measure_peak ? "--peak-gflops"
                                  : bf16        ? "tapegrad's bf16 gemm 1024x1024x1024 on bfloat16 inputs, best of 5"
                                                : "bli_sgemm 1024x1024x1024, best of 5";

  using tg::json::round_to;  // timings and rates to the digits that are not noise; losses in full
  tg::json::Writer line;
  line.field("bench", "tapegrad").field("kernels", train::kernels_mode()).field("precision", b.precision)
      .field("bf16_kernel", bf16 ? tg::kernels::bf16_gemm::kernel_name(tg::kernels::bf16_kernel()) : "none")
      .field("config", b.init_from.empty() ? b.config : "init-from " + b.init_from).field("threads", threads)
      .field("steps", b.steps).field("warmup", b.warmup).field("batch", o.batch)
      .field("context", o.model.context_length).field("params", n_params)
      .field("params_non_embedding", n_non_embedding)
      .field("tokens_per_s", round_to(tokens_per_s, 1))
      .field("ms_per_step_median", round_to(tg::bench::median(seconds) * 1e3, 3))
      .field("ms_per_step_min", round_to(*std::min_element(seconds.begin(), seconds.end()) * 1e3, 3))
      .field("cpu_ms_per_step_median", round_to(tg::bench::median(cpu_seconds) * 1e3, 3))
      .field("flops_per_token", static_cast<int64_t>(flops_per_token))  // a whole count
      .field("peak_gflops", round_to(peak, 1)).field("peak_source", peak_source)
      .field("mfu", round_to(flops_per_token * tokens_per_s / (peak * 1e9), 4))
      .field("peak_rss_mb", round_to(split.peak_rss_mb, 1)).field("dtype", b.dtype)
      .field("peak_tensor_mb", round_to(static_cast<double>(split.peak_tensors()) / (1 << 20), 1))
      .embed("memory", split.json())
      .field("checkpoint_activations", b.checkpoint_activations)
      .field("lora", lora).field("params_trained", n_trained)
      .field("cached_mb", round_to(static_cast<double>(memory.cached_bytes) / (1 << 20), 1)).field("first_loss", first_loss)
      .field("final_loss", loss);
  return tg::bench::print_run_line(line);
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions b;
  return run_program({"bench_gpt", kAbout, bench_flags(b)}, argc, argv, [&] {
    return tg::bench::for_each_thread_count(b.threads_sweep, &b.threads, [&] { return run(b); });
  });
}
