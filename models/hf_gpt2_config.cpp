// models/hf_gpt2_config.cpp — Hugging Face GPT-2's config.json to GPTConfig and back
// (the field table is in hf_gpt2.h).
//
// Reading: each field is looked up with HF's default for a missing one, checked for its kind and
// for what tapegrad can run, and every error names the file and the field. Writing: the original
// object's members in their order, each replaced where tapegrad's value differs (a number equal to
// the original keeps its text), the missing ones appended, as JSON indented by 2 as
// save_pretrained writes it.
#include <algorithm>

#include "autograd/error.h"
#include "models/hf_gpt2.h"
#include "nn/module.h"

namespace tg::models {

namespace {

struct ConfigReader {
  const json::Value& config;
  const std::string& path;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(path + ": \"" + field + "\" " + what);
  }
  int64_t integer(const std::string& field, int64_t fallback) const {
    const json::Value* v = config.find(field);
    if (!v) return fallback;
    if (!v->is_number()) fail(field, std::string("must be an integer, got ") + json::Value::kind_name(v->kind()));
    try {
      return v->as_int64();
    } catch (const Error&) {
      fail(field, "must be an integer, got " + v->number_text());
    }
  }
  double number(const std::string& field, double fallback) const {
    const json::Value* v = config.find(field);
    if (!v) return fallback;
    if (!v->is_number()) fail(field, std::string("must be a number, got ") + json::Value::kind_name(v->kind()));
    return v->as_double();
  }
  // A dropout probability: PyTorch refuses one below 0, tapegrad's GPT one of 1 or more.
  double rate(const std::string& field, double fallback) const {
    const double p = number(field, fallback);
    if (!(p >= 0.0 && p < 1.0)) fail(field, "must be in [0, 1) (a dropout probability), got " + nn::python_float(p));
    return p;
  }
  bool flag(const std::string& field, bool fallback) const {
    const json::Value* v = config.find(field);
    if (!v) return fallback;
    if (!v->is_bool()) fail(field, std::string("must be true or false, got ") + json::Value::kind_name(v->kind()));
    return v->as_bool();
  }
  std::string text(const std::string& field, const std::string& fallback) const {
    const json::Value* v = config.find(field);
    if (!v) return fallback;
    if (!v->is_string()) fail(field, std::string("must be a string, got ") + json::Value::kind_name(v->kind()));
    return v->as_string();
  }
};

// Python's json.dumps(value, indent=2) layout, numbers as written.
void append_json(std::string& out, const json::Value& v, int depth) {
  const std::string indent(2 * static_cast<size_t>(depth + 1), ' '), close(2 * static_cast<size_t>(depth), ' ');
  switch (v.kind()) {
    case json::Value::Kind::Null: out += "null"; return;
    case json::Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case json::Value::Kind::Number: out += v.number_text(); return;
    case json::Value::Kind::String: out += json::quote(v.as_string()); return;
    case json::Value::Kind::Array:
      if (v.size() == 0) {
        out += "[]";
        return;
      }
      out += "[\n";
      for (size_t i = 0; i < v.size(); ++i) {
        out += indent;
        append_json(out, v[i], depth + 1);
        out += i + 1 < v.size() ? ",\n" : "\n";
      }
      out += close + "]";
      return;
    case json::Value::Kind::Object:
      if (v.size() == 0) {
        out += "{}";
        return;
      }
      out += "{\n";
      for (size_t i = 0; i < v.size(); ++i) {
        const json::Member& m = v.as_object()[i];
        out += indent + json::quote(m.key) + ": ";
        append_json(out, m.value, depth + 1);
        out += i + 1 < v.size() ? ",\n" : "\n";
      }
      out += close + "}";
      return;
  }
}

json::Value parsed(const std::string& text) { return json::parse(text, "hf_gpt2_config_json"); }

}  // namespace

GPTConfig hf_gpt2_config(const json::Value& config, const std::string& path) {
  if (!config.is_object()) throw Error(path + ": must be a JSON object");
  const ConfigReader read{config, path};
  const std::string model_type = read.text("model_type", "");
  if (model_type != "gpt2")
    read.fail("model_type", "is " + (model_type.empty() ? std::string("missing") : json::quote(model_type)) +
                                ": only \"gpt2\" is read");
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
  auto integer = [](int64_t v) { return std::to_string(v); };
  const std::string drop = nn::python_float(c.drop_rate);
  // field, its value as JSON; a dropout rate is rewritten only when tapegrad's differs
  std::vector<std::pair<std::string, std::string>> fields = {
      {"activation_function", "\"gelu_new\""}, {"architectures", "[\"GPT2LMHeadModel\"]"},
      {"attn_pdrop", drop},  {"embd_pdrop", drop},
      {"layer_norm_epsilon", nn::python_float(c.layer_norm_eps)},
      {"model_type", "\"gpt2\""}, {"n_embd", integer(c.emb_dim)},
      {"n_head", integer(c.n_heads)}, {"n_inner", "null"}, {"n_layer", integer(c.n_layers)},
      {"n_positions", integer(c.context_length)}, {"resid_pdrop", drop}, {"torch_dtype", "\"float32\""},
      {"vocab_size", integer(c.vocab_size)}};
  if (old.contains("n_ctx")) fields.push_back({"n_ctx", integer(c.context_length)});  // older configs
  auto keep_old = [&](const std::string& key) {
    const json::Value* v = old.find(key);
    if (!v) return false;
    if (key == "activation_function" || key == "n_inner") return true;  // checked when read: what tapegrad runs
    if (key == "attn_pdrop" || key == "embd_pdrop" || key == "resid_pdrop") return c.drop_rate == old_drop;
    if (key == "architectures" || key == "model_type" || key == "torch_dtype") return false;  // what is written
    const json::Value mine = parsed(std::find_if(fields.begin(), fields.end(), [&](auto& f) { return f.first == key; })->second);
    return v->is_number() && mine.is_number() && v->as_double() == mine.as_double();
  };
  std::string text = "{";
  auto add = [&](const std::string& key, const std::string& value) {
    if (text.size() > 1) text += ",";
    text += "\n  ";
    text += json::quote(key);
    text += ": ";
    text += value;
  };
  for (const json::Member& m : old.as_object()) {
    if (m.key == kTapegradSection) continue;  // a run's own section: written anew below, or not at all
    auto f = std::find_if(fields.begin(), fields.end(), [&](auto& x) { return x.first == m.key; });
    std::string value;
    if (f == fields.end() || keep_old(m.key)) {
      append_json(value, m.value, 1);
    } else {
      append_json(value, parsed(f->second), 1);
    }
    add(m.key, value);
  }
  for (const auto& [key, value] : fields) {
    if (old.contains(key)) continue;
    std::string formatted;
    append_json(formatted, parsed(value), 1);
    add(key, formatted);
  }
  if (!tapegrad.empty()) add(kTapegradSection, tapegrad);
  return text + "\n}\n";
}

}  // namespace tg::models
