// gpt2_lora.cpp — tapegrad's GPT stack as another program uses it: load a Hugging Face GPT-2
// folder, encode a sentence with its tokenizer, train LoRA adapters for three steps, save them in
// peft's files, and read them back.
//
//   gpt2_lora GPT2_FOLDER OUT_FOLDER      (.ci/run: the committed tiny GPT-2, tests/reference/lora/base)
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/hf/hf_gpt2.h"
#include "models/lora/lora_adapters.h"
#include "optim/adam.h"
#include "tokenizers/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: gpt2_lora GPT2_FOLDER OUT_FOLDER\n";
    return 2;
  }
  const std::string base = argv[1], out = argv[2];
  try {
    tg::models::HfGpt2 gpt2 = tg::models::load_hf_gpt2(base);
    tg::models::GPTModel& model = *gpt2.model;
    const tg::tokenizers::Tokenizer tokenizer = tg::tokenizers::load_tokenizer(base);

    // The sentence's tokens: inputs are all but the last, targets all but the first.
    const std::vector<int64_t> ids = tokenizer.encode("The old fox walks to the sea before the rain.");
    std::cout << "encoded " << ids.size() << " tokens; decoded: " << tokenizer.decode(ids) << "\n";
    const int64_t T = static_cast<int64_t>(ids.size()) - 1;
    const tg::Tensor x = tg::from_vector(std::vector<int64_t>(ids.begin(), ids.end() - 1), {1, T});
    const tg::Tensor y = tg::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.end()), {T});

    // Adapters of rank 4 on every Linear; the base weights freeze, and AdamW holds the adapters alone.
    tg::manual_seed(1337);
    const tg::models::LoRAConfig lora{.r = 4, .alpha = 8.0, .attn = true, .mlp = true};
    tg::models::apply_lora(model, lora);
    model.train();
    tg::optim::AdamW opt(tg::nn::trainable_parameters(model), {.lr = 1e-2});
    std::vector<double> losses;
    for (int step = 1; step <= 3; ++step) {
      opt.zero_grad();
      tg::Tensor loss = tg::cross_entropy(model(x).flatten(0, 1), y);  // logits (1,T,V) -> (T,V)
      loss.backward();
      opt.step();
      losses.push_back(loss.item<double>());
      std::cout << "step " << step << ": loss " << losses.back() << "\n";
    }

    // peft's two files: adapter_model.safetensors and adapter_config.json.
    std::filesystem::create_directories(out);
    const std::string weights = out + "/adapter_model.safetensors";
    tg::save_safetensors(weights, tg::models::peft_adapter_tensors(model), {{"format", "pt"}});
    tg::write_file_atomically(out + "/adapter_config.json",
                              tg::models::adapter_config_json({lora, std::filesystem::absolute(base).string()}),
                              "gpt2_lora");

    // Read back into a second copy of the model: the same adapters, bit for bit.
    tg::models::HfGpt2 again = tg::models::load_hf_gpt2(base);
    tg::models::apply_lora(*again.model, tg::models::read_adapter_config(out + "/adapter_config.json").lora);
    tg::models::load_peft_adapters(*again.model, weights);
    const tg::NamedTensors saved = tg::models::peft_adapter_tensors(model),
                           read = tg::models::peft_adapter_tensors(*again.model);
    bool same = saved.size() == read.size() && !saved.empty();
    for (size_t i = 0; same && i < saved.size(); ++i)
      same = saved[i].first == read[i].first &&
             saved[i].second.tolist<float>() == read[i].second.tolist<float>();
    const bool learned = losses.back() < losses.front();
    std::cout << saved.size() << " adapter tensors saved to " << out << (same ? " and read back the same" : " but read back DIFFERENT")
              << "; the loss " << (learned ? "fell" : "did NOT fall") << "\n";
    return same && learned ? 0 : 1;
  } catch (const tg::Error& e) {
    std::cerr << "gpt2_lora: " << e.what() << "\n";
    return 1;
  }
}
