// models/hf/hf_gpt2_config.cpp — Hugging Face GPT-2's config.json to GPTConfig and back
// (the field table is in hf_gpt2.h).
//
// Reading: each field is looked up with HF's default for a missing one, checked for its kind and
// for what tapegrad can run, and every error names the file and the field. Writing: the original
// object's members in their order, each replaced where tapegrad's value differs (a number equal to
// the original keeps its text), the missing ones appended, as JSON indented by 2 as
// save_pretrained writes it.
#include <algorithm>

#include "autograd/error.h"
#include "models/hf/hf_config_reader.h"
#include "models/hf/hf_folder.h"
#include "models/hf/hf_gpt2.h"
#include "nn/module.h"

namespace tg::models {

namespace {

json::Value parsed(const std::string& text) { return json::parse(text, "hf_gpt2_config_json"); }

}  // namespace

GPTConfig hf_gpt2_config(const json::Value& config, const std::string& path) {
  if (!config.is_object()) throw Error(path + ": must be a JSON object");
  const ConfigReader read{config, path};
  const std::string model_type = read.text("model_type", "");
  if (model_type != "gpt2")
    read.fail("model_type", model_type.empty() ? std::string("is missing: this reader takes \"gpt2\"")
                            : model_type_problem(model_type).empty()
                                ? "is " + json::quote(model_type) + ": this reader takes \"gpt2\""
                                : model_type_problem(model_type));
  GPTConfig c;
  c.vocab_size = read.integer("vocab_size", 50257);
  c.context_length = read.integer("n_positions", 1024);
  c.emb_dim = read.integer("n_embd", 768);
  c.n_layers = read.integer("n_layer", 12);
  c.n_heads = read.integer("n_head", 12);
  c.layer_norm_eps = read.number("layer_norm_epsilon", 1e-5);
  c.drop_rate = std::max({read.rate("resid_pdrop", 0.1), read.rate("embd_pdrop", 0.1), read.rate("attn_pdrop", 0.1)});
  c.qkv_bias = true;
  c.tie_weights = true;

  const std::string activation = read.text("activation_function", "gelu_new");
  if (activation != "gelu_new" && activation != "gelu_pytorch_tanh" && activation != "gelu_fast")
    read.fail("activation_function", "is " + json::quote(activation) +
                                         ": tapegrad's GPT has the tanh GELU (gelu_new, gelu_pytorch_tanh, gelu_fast)");
  const json::Value* inner = config.find("n_inner");
  if (inner && !inner->is_null() && read.integer("n_inner", 0) != 4 * c.emb_dim)
    read.fail("n_inner", "is " + (inner->is_number() ? inner->number_text() : std::string("not a number")) +
                             ": tapegrad's GPT has 4 * n_embd = " + std::to_string(4 * c.emb_dim) + " (or null)");
  if (!read.flag("scale_attn_weights", true)) read.fail("scale_attn_weights", "is false: unsupported by tapegrad");
  for (const char* field : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"})
    if (read.flag(field, false)) read.fail(field, "is true: unsupported by tapegrad");
  if (!read.flag("tie_word_embeddings", true))
    read.fail("tie_word_embeddings", "is false: tapegrad reads GPT-2 with lm_head tied to wte");
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return c;
}

std::string hf_gpt2_config_json(const GPTConfig& c, const json::Value& original, const std::string& tapegrad) {
  const json::Value none = parsed("{}");
  const json::Value& old = original.is_object() ? original : none;
  const double old_drop = old.size() ? hf_gpt2_config(old, "config.json").drop_rate : -1.0;
  // the fields tapegrad writes; a dropout rate is rewritten only when tapegrad's differs
  json::Writer mine;
  mine.field("activation_function", "gelu_new").field("architectures", json::Writer::array().item("GPT2LMHeadModel"))
      .field("attn_pdrop", c.drop_rate).field("embd_pdrop", c.drop_rate)
      .field("layer_norm_epsilon", c.layer_norm_eps)
      .field("model_type", "gpt2").field("n_embd", c.emb_dim)
      .field("n_head", c.n_heads).field("n_inner", nullptr).field("n_layer", c.n_layers)
      .field("n_positions", c.context_length).field("resid_pdrop", c.drop_rate).field("torch_dtype", "float32")
      .field("vocab_size", c.vocab_size);
  if (old.contains("n_ctx")) mine.field("n_ctx", c.context_length);  // older configs
  const json::Value fields = parsed(mine.str());
  auto keep_old = [&](const std::string& key) {
    const json::Value* v = old.find(key);
    if (!v) return false;
    if (key == "activation_function" || key == "n_inner") return true;  // checked when read: what tapegrad runs
    if (key == "attn_pdrop" || key == "embd_pdrop" || key == "resid_pdrop") return c.drop_rate == old_drop;
    if (key == "architectures" || key == "model_type" || key == "torch_dtype") return false;  // what is written
    const json::Value& value = fields[key];
    return v->is_number() && value.is_number() && v->as_double() == value.as_double();
  };
  return merged_config_json(old, fields, keep_old, tapegrad);
}

}  // namespace tg::models
