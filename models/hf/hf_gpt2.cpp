// models/hf/hf_gpt2.cpp — Hugging Face GPT-2 weights to GPTModel's state_dict and back (the
// name and orientation table is in hf_gpt2.h).
//
// Reading: the file's names are checked against the layout (HF name, shape) made from the config,
// from the file's header alone, before a model is built (check_hf_gpt2_weights): the prefix is
// decided by whether any name starts with "transformer.", the config's n_layer is compared with
// the file's blocks (before a layout of 12 names a block is made), then every name must be in the
// layout, an ignored buffer (its shape checked, its data never read), lm_head.weight or a
// sequence classifier's score.weight (read by models/sequence_classification.h); every
// layout name must be there with its shape. Then each HF tensor is cut (c_attn into q, k, v) and
// transposed (Conv1D) into tapegrad's names and copied into the model's parameter.
// Writing: tapegrad's tensors fused and transposed the other way, in the layout's order.
#include "models/hf/hf_gpt2.h"

#include <algorithm>
#include <filesystem>

#include "autograd/error.h"
#include "io/atomic_file.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "io/flags.h"
#include "models/hf/hf_folder.h"
#include "nn/init.h"

namespace tg::models {

namespace {

const std::string kPrefix = "transformer.";

// name without "transformer." in front.
std::string unprefixed(const std::string& name) {
  return name.rfind(kPrefix, 0) == 0 ? name.substr(kPrefix.size()) : name;
}

struct HfTensor {
  std::string name;  // without the prefix
  Shape shape;
};

// HF's names and shapes, in GPT2LMHeadModel's state_dict order (buffers and lm_head left out).
std::vector<HfTensor> hf_layout(const GPTConfig& c) {
  const int64_t C = c.emb_dim;
  std::vector<HfTensor> out = {{"wte.weight", {c.vocab_size, C}}, {"wpe.weight", {c.context_length, C}}};
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    for (const Gpt2Module& m : kGpt2Block) {
      const bool norm = m.layer == Gpt2Layer::kLayerNorm;
      out.push_back({h + m.gpt2 + ".weight", norm ? Shape{C} : Shape{m.in * C, m.out * C}});
      out.push_back({h + m.gpt2 + ".bias", {m.out * C}});
    }
  }
  out.push_back({"ln_f.weight", {C}});
  out.push_back({"ln_f.bias", {C}});
  return out;
}

// The block module of part ("attn.c_attn.weight"), and the part's kind ("weight" or "bias").
const Gpt2Module& block_module(const std::string& part, std::string* kind) {
  const size_t dot = part.rfind('.');
  *kind = part.substr(dot + 1);
  for (const Gpt2Module& m : kGpt2Block)
    if (part.compare(0, dot, m.gpt2) == 0 && std::string(m.gpt2).size() == dot) return m;
  throw Error("not a GPT-2 block tensor: " + part);  // hf_layout's names only reach here
}

// "wte.weight" -> "tok_emb.weight": a tensor outside the blocks; "" for a block's.
std::string outside_name(const std::string& hf_name) {
  for (const auto& [gpt2, tapegrad] : kGpt2Outside)
    if (hf_name.rfind(std::string(gpt2) + ".", 0) == 0) return tapegrad + hf_name.substr(std::string(gpt2).size());
  return "";
}

// "<before><i>.<rest>": the block index i, and rest; -1 for a name of another form.
int64_t block_of(const std::string& name, const std::string& before, std::string* rest = nullptr) {
  if (name.rfind(before, 0) != 0) return -1;
  const size_t start = before.size(), dot = name.find('.', start);
  if (dot == std::string::npos || dot == start || dot - start > 10) return -1;  // at most 10 digits
  int64_t i = 0;
  for (size_t k = start; k < dot; ++k) {
    if (name[k] < '0' || name[k] > '9') return -1;
    i = 10 * i + (name[k] - '0');
  }
  if (rest) *rest = name.substr(dot + 1);
  return i;
}

bool is_ignored_buffer(const std::string& name, int64_t n_layers) {
  std::string rest;
  const int64_t i = block_of(name, "h.", &rest);
  return i >= 0 && i < n_layers && (rest == "attn.bias" || rest == "attn.masked_bias");
}

// An ignored buffer is not read, but it must be what GPT-2 keeps there: h.i.attn.bias HF's causal
// mask (1, 1, P, P), bool or float; h.i.attn.masked_bias a scalar.
void check_ignored_buffer(const SafetensorsEntry& e, const std::string& bare, const GPTConfig& c,
                          const std::string& path) {
  const bool mask = bare.size() >= 10 && bare.compare(bare.size() - 10, 10, ".attn.bias") == 0;
  const Shape expected = mask ? Shape{1, 1, c.context_length, c.context_length} : Shape{};
  if (e.shape != expected)
    throw Error(path + ": tensor \"" + e.name + "\" has shape " + shape_str(e.shape) + ", expected " +
                shape_str(expected) + (mask ? " (GPT-2's causal mask for config.json's n_positions " +
                                                  std::to_string(c.context_length) + "; its values are not read)"
                                            : " (GPT-2's masked_bias, a scalar; its value is not read)"));
  if (!is_floating(e.dtype) && e.dtype != kBool)
    throw Error(path + ": tensor \"" + e.name + "\" has dtype " + e.file_dtype +
                "; GPT-2's attention buffers are BOOL or floating point");
}

const Tensor* find(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

// The file's names, dtypes and shapes (its header: no data read yet), checked against the layout;
// info gets the prefix and whether lm_head is there.
void check_hf_entries(const std::vector<SafetensorsEntry>& file, const GPTConfig& c, const std::string& path,
                      HfGpt2Info& info) {
  info.prefixed = false;
  for (const SafetensorsEntry& e : file)
    if (e.name.rfind(kPrefix, 0) == 0) info.prefixed = true;
  // n_layer against the file's blocks first: the layout below has 12 names a block, and a
  // config.json's n_layer of 1e9 must not make them (nor a file whose one name says block 1e9: a
  // block has several tensors, so there are no more blocks than the file has tensors)
  if (const int64_t blocks = std::min<int64_t>(blocks_in_file(file, "h."), std::ssize(file)); blocks < c.n_layers)
    throw Error(path + ": tensor \"" + (info.prefixed ? kPrefix : "") + "h." + std::to_string(blocks) +
                ".ln_1.weight\" is missing (config.json's n_layer is " + std::to_string(c.n_layers) +
                "; the file has " + std::to_string(blocks) + " blocks)");
  const std::vector<HfTensor> layout = hf_layout(c);
  std::vector<const SafetensorsEntry*> hf(layout.size(), nullptr);  // the file's entry of each layout tensor
  for (const SafetensorsEntry& e : file) {
    const std::string& name = e.name;
    auto check_dtype = [&] {
      if (!is_floating(e.dtype) || e.dtype == kFloat64)
        throw Error(path + ": tensor \"" + name + "\" has dtype " + dtype_name(e.dtype) +
                    "; GPT-2 weights are F32, F16 or BF16");
    };
    if (name == "score.weight") continue;  // a sequence classifier's head (models/sequence_classification.h)
    if (name == "lm_head.weight") {
      check_dtype();
      info.had_lm_head = true;
      const Shape wte = {c.vocab_size, c.emb_dim};
      if (e.shape != wte)
        throw Error(path + ": tensor \"lm_head.weight\" has shape " + shape_str(e.shape) + ", expected " +
                    shape_str(wte) + " (wte.weight's, to which it is tied)");
      continue;
    }
    const bool has_prefix = name.rfind(kPrefix, 0) == 0;
    const std::string bare = has_prefix ? name.substr(kPrefix.size()) : name;
    const auto known = std::find_if(layout.begin(), layout.end(), [&](const HfTensor& l) { return l.name == bare; });
    if (has_prefix != info.prefixed || (known == layout.end() && !is_ignored_buffer(bare, c.n_layers)))
      throw Error(path + ": unknown tensor \"" + name + "\" (not a GPT-2 weight of this config.json" +
                  (has_prefix != info.prefixed ? ", or its \"transformer.\" prefix differs from the other names'" : "") +
                  ")");
    if (known == layout.end()) {  // h.i.attn.bias / masked_bias: the causal mask, which tapegrad makes itself
      check_ignored_buffer(e, bare, c, path);
      continue;
    }
    check_dtype();
    hf[static_cast<size_t>(known - layout.begin())] = &e;
  }
  for (size_t i = 0; i < layout.size(); ++i) {
    const std::string full = (info.prefixed ? kPrefix : "") + layout[i].name;
    if (!hf[i]) throw Error(path + ": tensor \"" + full + "\" is missing");
    if (hf[i]->shape != layout[i].shape)
      throw Error(path + ": tensor \"" + full + "\" has shape " + shape_str(hf[i]->shape) + ", expected " +
                  shape_str(layout[i].shape));
  }
}

// One of HF's tensors (its unprefixed name, float32) as the GPTModel tensors it holds (kGpt2Block):
// c_attn's weight and bias hold three each (q, k, v side by side), a Conv1D weight is the
// transposed Linear weight, wte is tok_emb and (tied) out_head; the rest map one to one.
NamedTensors gpt_tensors_of(const std::string& hf_name, const Tensor& t, int64_t C) {
  auto linear = [](const Tensor& conv1d_weight) { return conv1d_weight.transpose(0, 1).contiguous(); };
  if (const std::string name = outside_name(hf_name); !name.empty()) {
    if (name == "tok_emb.weight") return {{name, t}, {"out_head.weight", t}};
    return {{name, t}};
  }
  const size_t dot = hf_name.find('.', 2);  // h.<i>.<part>
  const std::string b = "trf_blocks." + hf_name.substr(2, dot - 2) + ".";
  std::string kind;
  const std::string part = hf_name.substr(dot + 1);  // named: GCC 14 warns of a dangling reference otherwise
  const Gpt2Module& m = block_module(part, &kind);
  const bool weight = kind == "weight";
  if (m.layer == Gpt2Layer::kFusedQkv) {
    NamedTensors out;
    for (int64_t k = 0; k < 3; ++k) {
      const Tensor slice = t.slice(weight ? 1 : 0, k * C, (k + 1) * C);
      out.push_back({b + m.tapegrad + "." + kQkvParts[k] + "." + kind, weight ? linear(slice) : slice.contiguous()});
    }
    return out;
  }
  const bool conv1d = weight && m.layer == Gpt2Layer::kConv1D;
  return {{b + m.tapegrad + "." + kind, conv1d ? linear(t) : t}};
}

}  // namespace

int64_t blocks_in_file(const std::vector<SafetensorsEntry>& file, const std::string& before) {
  int64_t blocks = 0;
  for (const SafetensorsEntry& e : file) {
    blocks = std::max(blocks, block_of(unprefixed(e.name), before) + 1);
  }
  return blocks;
}

bool is_hf_gpt2_folder(const std::string& dir) { return model_folder_kind(dir) == ModelFolderKind::gpt2; }

HfGpt2 load_hf_gpt2(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  for (const char* name : {"config.json", "model.safetensors"})
    if (!std::filesystem::exists(path_in(dir, name)))
      throw Error(dir + ": not a Hugging Face GPT-2 folder (" + name + " is missing)");
  HfGpt2 out;
  const std::string config_path = path_in(dir, "config.json"), weights_path = path_in(dir, "model.safetensors");
  out.info.config = json::parse_file(config_path);
  out.config = hf_gpt2_config(out.info.config, config_path);
  check_hf_gpt2_weights(out.config, weights_path, &out.info);  // before the model takes any memory
  const Activity building("building the model of " + config_path);
  {
    const nn::init::SkipInitGuard no_draws;  // every weight is read next (the check above: all are in the file)
    out.model = std::make_unique<GPTModel>(out.config);
  }
  load_hf_gpt2_weights(*out.model, weights_path, &out.info);
  out.model->eval();
  return out;
}

void check_hf_gpt2_weights(const GPTConfig& config, const std::string& weights_path, HfGpt2Info* info) {
  const std::vector<SafetensorsEntry> entries = safetensors_entries(weights_path, {.float16_to_float32 = true});
  check_hf_entries(entries, config, weights_path, *info);
  info->converted_dtypes = widened_dtypes(entries);
}

void load_hf_gpt2_weights(GPTModel& model, const std::string& weights_path, HfGpt2Info* info) {
  const GPTConfig& c = model.config();
  check_hf_gpt2_weights(c, weights_path, info);  // every name and shape, before any data is read
  const Activity reading("reading " + weights_path);
  // the ignored buffers are never read: an attn.bias is a (P, P) mask, 2^28 entries for n_positions 16384
  const SafetensorsReadOptions read{.float16_to_float32 = true,
                                    .finite_only = true,  // an inf or nan: an Error naming it
                                    .skip = [&](const std::string& name) {
                                      return name == "score.weight" || is_ignored_buffer(unprefixed(name), c.n_layers);
                                    }};
  // One tensor at a time, copied into the model's own and let go: the model plus one tensor of the
  // file in memory at once, never the whole file beside it.
  // the parameters, not state_dict(): that would make every block's lazy causal mask (n_positions
  // squared floats each). out_head.weight, tied, is tok_emb.weight: listed once, filled once.
  const NamedTensors targets = model.named_parameters();
  Tensor lm_head;  // kept until wte is in, to check the two are tied
  {
    NoGradGuard no_grad;
    for_each_safetensor(weights_path, read, [&](const std::string& name, Tensor t) {
      const std::string bare = unprefixed(name);
      if (name == "lm_head.weight") {
        lm_head = t;
        return;
      }
      for (const auto& [target, value] : gpt_tensors_of(bare, t, c.emb_dim)) {
        if (target == "out_head.weight") continue;  // tok_emb.weight's tensor (tied)
        Tensor to = *find(targets, target);  // the model's tensor itself (a handle, not a copy)
        to.copy_(value);
      }
    });
  }
  if (lm_head.defined() && !allclose(lm_head, model.tok_emb->weight.detach(), 0.0, 0.0, /*equal_nan=*/true))
    throw Error(weights_path + ": tensor \"lm_head.weight\" differs from wte.weight: tapegrad reads GPT-2 with the two tied");
}

std::vector<TensorToWrite> hf_gpt2_tensors_to_write(const GPTConfig& c, bool prefixed, TapegradTensor tensor) {
  if (!c.qkv_bias || !c.tie_weights)
    throw Error("hf_gpt2_tensors: GPT-2 has qkv_bias and tie_weights; this model has qkv_bias=" +
                std::string(c.qkv_bias ? "true" : "false") + ", tie_weights=" + (c.tie_weights ? "true" : "false"));
  auto conv1d = [](const Tensor& linear_weight) { return linear_weight.transpose(0, 1).contiguous(); };
  const auto at = std::make_shared<const TapegradTensor>(std::move(tensor));  // shared by the entries
  std::vector<TensorToWrite> hf;
  for (const HfTensor& l : hf_layout(c)) {
    const std::string& n = l.name;
    std::function<Tensor()> make;
    if (const std::string name = outside_name(n); !name.empty()) {
      make = [at, name] { return (*at)(name); };
    } else {  // h.<i>.<part>: the module of kGpt2Block
      const size_t dot = n.find('.', 2);
      const std::string b = "trf_blocks." + n.substr(2, dot - 2) + ".";
      std::string kind;
      const std::string part = n.substr(dot + 1);
      const Gpt2Module& m = block_module(part, &kind);
      if (m.layer == Gpt2Layer::kFusedQkv) {
        make = [at, conv1d, kind, prefix = b + m.tapegrad + "."] {
          std::vector<Tensor> parts;
          for (const char* part : kQkvParts) parts.push_back((*at)(prefix + part + "." + kind));
          return kind == "weight" ? conv1d(cat(parts, 0)) : cat(parts, 0);
        };
      } else {
        make = [at, conv1d, transpose = kind == "weight" && m.layer == Gpt2Layer::kConv1D,
                name = b + m.tapegrad + "." + kind] { return transpose ? conv1d((*at)(name)) : (*at)(name); };
      }
    }
    hf.push_back({(prefixed ? kPrefix : "") + n, kFloat32, l.shape, [make] {
                    NoGradGuard no_grad;
                    return make().detach().to(kFloat32);
                  }});
  }
  return hf;
}

TapegradTensor parameters_of(const GPTModel& model) {
  return [state = model.named_parameters()](const std::string& name) { return find(state, name)->detach(); };
}

NamedTensors hf_gpt2_tensors(const GPTModel& model, bool prefixed) {
  NamedTensors hf;  // no buffers: the causal masks stay unmade
  for (const TensorToWrite& t : hf_gpt2_tensors_to_write(model.config(), prefixed, parameters_of(model)))
    hf.push_back({t.name, t.make()});
  return hf;
}

void write_hf_gpt2(const GPTModel& model, const HfGpt2Info& from, AtomicFile& config_json,
                   AtomicFile& model_safetensors) {
  write_hf_gpt2(model.config(), parameters_of(model), from, config_json, model_safetensors);
}

void write_hf_gpt2(const GPTConfig& config, TapegradTensor tensor, const HfGpt2Info& from, AtomicFile& config_json,
                   AtomicFile& model_safetensors) {
  save_safetensors(model_safetensors, hf_gpt2_tensors_to_write(config, from.prefixed, std::move(tensor)), {{"format", "pt"}});
  config_json.write(hf_gpt2_config_json(config, from.config));
}

void save_hf_gpt2(const GPTModel& model, const std::string& dir, const HfGpt2Info& from) {
  AtomicFile config(path_in(dir, "config.json"), "save_hf_gpt2");
  AtomicFile weights(path_in(dir, "model.safetensors"), "save_hf_gpt2");
  write_hf_gpt2(model, from, config, weights);
  config.prepare();
  weights.prepare();
  weights.commit();
  config.commit();
}

}  // namespace tg::models
