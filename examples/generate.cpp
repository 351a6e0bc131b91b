// examples/generate.cpp — write text with a model saved by train_gpt (or converted from PyTorch
// by examples/pytorch/convert.py).
//
//   ./build/examples/generate --ckpt gpt_run --prompt "The old fox" --tokens 200 --temperature 0.8
#include <iostream>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "examples/gpt/checkpoint.h"
#include "examples/common/flags.h"
#include "nn/generate.h"

using namespace tg::examples;

namespace {

struct GenerateOptions {
  std::string ckpt = "gpt_run";
  std::string prompt = "\n";
  int64_t tokens = 200;
  tg::nn::SamplingOptions sampling{.temperature = 0.8};
  int64_t seed = 1337;
  int64_t samples = 1;
};

std::vector<Flag> generate_flags(GenerateOptions& o) {
  return {
      text_flag("ckpt", &o.ckpt, "a train_gpt --out folder (model.safetensors, config.json, tokenizer.json)"),
      text_flag("prompt", &o.prompt, "the text to continue"),
      int_flag("tokens", &o.tokens, "characters to write", 0, 1e9),
      number_flag("temperature", &o.sampling.temperature, "0 = greedy; higher = more surprising", 0, 100),
      int_flag("top-k", &o.sampling.top_k, "sample among the k most likely characters (0 = all)", 0, 1e9),
      number_flag("top-p", &o.sampling.top_p, "sample among the most likely characters whose probabilities sum to p",
                  1e-9, 1),
      seed_flag(&o.seed, "seed of the sampling generator"),
      int_flag("samples", &o.samples, "how many texts to write", 1, 1000),
  };
}

int run(const GenerateOptions& o) {
  SavedModel saved = load_saved_model(o.ckpt);
  std::vector<int64_t> prompt;
  try {
    prompt = saved.tokenizer.encode(o.prompt);
  } catch (const tg::Error& e) {
    throw tg::Error(std::string("--prompt: ") + e.what());  // names the character and its byte
  }
  if (prompt.empty()) throw UsageError("--prompt: empty (give at least one character)");
  tg::Generator gen(static_cast<uint64_t>(o.seed));
  for (int64_t k = 0; k < o.samples; ++k) {
    if (o.samples > 1) std::cout << "--- sample " << k + 1 << " ---\n";
    std::cout << write_text(*saved.model, saved.tokenizer, prompt, o.tokens, o.sampling, gen) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  GenerateOptions o;
  return run_program({"generate", "Writes text with a saved GPT.", generate_flags(o)}, argc, argv, [&] { return run(o); });
}
