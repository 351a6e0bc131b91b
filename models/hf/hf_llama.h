// models/hf/hf_llama.h — Hugging Face folders of the Llama / Qwen family (model_type llama, qwen2,
// qwen3) read into a LlamaForCausalLM, and the model written back as one.
//
// Read first: hf_llama_config (config.json's fields, what is refused), then load_hf_llama (the
// weights files and their names); save_hf_llama writes a folder back. hf_llama_layout is the one
// table of names and shapes that reading and writing share.
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/json.h"
#include "nn/safetensors.h"
#include "autograd/tensor.h"
#include "models/hf/hf_folder.h"
#include "models/llama.h"

namespace tg::models {

struct HfLlamaInfo {
  std::vector<std::string> converted_dtypes;  // "F16", "BF16": read as float32
  std::vector<std::string> weight_files;      // model.safetensors, or the shards in index order
  bool had_lm_head = false;                   // a tied model's file had lm_head.weight
  // an untied model's lm_head.weight was not there, as in a *ForSequenceClassification folder
  // (the classifier reads score.weight instead): the head is zeros, and writes no text
  bool lm_head_missing = false;
  json::Value config;                         // config.json as read (null for a model of tapegrad's)
};

struct HfLlama {
  LlamaConfig config;
  std::unique_ptr<LlamaForCausalLM> model;  // in eval mode
  HfLlamaInfo info;
};

// True when dir/config.json's model_type is llama, qwen2 or qwen3 (models/hf/hf_folder.h: a
// config.json tapegrad cannot read at all is an Error naming the file).
bool is_hf_llama_folder(const std::string& dir);

// config.json's object -> LlamaConfig; path names the file in errors.
//
// config.json, Hugging Face's fields (a missing one takes that model_type's default in
// transformers' config class):
//   vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
//   num_key_value_heads (default: num_attention_heads), head_dim (default: hidden_size /
//   num_attention_heads; Qwen3's default 128), max_position_embeddings, rms_norm_eps, rope_theta,
//   rope_scaling (null, or rope_type "llama3" or "default"), tie_word_embeddings,
//   attention_dropout, initializer_range, attention_bias (llama, qwen3: biases on q, k, v and o).
//   transformers 5's "rope_parameters" object (rope_theta and the scaling in one) is read too.
// qwen2 has biases on q, k and v, none on o, and no attention_bias field. Refused, each with an
// Error naming the file and the field: another model_type; hidden_act other than "silu";
// mlp_bias true; use_sliding_window true (or a "sliding_attention" layer type); rope scaling
// other than llama3; attention_bias in a qwen2 config; sizes that do not divide (LlamaConfig).
LlamaConfig hf_llama_config(const json::Value& config, const std::string& path);

// config.json's text: original's fields kept in their order and updated (original may be null:
// then Hugging Face's fields for the model_type). tapegrad, when not empty, is written as the last
// member "tapegrad" (a train_gpt run's settings).
std::string hf_llama_config_json(const LlamaConfig& config, const json::Value& original, const std::string& tapegrad = "");

// The names and shapes of the model's weights as the files hold them, in state_dict order
// (lm_head.weight left out when tied): the one table the reader checks and the writer follows.
std::vector<std::pair<std::string, Shape>> hf_llama_layout(const LlamaConfig& config);

// Read dir/config.json and the weights (single file or shards); every name and shape is checked
// against the config from the files' headers before the model is built. The model is built
// without drawing its weights (nn::init::SkipInitGuard): the default generator is left as it was.
//
// The weights: model.safetensors, or model.safetensors.index.json ("weight_map": name -> shard
// file) and its shards, as the bigger models ship. The names are the model's state_dict names
// (models/llama.h): model.embed_tokens.weight, model.layers.i.self_attn.q_proj.weight, ...,
// model.norm.weight, lm_head.weight. With tie_word_embeddings, lm_head.weight is usually left
// out; when a file has it, it is read past (the head is embed_tokens.weight, as in transformers).
// model.rotary_emb.inv_freq and model.layers.i.self_attn.rotary_emb.inv_freq (older files) are
// buffers tapegrad computes: read past. A *ForSequenceClassification folder may leave an untied
// lm_head.weight out (transformers saves the body and score.weight): the head is then zeros and
// HfLlamaInfo::lm_head_missing says so. Any other name is an Error naming it and its file, as are
// a missing name, a shape other than the model's (both in the message), an index naming a
// missing shard, and a name the index puts in one shard but which is not there. F32, BF16 and F16
// weights are read as float32 (exactly); HfLlamaInfo::converted_dtypes says which were. With
// WeightsDtype::kCheckpoint a BF16 (F16) file's matrices stay bfloat16 (float16), frozen
// (models/hf/hf_folder.h: the logits are the same, to the bit), and converted_dtypes leaves BF16
// (F16) out when nothing was.
HfLlama load_hf_llama(const std::string& dir, WeightsDtype dtype = WeightsDtype::kFloat32);

// The weights at path against config, every name and shape as load_hf_llama checks them (an Error
// naming the file and the tensor), nothing read: path is one file (a train_gpt run's
// model.safetensors, or its .prev), or a folder (model.safetensors, or the index and its shards).
// Returns the files and what they hold (converted_dtypes, had_lm_head).
HfLlamaInfo check_hf_llama_weights(const LlamaConfig& config, const std::string& path);
// The weights at path into model's own tensors, after check_hf_llama_weights. kCheckpoint is
// load_hf_llama's for the weights that do not train (a LoRA's base, a classifier's body below
// --train-layers), while those `trained` names are read as float32 (the optimizer's masters).
HfLlamaInfo load_hf_llama_weights(LlamaForCausalLM& model, const std::string& path,
                                  WeightsDtype dtype = WeightsDtype::kFloat32,
                                  const std::set<std::string>& trained = {});

// The tensors a Hugging Face file holds, in hf_llama_layout's names and order, as float32; with
// keep_16bit, a frozen bfloat16 or float16 weight as it is (a run's checkpoint of a frozen body:
// exact, in half the bytes).
NamedTensors hf_llama_tensors(const LlamaForCausalLM& model, bool keep_16bit = false);

// dir/config.json and dir/model.safetensors, saved as a set (dir must exist; a folder with a
// model.safetensors.index.json is refused: the old shards would be read instead). from: what
// load_hf_llama read (config fields to keep), or {}.
//
// Writing: config.json with every field of the one read kept (updated where the model differs)
// and model.safetensors in float32, the state_dict's names and order, lm_head.weight left out
// when tied, metadata {"format": "pt"}: what from_pretrained reads.
void save_hf_llama(const LlamaForCausalLM& model, const std::string& dir, const HfLlamaInfo& from = {},
                   const std::string& tapegrad = "");

// The tensors of model.safetensors for a model of config whose weights are made one at a time as
// a file reaches them (nn/safetensors.h: TensorToWrite): weight(name) gives hf_llama_layout's
// tensor `name` (any float dtype), widened to float32 and written before the next is asked for, so
// a save holds one widened (or merged: train_gpt --merge-lora) weight at a time beside the model,
// not a float32 copy of it.
using WeightMaker = std::function<Tensor(const std::string& name)>;
std::vector<TensorToWrite> hf_llama_tensors_to_write(const LlamaConfig& config, WeightMaker weight);

}  // namespace tg::models
