// train/run_folder.h — a training run's folder (train_gpt --out DIR), saved and resumed.
//
// Read first: save_run, whose comment lists the folder's files and how a save survives being
// killed, then resume_trainer, which reads them back. start_from_folder (through
// start_from_gpt2_folder or start_from_llama_folder) begins a run from a Hugging Face folder;
// save_merged_model writes a LoRA run as a plain model. Reading a run's model back for writing
// text, scoring or classifying is the models' (models/saved_model.h), so that a program which only
// uses a model needs nothing here.
#pragma once
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "train/trainer.h"

namespace tg::train {

// Saves the trainer's run, at its step, into dir. The folder's files:
//
//   model.safetensors      the model's state_dict (PyTorch's names), metadata
//                          {"format": "pt", "step": "<steps done>"}
//   optimizer.safetensors  AdamW's state: "<param>.step", "<param>.exp_avg", "<param>.exp_avg_sq";
//                          metadata "step", and the generators' states as hex: "default_generator"
//                          (dropout) and "batch_generator" (which batch comes next)
//   config.json            {"model": the GPTConfig, "train": every train_gpt flag, "kernels":
//                          "fast" or "reference", the code that last saved it (a report only:
//                          resuming reads "model" and "train", and either mode may continue)
//   tokenizer.json         the character vocabulary (tokenizers/tokenizer.h)
//
// A run from GPT-2 (train_gpt --init-from) keeps Hugging Face's layout, so that
// GPT2LMHeadModel.from_pretrained reads the folder (models/hf/hf_gpt2.h): model.safetensors
// has GPT-2's names, config.json is Hugging Face's with train_gpt's own object below as its
// member "tapegrad", and GPT-2's vocab.json and merges.txt sit beside tokenizer.json.
//
// A LoRA run (train_gpt --init-from DIR --lora-rank r) keeps its adapters alone, in peft's files
// (models/lora/lora_adapters.h): adapters.safetensors (peft's names; metadata "format" and "step")
// takes the place of model.safetensors, with the same .prev pairing, and adapter_config.json
// names the base folder (base_model_name_or_path, absolute), from which resuming, generate and
// --eval-only read the base weights before the adapters (an Error naming the path if it is gone).
// Its config.json is train_gpt's own (no Hugging Face fields: the folder is no GPT-2 model), its
// optimizer.safetensors holds the adapters' moments alone, and GPT-2's tokenizer files are there.
//
// A classification run (train_gpt --task classify) is saved as a Hugging Face *ForSequenceClassification
// folder of its layout (GPT2..., with GPT-2's names under "transformer."; Llama..., Qwen2...,
// Qwen3...; GPTForSequenceClassification in tapegrad's own): score.weight beside the body's
// weights, and config.json's architectures, id2label, label2id, num_labels and pad_token_id
// (models/sequence_classification.h).
//
// The four files are saved as one set: each is written to a temporary name and synced first,
// then renamed. model and optimizer must be of the same step, and the renames cannot happen at
// once, so before they are replaced their current versions are kept as model.safetensors.prev
// and optimizer.safetensors.prev (hard links, so nothing is copied): a run killed anywhere in a
// save leaves at least one pair of the same step, and resuming takes the newest such pair. A
// resumed run continues bit for bit: a run of 2N steps stopped after N (Ctrl-C, --max-minutes),
// resumed, equals 2N steps straight. (Resumed with another --steps, its learning rate goes on from
// where it was: train::continued_schedule.)
//
// Only finite values are saved and read: before a save replaces anything, every weight (or
// adapter) and every optimizer state is checked, and one inf or nan is an Error naming the step,
// the file and the tensor, with the folder left as it was (a step whose loss or gradients are not
// finite never reaches the model: trainer.h's on_nonfinite; this catches what an update itself
// overflows). Resuming, generate and --eval-only refuse such a file in the same words
// (check_finite, nn/safetensors.h): the weights of a run or a GPT-2 folder, the adapters,
// optimizer.safetensors.
// What a killed save leaves besides (temporary files "<file>.tmp-1a2b3c4d", "<file>.prev.tmp")
// is removed by resuming and by the next save: those names of the folder's files alone.
void save_run(Trainer& trainer, const std::string& dir);

// The options a run was saved with (config.json's "train").
TrainOptions saved_options(const std::string& dir);

// A Trainer in the state the checkpoint in dir was saved in, training on text (which must give
// the saved vocabulary). options: the saved ones, possibly with a larger --steps and another
// --out, --threads, --eval-every or --sample-tokens.
std::unique_ptr<Trainer> resume_trainer(const std::string& dir, const TrainOptions& options, const std::string& text);

// An error message raised while the run in dir is rebuilt (resume_trainer, the data it reads),
// with each "--flag" in it that was not given on this command line written as the field of
// dir/config.json its value came from ("dir/config.json: ... \"train.context\" ..."): the user
// never typed those. given: the flags that were, without "--". nullopt: the message names no
// such flag, and stands as it is.
std::optional<std::string> naming_saved_fields(const std::string& message, const std::string& dir,
                                               const std::vector<std::string>& given);

// A fresh run from the Hugging Face folder options.init_from, GPT-2's or a Llama / Qwen one (train_gpt
// --init-from): the flags not in given (without "--") take the folder's context and dropout
// (take_folder_defaults), --lora-rank is checked against its config, then start_from_gpt2_folder or
// start_from_llama_folder (below) builds the run on --data's text. options becomes the run's (the
// model's shape from the folder); *converted: the folder's 16-bit dtypes, read as float32.
std::unique_ptr<Trainer> start_from_folder(TrainOptions& options, const std::vector<std::string>& given,
                                           std::vector<std::string>* converted);

// A fresh run from the Hugging Face GPT-2 folder options.init_from: the model of its config.json
// (options.model gives the sequence length, at most n_positions, and the dropout), its weights
// (16-bit ones read as float32: *converted names their dtypes), the tokenizer options.tokenizer,
// and LoRA adapters when options.lora_rank > 0 (models/lora/gpt_lora.h). The run is saved in the
// folder's layout. train_gpt --init-from and bench_gpt --init-from start this way.
std::unique_ptr<Trainer> start_from_gpt2_folder(TrainOptions options, const std::string& text,
                                                std::vector<std::string>* converted);

// A fresh run from the Hugging Face Llama / Qwen folder options.init_from (model_type llama, qwen2,
// qwen3; models/hf/hf_llama.h): the model of its config.json (options.model gives the sequence
// length, at most max_position_embeddings, and the attention's dropout), its weights (single file
// or shards; 16-bit ones read as float32: *converted names their dtypes), the tokenizer
// options.tokenizer, and LoRA adapters when options.lora_rank > 0 (models/lora/llama_lora.h). The run
// is saved as a folder of the same model_type whose config.json keeps the folder's fields (a LoRA
// run: and its adapters in peft's files). train_gpt --init-from starts this way when the folder is one.
std::unique_ptr<Trainer> start_from_llama_folder(TrainOptions options, const std::string& text,
                                                 std::vector<std::string>* converted);

// "path: what is wrong" when dir is not a checkpoint folder (a file missing).
void check_run_folder(const std::string& dir);

// train_gpt --resume RUN --merge-lora OUT: the LoRA run's model with its adapters merged in
// (models::merged_state_dict), written to out (made if needed) as a Hugging Face folder of its
// base's kind with the run's tokenizer files, so that generate --ckpt OUT and from_pretrained read
// it: GPT-2 in its base's layout (config.json: the base's; model.safetensors: its names and
// prefix), a Llama / Qwen in Hugging Face's (config.json: the base's fields, models/hf/hf_llama.h). The
// two model files are written as a set. Refused with a UsageError: a run without adapters, out
// being the run's folder or its base's; with an Error, writing nothing: a merged weight that is
// not finite (finite adapters whose product overflows).
// An out that holds a model already (model_files_in) is refused, before anything is read, with a
// UsageError naming those files, unless overwrite: then the merged folder is written apart (the
// folder ".<out's name>.merging" beside out, removed after) and its files are moved in, the old
// model's files it does not write (shards, their index, another model's files) removed first, so
// that out holds the merged model alone; out's other files (a README, notes) stay.
void save_merged_model(const std::string& run, const std::string& out, bool overwrite = false);

// The files of dir that make up a model (a Hugging Face folder or a train_gpt run): config.json,
// the tokenizer's files, adapter_config.json and every *.safetensors, *.bin and index, with their
// .prev versions, by name, sorted; none when dir is no folder.
std::vector<std::string> model_files_in(const std::string& dir);

}  // namespace tg::train
