// examples/gpt/checkpoint.h — a training run's folder (train_gpt --out DIR), saved and resumed.
//
//   model.safetensors      the model's state_dict (PyTorch's names), metadata
//                          {"format": "pt", "step": "<steps done>"}
//   optimizer.safetensors  AdamW's state: "<param>.step", "<param>.exp_avg", "<param>.exp_avg_sq";
//                          metadata "step", and the generators' states as hex: "default_generator"
//                          (dropout) and "batch_generator" (which batch comes next)
//   config.json            {"model": the GPTConfig, "train": every train_gpt flag}
//   tokenizer.json         the character vocabulary (examples/gpt/tokenizer.h)
//
// The four files are saved as one set: each is written to a temporary name and synced first,
// then all are renamed. A run killed during a save leaves the previous checkpoint whole. A
// resumed run continues bit for bit: N steps, save, resume, N steps equals 2N steps straight.
#pragma once
#include <memory>
#include <string>

#include "examples/gpt/tokenizer.h"
#include "examples/gpt/trainer.h"
#include "nn/gpt.h"

namespace tg::examples {

void save_checkpoint(Trainer& trainer, const std::string& dir);

// The options a run was saved with (config.json's "train").
TrainOptions saved_options(const std::string& dir);

// A Trainer in the state the checkpoint in dir was saved in, training on text (which must give
// the saved vocabulary). options: the saved ones, possibly with a larger --steps and another
// --out, --threads, --eval-every or --sample-tokens.
std::unique_ptr<Trainer> resume_trainer(const std::string& dir, const TrainOptions& options, const std::string& text);

// A saved model for writing text: the config, the tokenizer and the weights.
struct SavedModel {
  nn::GPTConfig config;
  CharTokenizer tokenizer;
  std::unique_ptr<nn::GPTModel> model;
};
SavedModel load_saved_model(const std::string& dir);

// "path: what is wrong" when dir is not a checkpoint folder (a file missing).
void check_checkpoint_folder(const std::string& dir);

}  // namespace tg::examples
