// bench/bench_generate.cpp — text generation speed of tapegrad's GPT, as one JSON line.
//
//   ./build/bench/bench_generate --config medium --threads 1 --new-tokens 500 --mode cache
//   ./build/bench/bench_generate --init-from DIR --threads 1 --prompt-tokens 100 --new-tokens 200
//   ./build/bench/bench_generate --init-from DIR --threads-sweep 1,2,4,8,16 --new-tokens 100
//                                (one run, one line, per thread count: each line's copy_gbps and
//                                fraction_of_limit are measured on that count's threads)
//
// With --init-from the model is a Hugging Face GPT-2 folder's (models/hf/hf_gpt2.h), and the
// prompt is the first P tokens of the built-in corpus in its tokenizer's tokens; or a Llama /
// Qwen folder's (models/hf/hf_llama.h), and the prompt is the corpus's first P bytes as ids (a
// folder of random weights has no tokenizer to need). A BF16 folder's matrices stay bfloat16
// (--dtype auto, models/hf/hf_folder.h), or are widened to float32 as before (--dtype float32).
// --quantize int8 then makes every matrix int8 with a scale per 32 (nn/quantize.h), any model.
//
// The model: the config's shape (bench_gpt's table), the built-in corpus's characters as the
// vocabulary (as bench_gpt's), initialised from --seed and not trained, in eval mode. The
// prompt: the first P (--prompt-tokens) characters of the corpus, batch 1. Decoding is greedy
// (argmax), so bench_generate_torch.py, the same model in PyTorch from the same seed, writes the
// same tokens: the ids in the line are a check that both compute the same thing.
//
// What is timed: models::generate writing N (--new-tokens) tokens, each step on its own (the
// forward of the window or of the newest token, the argmax, storing the token). An untimed
// generate of --warmup tokens comes first (BLIS's buffers, the allocator).
//
// The window. N + P is more than the context (500 new tokens, context 256), so the window must
// move (models/generation/generate.h):
//   --mode recompute   every step runs the whole window: the last context_length tokens past
//                      the context, as PyTorch's recompute loop (idx[:, -context_length:])
//   --mode cache       the KV cache: a step costs one position. Once the window is full it
//                      restarts from the last --keep tokens (default context_length / 2): one
//                      forward of those refills the cache. So a step sees keep + 1 ..
//                      context_length tokens, not always the last context_length: the tokens
//                      equal recompute's up to the first restart (the first context_length - P
//                      + 1 new ones) and differ after. bench_generate_torch.py --keep K writes
//                      the same as --mode cache --keep K all the way. --keep context_length
//                      slides the cached window too (refilled at every step past the context).
//
// The line's fields:
//   kernels               "fast", or "reference" under TG_FAST_KERNELS=0 (as bench_gpt's)
//   quantize              "none" or "int8" (--quantize)
//   tokens_per_s          N / seconds_total
//   decode_tokens_per_s   (N - 1) / the steps after the first: the first step also runs the prompt
//                         through the model (compute, not memory, bound), the others one token each
//   ms_per_token_median   the median step time
//   ms_per_token_max      the slowest step (with --mode cache: a refill of the window)
//   seconds_total         the N steps
//   peak_rss_mb           getrusage's ru_maxrss
//   resident_mib          the resident memory after the run (runtime/memory.h: resident_mb)
//   weights_mib           the parameters' bytes, in their dtypes (a tied weight once), and an int8
//                         weight's scales
//   ids_hash              FNV-1a (64 bits) of the N new ids as little-endian int64, in hex
//   first_ids, ids        the first 16 new ids, all N
//   weight_bytes_per_token  the bytes of weights one new token reads: every parameter once, but
//                         only one row of the position table (and of the token table when the
//                         head is not tied to it; a tied one is read whole, as the head)
//   copy_gbps             bench_util's copy loop (stream_gbps) on the same threads, after the run
//   bandwidth_limit_tokens_per_s  copy_gbps / weight_bytes_per_token: no generation that reads
//                         its weights from memory for each token is faster
//   fraction_of_limit     tokens_per_s / bandwidth_limit_tokens_per_s
//   decode_fraction_of_limit  decode_tokens_per_s / bandwidth_limit_tokens_per_s
//   blas                  the kernels that ran: BLIS's version, threading build and kernels (and
//                         who chose them), tapegrad's own (tg::kernel_info, autograd/fast_kernels.h)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "autograd/runtime/memory.h"
#include "bench/bench_util.h"
#include "io/flags.h"
#include "train/corpus.h"
#include "models/hf/hf_gpt2.h"
#include "models/hf/hf_llama.h"
#include "train/run_log.h"
#include "tokenizers/tokenizer.h"
#include "models/generation/generate.h"
#include "nn/quantize.h"

