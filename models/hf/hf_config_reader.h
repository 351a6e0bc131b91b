// models/hf/hf_config_reader.h — reading a Hugging Face config.json's fields: each looked up with
// the model's default for a missing one and checked for its kind, every error naming the file
// and the field:  gpt2/config.json: "n_embd" must be an integer, got string
// (models/hf/hf_gpt2_config.cpp and models/hf/hf_llama.cpp read their configs with it).
#pragma once
#include <cstdint>
#include <string>

#include "autograd/error.h"
#include "io/json.h"
#include "nn/module.h"

namespace tg::models {

// The member of a config.json in which a train_gpt run keeps its own settings (train/run_folder.h).
inline constexpr const char* kTapegradSection = "tapegrad";

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

// config.json's text, as save_pretrained writes it (indented by 2): the old config's members in
// their order, each replaced by the member of `fields` of that name unless keep_old(name) says the
// old value stands (a number equal to tapegrad's keeps its text); then the fields the old config
// lacks; then, when tapegrad is not empty, a last member "tapegrad" with that JSON text (an old
// "tapegrad" member is dropped). Hugging Face keeps unknown members as attributes and ignores them.
template <class KeepOld>
std::string merged_config_json(const json::Value& old, const json::Value& fields, KeepOld keep_old,
                               const std::string& tapegrad) {
  json::Writer text(json::Layout::Pretty);
  for (const json::Member& m : old.as_object()) {
    if (m.key == kTapegradSection) continue;  // a run's own section: written anew below, or not at all
    const json::Value* f = fields.find(m.key);
    text.field(m.key, !f || keep_old(m.key) ? m.value : *f);
  }
  for (const json::Member& f : fields.as_object())
    if (!old.contains(f.key)) text.field(f.key, f.value);
  if (!tapegrad.empty()) text.embed(kTapegradSection, tapegrad);
  return text.str() + "\n";
}

}  // namespace tg::models
