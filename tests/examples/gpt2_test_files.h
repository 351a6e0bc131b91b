// Small GPT-2 tokenizer files for tests: vocab.json text whose first 256 ids are the bytes; and a
// saved model's weights as numbers, to compare runs.
#pragma once
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "tokenizers/gpt2_tokenizer.h"

namespace tg::test {

// A vocabulary of the 256 bytes, in reverse byte order (ids 255..0), then `extra` tokens (their
// text in GPT-2's byte alphabet, "Ġ" for a space) as ids 256, 257, ...
inline std::string small_gpt2_vocab(const std::vector<std::string>& extra) {
  std::string json = "{";
  for (int b = 0; b < 256; ++b) {
    json += json::quote(tokenizers::Gpt2Tokenizer::token_text(std::string(1, static_cast<char>(b)))) + ": " +
            std::to_string(255 - b) + ", ";
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    json += json::quote(extra[i]) + ": " + std::to_string(256 + i) + (i + 1 < extra.size() ? ", " : "");
  }
  if (extra.empty()) json.resize(json.size() - 2);
  return json + "}";
}

// A safetensors file's tensors as float lists, by name, in the file's order (two saved models
// compare equal when their weights are the same numbers).
inline std::vector<std::pair<std::string, std::vector<float>>> safetensors_values(const std::string& path) {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  for (const auto& [name, t] : load_safetensors(path)) out.push_back({name, t.tolist<float>()});
  return out;
}

}  // namespace tg::test