using namespace tg;

namespace {

// --help's first paragraph.
const char* const kAbout =
    "Writes --new-tokens tokens greedily with an untrained GPT and prints one "
    "JSON line: tokens/s, ms per token, peak RSS, the ids.";

struct BenchOptions {
  std::string config = "medium";
  std::string mode = "cache";
  int64_t threads = 0;  // 0 = all cores
  std::string threads_sweep;  // "1,2,4": one run (one line) per count instead
  int64_t new_tokens = 500;
  int64_t prompt_tokens = 16;
  int64_t keep = 0;  // 0 = the mode's default
  int64_t warmup = 4;
  int64_t seed = 1337;
  std::string init_from;  // a Hugging Face GPT-2 folder: its model and tokenizer instead of --config's
  std::string dtype = "auto";  // a Llama / Qwen folder's weights: the checkpoint's dtype, or float32
  std::string quantize = "none";  // int8: nn/quantize.h
};

std::vector<Flag> bench_flags(BenchOptions& o) {
  return {
      tg::bench::gpt_bench_config_flag(&o.config),
      text_flag("mode", &o.mode, "cache: KV cache; recompute: the whole window each step", {"cache", "recompute"}),
      threads_flag(&o.threads),
      tg::bench::threads_sweep_flag(&o.threads_sweep),
      int_flag("new-tokens", &o.new_tokens, "tokens to write (timed)", 1, 1e7),
      int_flag("prompt-tokens", &o.prompt_tokens, "the prompt: this many characters of the built-in corpus", 1, 1e5),
      int_flag("keep", &o.keep,
               "past the context, restart the window from this many tokens (0 = cache: context / 2, "
               "recompute: context, i.e. slide)",
               0, 1e7),
      int_flag("warmup", &o.warmup, "tokens written untimed first", 0, 1e7),
      seed_flag(&o.seed, "seed of the model's initialisation"),
      text_flag("init-from", &o.init_from,
                "a Hugging Face GPT-2 folder (its model and tokenizer) or Llama / Qwen folder (its model, the "
                "corpus's bytes as the prompt's ids) instead of --config's"),
      text_flag("dtype", &o.dtype,
                "a Llama / Qwen folder's weights: auto keeps a BF16 or F16 file's matrices 16-bit, float32 widens them",
                {"auto", "float32"}),
      text_flag("quantize", &o.quantize,
                "int8: every matrix int8 with one scale per 32 weights of a row, made at load time (nn/quantize.h)",
                {"none", "int8"}),
  };
}

// FNV-1a over the bytes of the ids as little-endian int64 (bench_generate_torch.py: the same).
std::string fnv1a_hex(const std::vector<int64_t>& ids) {
  uint64_t h = 14695981039346656037ull;
  for (int64_t id : ids) {
    const auto v = static_cast<uint64_t>(id);
    for (int byte = 0; byte < 8; ++byte) {
      h ^= (v >> (8 * byte)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The first n ids (all when fewer) as a JSON array.
tg::json::Writer json_ids(const std::vector<int64_t>& ids, size_t n) {
  tg::json::Writer out = tg::json::Writer::array();
  for (size_t i = 0; i < n && i < ids.size(); ++i) out.item(ids[i]);
  return out;
}

// The int8 weights' scales (nn/quantize.h), each tensor once: a tied pair's are one.
NamedTensors weight_scales(const tg::nn::Module& model) {
  NamedTensors out;
  for (const auto& [name, t] : model.named_buffers()) {
    bool seen = false;
    for (const auto& [n, s] : out) seen = seen || s.raw_data() == t.raw_data();
    if (name.ends_with("weight_scale") && !seen) out.emplace_back(name, t);
  }
  return out;
}

// The parameters' bytes in MiB, each tensor once: what the weights take, in their dtypes.
double weights_mib(const NamedTensors& parameters, const NamedTensors& scales) {
  double bytes = 0;
  for (const auto& [name, p] : parameters) bytes += static_cast<double>(p.nbytes());
  for (const auto& [name, s] : scales) bytes += static_cast<double>(s.nbytes());
  return bytes / (1024.0 * 1024.0);
}

int run(const BenchOptions& b) {
  const int threads = tg::bench::use_threads(b.threads);
  const std::string text = train::builtin_corpus();
  std::unique_ptr<tg::models::CausalLM> model;
  std::vector<int64_t> prompt;
  if (b.init_from.empty()) {  // the config's shape on the corpus's characters, from --seed
    const tokenizers::CharTokenizer tokenizer = tokenizers::CharTokenizer::from_text(text);
    prompt = tokenizer.encode(text.substr(0, static_cast<size_t>(b.prompt_tokens)));
    tg::models::GPTConfig config = tg::bench::gpt_bench_config(b.config).model;
    config.vocab_size = tokenizer.vocab_size();
    tg::manual_seed(static_cast<uint64_t>(b.seed));
    model = std::make_unique<tg::models::GPTModel>(config);
  } else if (models::is_hf_llama_folder(b.init_from)) {  // a Llama / Qwen folder's model, the corpus's bytes
    for (size_t i = 0; i < static_cast<size_t>(b.prompt_tokens) && i < text.size(); ++i)
      prompt.push_back(static_cast<unsigned char>(text[i]));
    if (static_cast<int64_t>(prompt.size()) < b.prompt_tokens)
      throw UsageError("--prompt-tokens " + std::to_string(b.prompt_tokens) + ": the corpus has " +
                       std::to_string(text.size()) + " bytes");
    model = std::move(models::load_hf_llama(b.init_from, models::weights_dtype_from_flag(b.dtype)).model);
  } else {  // a GPT-2 folder's model, and the corpus in its tokens
    prompt = tokenizers::load_tokenizer(b.init_from).encode(text);
    if (static_cast<int64_t>(prompt.size()) < b.prompt_tokens)
      throw UsageError("--prompt-tokens " + std::to_string(b.prompt_tokens) + ": the corpus has " +
                       std::to_string(prompt.size()) + " tokens");
    prompt.resize(static_cast<size_t>(b.prompt_tokens));
    model = std::move(models::load_hf_gpt2(b.init_from).model);
  }
  if (b.quantize == "int8") tg::nn::quantize_int8_(*model);
  model->eval();
  const int64_t context = model->context_length();
  if (b.keep > context)
    throw UsageError("--keep (" + std::to_string(b.keep) + ") exceeds the context (" + std::to_string(context) + ")");

  tg::models::SamplingOptions options;
  options.temperature = 0.0;  // greedy
  options.use_kv_cache = b.mode == "cache";
  options.keep_when_full = b.keep > 0 ? b.keep : (b.mode == "cache" ? context / 2 : context);
  const tg::Tensor idx = tg::from_vector(prompt, {1, static_cast<int64_t>(prompt.size())});  // (1, P)
  if (b.warmup > 0) tg::models::generate(*model, idx, b.warmup, options);

  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds;  // one per step
  auto last = Clock::now();
  const auto start = last;
  const tg::Tensor out = tg::models::generate(*model, idx, b.new_tokens, options, nullptr, [&](const tg::Tensor&) {
    const auto now = Clock::now();
    seconds.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
  });
  const double total = std::chrono::duration<double>(last - start).count();
  const double rss = tg::peak_rss_mb(), resident = tg::resident_mb();
  // The memory-bandwidth limit: a token reads every weight once, at best at the copy loop's rate.
  const NamedTensors parameters = model->named_parameters();  // a tied weight is listed once
  const bool tied = tg::bench::head_is_tied(parameters);
  int64_t weight_bytes = 0;
  for (const auto& [name, p] : parameters) {
    const bool one_row = name == "pos_emb.weight" || (tg::bench::is_token_table(name) && !tied);
    weight_bytes += one_row ? p.size(1) * static_cast<int64_t>(tg::element_size(p.dtype())) : static_cast<int64_t>(p.nbytes());
  }
  const NamedTensors scales = weight_scales(*model);
  for (const auto& [name, s] : scales) {  // an int8 weight's: read with it (one row's for a table's row)
    const bool one_row = name == "pos_emb.weight_scale" || (tg::bench::is_token_table(name.substr(0, name.size() - 6)) && !tied);
    weight_bytes += one_row ? s.size(1) * 4 : static_cast<int64_t>(s.nbytes());
  }
  const double copy_gbps = tg::bench::stream_gbps(tg::bench::Stream::Copy);
  const double limit = copy_gbps * 1e9 / static_cast<double>(weight_bytes);
  const double tokens_per_s = static_cast<double>(b.new_tokens) / total;
  const double decode_tokens_per_s =
      seconds.size() > 1 ? static_cast<double>(seconds.size() - 1) / (total - seconds.front()) : tokens_per_s;
  std::vector<int64_t> ids = out.narrow(1, idx.size(1), b.new_tokens).tolist<int64_t>();

  using tg::json::round_to;  // timings and rates to the digits that are not noise
  tg::json::Writer line;
  line.field("bench", "tapegrad").field("kernels", train::kernels_mode())
      .field("config", b.init_from.empty() ? b.config : "init-from " + b.init_from)
      .field("mode", b.mode).field("quantize", b.quantize).field("threads", threads)
      .field("prompt_tokens", prompt.size()).field("new_tokens", b.new_tokens)
      .field("context", context).field("keep", options.keep_when_full)
      .field("vocab_size", model->vocab_size()).field("params", model->num_parameters())
      .field("tokens_per_s", round_to(tokens_per_s, 1))
      .field("decode_tokens_per_s", round_to(decode_tokens_per_s, 1))
      .field("ms_per_token_median", round_to(tg::bench::median(seconds) * 1e3, 3))
      .field("ms_per_token_max", round_to(*std::max_element(seconds.begin(), seconds.end()) * 1e3, 3))
      .field("seconds_total", round_to(total, 3)).field("peak_rss_mb", round_to(rss, 1))
      .field("resident_mib", round_to(resident, 1)).field("weights_mib", round_to(weights_mib(parameters, scales), 1))
      .field("weight_bytes_per_token", weight_bytes).field("copy_gbps", round_to(copy_gbps, 2))
      .field("bandwidth_limit_tokens_per_s", round_to(limit, 1))
      .field("fraction_of_limit", round_to(tokens_per_s / limit, 3))
      .field("decode_fraction_of_limit", round_to(decode_tokens_per_s / limit, 3))
      .field("ids_hash", fnv1a_hex(ids)).field("first_ids", json_ids(ids, 16))
      .field("ids", json_ids(ids, ids.size()));
  return tg::bench::print_run_line(line);
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions b;
  return run_program({"bench_generate", kAbout, bench_flags(b)}, argc, argv, [&] {
    return tg::bench::for_each_thread_count(b.threads_sweep, &b.threads, [&] { return run(b); });
  });
}
