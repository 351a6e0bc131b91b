// models/hf/hf_gpt2.h — Hugging Face GPT-2 folders (config.json + model.safetensors, as
// save_pretrained writes them) read into a GPTModel, and the model written back as one.
//
// Read first: hf_gpt2_config (config.json's fields, what is refused), then load_hf_gpt2
// (model.safetensors' names, why they are transposed); write_hf_gpt2 and save_hf_gpt2 write a
// folder back. kGpt2Block is the one table of GPT-2's names and tapegrad's.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "nn/safetensors.h"
#include "io/json.h"
#include "models/hf/hf_config_reader.h"  // kTapegradSection
#include "models/gpt.h"

namespace tg::models {

// What reading a folder found, besides the config and the weights; what writing it back keeps.
struct HfGpt2Info {
  bool prefixed = false;                      // the names began with "transformer."
  bool had_lm_head = false;                   // lm_head.weight was there (equal to wte.weight)
  std::vector<std::string> converted_dtypes;  // "F16", "BF16": read as float32
  json::Value config;                         // config.json as read (null when the model is tapegrad's)
};

// GPT-2's names and tapegrad's: the one table that the loader, the saver, LoRA's adapters and
// peft's files read. A block's modules, in GPT-2's state_dict order; "h.{i}." + gpt2 is
// "trf_blocks.{i}." + tapegrad. GPT-2's Conv1D keeps its weight as (in, out), the transpose of a
// Linear's; its c_attn holds q, k and v side by side, tapegrad's att.W_query, W_key and W_value.
enum class Gpt2Layer { kLayerNorm, kConv1D, kFusedQkv };
struct Gpt2Module {
  const char* gpt2;
  const char* tapegrad;
  Gpt2Layer layer;
  int64_t in, out;      // a Conv1D's weight is (in C, out C), its bias (out C); a LayerNorm's (C)
  const char* adapter;  // LoRA's adapter of it in tapegrad (peft keeps it under gpt2's name); nullptr: none
};
inline constexpr Gpt2Module kGpt2Block[] = {
    {"ln_1", "norm1", Gpt2Layer::kLayerNorm, 1, 1, nullptr},
    {"attn.c_attn", "att", Gpt2Layer::kFusedQkv, 1, 3, "att.qkv_lora"},
    {"attn.c_proj", "att.out_proj", Gpt2Layer::kConv1D, 1, 1, "att.out_proj.lora"},
    {"ln_2", "norm2", Gpt2Layer::kLayerNorm, 1, 1, nullptr},
    {"mlp.c_fc", "ff.layers.0", Gpt2Layer::kConv1D, 1, 4, "ff.layers.0.lora"},
    {"mlp.c_proj", "ff.layers.2", Gpt2Layer::kConv1D, 4, 1, "ff.layers.2.lora"},
};
// Outside the blocks: wte.weight is tok_emb.weight (and out_head.weight, tied), wpe.weight
// pos_emb.weight, ln_f final_norm (weight and bias).
inline constexpr const char* kGpt2Outside[][2] = {{"wte", "tok_emb"}, {"wpe", "pos_emb"}, {"ln_f", "final_norm"}};
// c_attn's three parts, in its column order.
inline constexpr const char* kQkvParts[] = {"W_query", "W_key", "W_value"};

struct HfGpt2 {
  GPTConfig config;
  std::unique_ptr<GPTModel> model;  // in eval mode
  HfGpt2Info info;
};

// A folder whose config.json has "model_type": "gpt2" (models/hf/hf_folder.h: a config.json that is
// not a file, not JSON, or names no model_type tapegrad reads is an Error naming the file).
bool is_hf_gpt2_folder(const std::string& dir);

// One more than the largest i among the names "<before>i.<...>" of a weights file's header (a name
// may have "transformer." in front): the blocks the file has, known before a model of a
// config.json's n_layer is built. before: "h." (GPT-2's), "trf_blocks." (tapegrad's), peft's.
int64_t blocks_in_file(const std::vector<SafetensorsEntry>& file, const std::string& before);

// config.json's object -> GPTConfig; path names the file in errors.
//
// config.json, HF's field -> GPTConfig's (a missing field takes HF's GPT2Config default):
//   vocab_size (50257) -> vocab_size        n_positions (1024) -> context_length
//   n_embd (768) -> emb_dim                 n_layer (12) -> n_layers        n_head (12) -> n_heads
//   layer_norm_epsilon (1e-5) -> layer_norm_eps
//   resid_pdrop, embd_pdrop, attn_pdrop (0.1 each) -> drop_rate, the largest of the three
//       (tapegrad has one rate for the embeddings, the residual branches and the attention;
//       each must be in [0, 1))
//   qkv_bias = true, tie_weights = true (GPT-2's architecture)
// Refused, with an Error naming the file and the field: model_type other than "gpt2";
// activation_function other than the tanh GELU (gelu_new, gelu_pytorch_tanh, gelu_fast); n_inner
// other than null or 4 * n_embd; scale_attn_weights false; scale_attn_by_inverse_layer_idx or
// reorder_and_upcast_attn true; tie_word_embeddings false.
GPTConfig hf_gpt2_config(const json::Value& config, const std::string& path);

// Read dir/config.json and dir/model.safetensors (the file checked against the config before the
// model is built; the model is built without drawing its weights, nn::init::SkipInitGuard, so
// the default generator is left as it was).
//
// model.safetensors, HF's names (C = n_embd, V = vocab_size, P = n_positions), each with or
// without "transformer." in front (the file decides; all the same way):
//   wte.weight (V,C) -> tok_emb.weight (and out_head.weight, tied)   wpe.weight (P,C) -> pos_emb.weight
//   h.i.ln_1.{weight,bias} (C) -> trf_blocks.i.norm1     h.i.ln_2 -> norm2     ln_f -> final_norm
//   h.i.attn.c_attn.weight (C,3C), bias (3C): the columns [0,C), [C,2C), [2C,3C) are q, k, v;
//       each transposed is att.W_query / W_key / W_value.weight (C,C), the bias split the same way
//   h.i.attn.c_proj.weight (C,C) transposed -> att.out_proj.weight
//   h.i.mlp.c_fc.weight (C,4C) transposed -> ff.layers.0.weight (4C,C)
//   h.i.mlp.c_proj.weight (4C,C) transposed -> ff.layers.2.weight (C,4C)          biases as they are
// HF's Conv1D keeps its weight as (in, out) and computes x W + b; nn::Linear keeps (out, in) and
// computes x W^T + b: hence the transposes. "lm_head.weight" (never prefixed) may be present: it
// must equal wte.weight (HF ties them; save_pretrained omits it). The attention's buffers
// h.i.attn.bias and h.i.attn.masked_bias (older files have them) are ignored: their data is never
// read, but attn.bias must have HF's shape (1,1,P,P) and masked_bias be a scalar, each BOOL or
// floating point. Any other name is an Error naming it and the file, as is a missing name or a
// shape other than the one above (both shapes in the message). Weights may be F32, F16 or BF16:
// 16-bit ones are read as float32 (exactly) and HfGpt2Info::converted_dtypes says which were.
HfGpt2 load_hf_gpt2(const std::string& dir);

// The header of an HF model.safetensors (names, shapes, dtypes; no data read) checked against
// config, every name and shape as load_hf_gpt2_weights checks them: a file and a config.json that
// disagree (n_layer 1e9 beside a 12-block file) are refused before a model of that config takes
// any memory. info receives the prefix, whether lm_head is there and the converted dtypes.
void check_hf_gpt2_weights(const GPTConfig& config, const std::string& weights_path, HfGpt2Info* info);

// Read the weights of an HF model.safetensors into model (made with the file's config), all or
// nothing; info receives what was found (prefix, lm_head, converted dtypes).
void load_hf_gpt2_weights(GPTModel& model, const std::string& weights_path, HfGpt2Info* info);

// The model's tensors under HF's names, in HF's order (model: qkv_bias and tie_weights).
NamedTensors hf_gpt2_tensors(const GPTModel& model, bool prefixed);

// The same tensors for a model of config, each made when a file reaches it (nn/safetensors.h:
// TensorToWrite) from at(name), the model's tensor of that tapegrad name (a parameter, or a
// merged weight: train_gpt --merge-lora): transposed to Conv1D's orientation, or c_attn fused,
// and float32. A file written from them holds one such copy at a time, not a copy of the model.
// parameters_of(model) makes a model's parameters.
using TapegradTensor = std::function<Tensor(const std::string& name)>;
TapegradTensor parameters_of(const GPTModel& model);
std::vector<TensorToWrite> hf_gpt2_tensors_to_write(const GPTConfig& config, bool prefixed, TapegradTensor at);

// config.json's text for config: original's fields kept in their order and updated (original may
// be null: then HF's GPT-2 fields).
// tapegrad, when not empty, is the JSON object written as the last member, "tapegrad": a
// train_gpt run's own settings (train/run_folder.h); an old "tapegrad" member is dropped.
// Hugging Face's from_pretrained keeps unknown members as attributes and ignores them.
std::string hf_gpt2_config_json(const GPTConfig& config, const json::Value& original,
                                const std::string& tapegrad = "");

// The two files of a folder into files being written as a set (atomic_file.h): the caller
// prepares and commits them, with files of its own if it likes.
//
// Writing is the reverse: load_hf_gpt2's names (above) in HF's state_dict order (prefixed or
// not), fused c_attn, Conv1D orientation, no lm_head (tied), float32, metadata {"format": "pt"};
// and a config.json that keeps every field of the one read, updated where tapegrad's config
// differs, with "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2" and "torch_dtype":
// "float32".
void write_hf_gpt2(const GPTModel& model, const HfGpt2Info& from, AtomicFile& config_json,
                   AtomicFile& model_safetensors);
// The same for a model of config whose tensors at(name) makes as the file reaches them.
void write_hf_gpt2(const GPTConfig& config, TapegradTensor at, const HfGpt2Info& from, AtomicFile& config_json,
                   AtomicFile& model_safetensors);

// dir/config.json and dir/model.safetensors, saved as a set (dir must exist). from: what
// load_hf_gpt2 read (prefix and config fields to keep), or {} for a model of tapegrad's own.
void save_hf_gpt2(const GPTModel& model, const std::string& dir, const HfGpt2Info& from = {});

}  // namespace tg::models
