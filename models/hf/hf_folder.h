// models/hf/hf_folder.h — what a model folder holds, as its config.json says: one reading of the
// file decides between Hugging Face's GPT-2, the Llama family and a train_gpt run of tapegrad's
// own layout, and a config.json that is none of these is an Error saying what is wrong with it
// (not a guess that sends it to a reader which then complains of another file).
#pragma once
#include <string>

namespace tg::models {

enum class ModelFolderKind {
  none,   // no config.json in the folder
  gpt2,   // "model_type": "gpt2"
  llama,  // "model_type": "llama", "qwen2" or "qwen3"
  run,    // no model_type, a "model" member: a train_gpt run of tapegrad's GPT
};

// The dtype a reader keeps a folder's weights in:
//   kFloat32     every weight float32: a 16-bit file's are widened as they are read. What training
//                needs (its weights are float32 masters), and what --dtype float32 asks for.
//   kCheckpoint  a BF16 or F16 file's matrices (each linear layer's weight, the token embedding, an
//                untied head) stay bfloat16 or float16, frozen: half the memory, and half the bytes
//                each token reads while generating. matmul and embedding widen them exactly as they
//                read them, so every logit is the float32 model's, to the bit
//                (autograd/ops/matmul.cpp: widens_16bit). The norms' weights and the biases, a few
//                kB, are float32.
enum class WeightsDtype { kFloat32, kCheckpoint };

// "float32" -> kFloat32, "auto" -> kCheckpoint (transformers' torch_dtype="auto": the checkpoint's
// own dtype), for the programs' --dtype; anything else is an Error naming flag and value.
WeightsDtype weights_dtype_from_flag(const std::string& value, const std::string& flag = "--dtype");

// The model_types tapegrad reads, for messages: "gpt2", "llama", "qwen2" and "qwen3".
extern const char* const kReadModelTypes;

// Why model_type is not read ("is \"mistral\": tapegrad reads ..."; a name that differs from a
// read one only by case says that model_type is case-sensitive); "" when it is read.
std::string model_type_problem(const std::string& model_type);

// dir/config.json read once: its kind, or an Error naming the file and what is wrong: not a regular
// file (a folder, a FIFO), not JSON, not an object, no model_type (and no "model"), a model_type
// that is not a string or not one tapegrad reads.
ModelFolderKind model_folder_kind(const std::string& dir);

}  // namespace tg::models
