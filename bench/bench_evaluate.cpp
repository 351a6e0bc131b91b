// bench/bench_evaluate.cpp — multiple-choice scoring speed (train/multiple_choice.h), as one JSON line.
//
//   ./build/bench/bench_evaluate --threads 1 --items 20
//   ./build/bench/bench_evaluate --init-from gpt2 --threads 2 --mode whole
//
// The model: GPT-2 124M's shape (50,257 ids, 1,024 positions, 12 layers of 768, 12 heads, biases
// on q, k, v, the head tied to the token table), random from --seed and untrained; or a Hugging
// Face GPT-2 folder's (--init-from, e.g. one examples/pytorch/make_random_gpt2.py made). The items:
// HellaSwag's shape, a context of --context-tokens ids (40) and --choices (4) endings of
// --choice-tokens ids (20) each, drawn at random (std::mt19937 from --seed): the speed of the
// model's forwards does not depend on which ids they are.
//
//   --mode cache   the context runs once, each ending from its KV cache (choice_loglikelihoods)
//   --mode whole   each context + ending runs from scratch, as lm-evaluation-harness runs it
//                  (choice_loglikelihoods_whole); its twin is bench_evaluate_torch.py
//
// One untimed item comes first (BLIS's buffers, the allocator). The line's fields: items_per_s,
// ms_per_item (median), tokens_per_s (the ids run through the model per second: a cache item runs
// 40 + 4 x 19, a whole one 4 x 59), seconds_total, loglikelihood_sum (of every choice, a check that
// two modes compute the same), and the kernels that ran.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "io/flags.h"
#include "io/json.h"
#include "autograd/random/generator.h"
#include "bench_util.h"
#include "models/gpt.h"
#include "models/hf/hf_gpt2.h"
#include "train/multiple_choice.h"

using namespace tg;

namespace {

const char* const kAbout = "Times multiple-choice scoring (HellaSwag-shaped items) on GPT-2 124M's shape.";

struct BenchOptions {
  std::string init_from, mode = "cache";
  int64_t items = 20, context_tokens = 40, choices = 4, choice_tokens = 20, seed = 1337, threads = 0;
};

std::vector<Flag> bench_flags(BenchOptions& b) {
  return {
      text_flag("init-from", &b.init_from, "a Hugging Face GPT-2 folder (default: GPT-2 124M's shape, random)"),
      text_flag("mode", &b.mode, "cache: the context once, each ending from its KV cache; whole: each pair from scratch",
                {"cache", "whole"}),
      int_flag("items", &b.items, "items timed", 1, 1e6),
      int_flag("context-tokens", &b.context_tokens, "each item's context, in ids", 1, 1e6),
      int_flag("choices", &b.choices, "endings per item", 1, 100),
      int_flag("choice-tokens", &b.choice_tokens, "each ending, in ids", 1, 1e6),
      seed_flag(&b.seed, "seed of the weights and the ids"),
      threads_flag(&b.threads),
  };
}

std::unique_ptr<models::CausalLM> make_model(const BenchOptions& b) {
  if (!b.init_from.empty()) return std::move(models::load_hf_gpt2(b.init_from).model);
  manual_seed(static_cast<uint64_t>(b.seed));
  models::GPTConfig config{.vocab_size = 50257, .context_length = 1024, .emb_dim = 768, .n_heads = 12,
                           .n_layers = 12, .qkv_bias = true, .tie_weights = true};
  auto model = std::make_unique<models::GPTModel>(config);
  model->eval();
  return model;
}

int run(const BenchOptions& b) {
  const int threads = bench::use_threads(b.threads);
  std::unique_ptr<models::CausalLM> model = make_model(b);
  std::mt19937 gen(static_cast<uint32_t>(b.seed));
  std::uniform_int_distribution<int64_t> id(0, model->vocab_size() - 1);
  auto ids = [&](int64_t n) {
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t& x : out) x = id(gen);
    return out;
  };
  std::vector<train::ChoiceRequests> items;
  for (int64_t i = 0; i <= b.items; ++i) {  // the first is the warm-up
    train::ChoiceRequests r{ids(b.context_tokens), {}};
    for (int64_t c = 0; c < b.choices; ++c) r.continuations.push_back(ids(b.choice_tokens));
    items.push_back(std::move(r));
  }
  auto score = [&](const train::ChoiceRequests& r, int64_t* tokens) {
    return b.mode == "cache" ? train::choice_loglikelihoods(*model, r, tokens)
                             : train::choice_loglikelihoods_whole(*model, r, tokens);
  };
  score(items[0], nullptr);
  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds;
  int64_t tokens = 0;
  double ll_sum = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const auto start = Clock::now();
    for (double ll : score(items[i], &tokens)) ll_sum += ll;
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  double total = 0;
  for (double s : seconds) total += s;
  using json::round_to;
  json::Writer line;
  line.field("bench", "tapegrad").field("mode", b.mode).field("threads", threads)
      .field("model", b.init_from.empty() ? "gpt2-124m-shape random" : "init-from " + b.init_from)
      .field("items", b.items).field("context_tokens", b.context_tokens).field("choices", b.choices)
      .field("choice_tokens", b.choice_tokens)
      .field("items_per_s", round_to(static_cast<double>(b.items) / total, 3))
      .field("ms_per_item", round_to(bench::median(seconds) * 1e3, 2))
      .field("tokens_per_s", round_to(static_cast<double>(tokens) / total, 1))
      .field("seconds_total", round_to(total, 3)).field("loglikelihood_sum", round_to(ll_sum, 3))
      .field("blas", kernel_info());
  std::cout << line.str() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions b;
  return run_program({"bench_evaluate", kAbout, bench_flags(b)}, argc, argv, [&] { return run(b); });
}
