// models/sequence_classification.cpp — the classifier's forward (see the header).
#include "models/sequence_classification.h"

#include <filesystem>
#include <string>

#include "autograd/error.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/gpt.h"
#include "models/llama.h"

namespace tg::models {

ModelForSequenceClassification::ModelForSequenceClassification(std::shared_ptr<CausalLM> body_model,
                                                               int64_t hidden_size, int64_t num_labels)
    : Module("ModelForSequenceClassification"), num_labels_(num_labels) {
  if (num_labels < 2)
    throw Error("ModelForSequenceClassification: " + std::to_string(num_labels) + " labels: a classifier needs 2 or more");
  body = register_module("body", std::move(body_model));
  score = register_module("score", std::make_shared<nn::Linear>(hidden_size, num_labels, /*bias=*/false));
}

std::vector<int64_t> last_token_positions(const Tensor& key_padding_mask, int64_t batch, int64_t length) {
  std::vector<int64_t> last(static_cast<size_t>(batch), length - 1);
  if (!key_padding_mask.defined()) return last;
  const Tensor mask = key_padding_mask.to(kInt64).contiguous();
  const int64_t* padded = mask.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t tokens = 0;
    while (tokens < length && padded[b * length + tokens] == 0) ++tokens;
    for (int64_t t = tokens; t < length; ++t)
      if (padded[b * length + t] == 0)
        throw Error("sequence classification: row " + std::to_string(b) + " has a token at position " +
                    std::to_string(t) + " after padding: pad on the right");
    if (tokens == 0) throw Error("sequence classification: row " + std::to_string(b) + " is all padding");
    last[static_cast<size_t>(b)] = tokens - 1;
  }
  return last;
}

Tensor ModelForSequenceClassification::forward(const Tensor& idx, const Tensor& key_padding_mask) {
  const int64_t B = idx.size(0), T = idx.size(1);
  const Tensor h = body->hidden_states(idx, key_padding_mask);  // (B,T,C)
  const std::vector<int64_t> last = last_token_positions(key_padding_mask, B, T);
  std::vector<int64_t> rows;  // row b's last token in h seen as (B*T, C)
  for (int64_t b = 0; b < B; ++b) rows.push_back(b * T + last[static_cast<size_t>(b)]);
  const Tensor pooled = index_select(h.reshape({B * T, h.size(2)}), 0, from_vector(rows, {B}));  // (B,C)
  return score->forward(pooled);
}

void set_trained_layers(ModelForSequenceClassification& model, const std::string& which) {
  if (which != "all" && which != "last" && which != "none")
    throw Error("set_trained_layers: \"" + which + "\": expected all, last or none");
  std::vector<std::string> trained;  // name prefixes of the body's weights that train
  std::string unread_head;            // the body's own output head, when it is a weight of its own
  if (const auto* gpt = dynamic_cast<const GPTModel*>(model.body.get())) {
    trained = {"trf_blocks." + std::to_string(gpt->config().n_layers - 1) + ".", "final_norm."};
    unread_head = "out_head.weight";
  } else if (const auto* llama = dynamic_cast<const LlamaForCausalLM*>(model.body.get())) {
    trained = {"model.layers." + std::to_string(llama->config().num_hidden_layers - 1) + ".", "model.norm."};
    unread_head = "lm_head.weight";
  } else {
    throw Error("set_trained_layers: the body is a " + model.body->type_name() + ", not a GPT or a Llama / Qwen model");
  }
  // a tied head is listed once, under the embedding's name: only an untied one is unread_head
  for (auto& [name, p] : model.body->named_parameters()) {
    bool trains = which == "all";
    if (which == "last")
      for (const std::string& prefix : trained) trains = trains || name.starts_with(prefix);
    if (name == unread_head) trains = false;
    p.requires_grad_(trains);
  }
  model.score->weight.requires_grad_(true);
}

std::string classifier_config_json(const ClassifierConfig& config, const std::string& architecture) {
  json::Writer id2label, label2id;
  for (size_t id = 0; id < config.id2label.size(); ++id) {
    id2label.field(std::to_string(id), config.id2label[id]);
    label2id.field(config.id2label[id], static_cast<int64_t>(id));
  }
  json::Writer out;
  out.field("architectures", json::Writer::array().item(architecture)).field("id2label", id2label);
  out.field("label2id", label2id).field("num_labels", static_cast<int64_t>(config.id2label.size()));
  if (config.pad_token_id >= 0) out.field("pad_token_id", config.pad_token_id);
  else out.field("pad_token_id", nullptr);
  return out.str();
}

bool is_classifier_config(const json::Value& config) {
  const json::Value* architectures = config.is_object() ? config.find("architectures") : nullptr;
  if (!architectures || !architectures->is_array()) return false;
  for (const json::Value& a : architectures->as_array())
    if (a.is_string() && a.as_string().ends_with("ForSequenceClassification")) return true;
  return false;
}

ClassifierConfig read_classifier_config(const json::Value& config, const std::string& path) {
  auto fail = [&](const std::string& field, const std::string& why) -> void {
    throw Error(path + ": \"" + field + "\" " + why);
  };
  const json::Value* id2label = config.find("id2label");
  if (!id2label || !id2label->is_object() || id2label->size() < 2)
    fail("id2label", "must be an object of at least two classes {\"0\": name, \"1\": name, ...}");
  ClassifierConfig out;
  out.id2label.assign(id2label->size(), std::string());
  std::vector<bool> seen(id2label->size(), false);
  for (const json::Member& m : id2label->as_object()) {
    size_t id = 0;
    const bool number = !m.key.empty() && m.key.size() < 10 &&
                        m.key.find_first_not_of("0123456789") == std::string::npos && (m.key == "0" || m.key[0] != '0');
    if (number) id = std::stoul(m.key);
    if (!number || id >= seen.size() || seen[id])
      fail("id2label", "has the key \"" + m.key + "\": the keys must be the ids 0 to " +
                           std::to_string(seen.size() - 1) + ", each once");
    if (!m.value.is_string()) fail("id2label", "\"" + m.key + "\" must be a string (the class's name)");
    seen[id] = true;
    out.id2label[id] = m.value.as_string();
  }
  if (const json::Value* n = config.find("num_labels"); n && !n->is_null()) {
    if (!n->is_number() || n->number_text() != std::to_string(out.id2label.size()))
      fail("num_labels", "is " + (n->is_number() ? n->number_text() : std::string(json::Value::kind_name(n->kind()))) +
                             ", but id2label has " + std::to_string(out.id2label.size()) + " classes");
  }
  if (const json::Value* label2id = config.find("label2id"); label2id && !label2id->is_null()) {
    if (!label2id->is_object() || label2id->size() != out.id2label.size())
      fail("label2id", "must name the " + std::to_string(out.id2label.size()) + " classes of id2label");
    for (size_t id = 0; id < out.id2label.size(); ++id) {
      const json::Value* v = label2id->find(out.id2label[id]);
      if (!v || !v->is_number() || v->number_text() != std::to_string(id))
        fail("label2id", "must give " + json::quote(out.id2label[id]) + " the id " + std::to_string(id) + ", as id2label does");
    }
  }
  if (const json::Value* pad = config.find("pad_token_id"); pad && !pad->is_null()) {
    if (!pad->is_number() || pad->number_text().find_first_not_of("0123456789") != std::string::npos)
      fail("pad_token_id", "must be a token id (a whole number) or null");
    out.pad_token_id = pad->as_int64();
  }
  return out;
}

void load_score_weight(ModelForSequenceClassification& model, const std::string& path, const std::string& name) {
  const Shape wanted = model.score->weight.shape();
  const SafetensorsReadOptions read{.float16_to_float32 = true, .finite_only = true,
                                    .skip = [&](const std::string& entry) { return entry != name; }};
  bool found = false;
  for (const SafetensorsEntry& e : safetensors_entries(path, read)) {
    if (e.name != name) continue;
    if (e.shape != wanted)
      throw Error(path + ": tensor \"" + name + "\" has shape " + shape_str(e.shape) + ", expected " +
                  shape_str(wanted) + " (num_labels x hidden size)");
    if (e.dtype != kFloat32)
      throw Error(path + ": tensor \"" + name + "\" has dtype " + e.file_dtype + "; expected F32, F16 or BF16");
    found = true;
  }
  if (!found)
    throw Error(path + ": tensor \"" + name + "\" is missing: a sequence-classification folder keeps its head there");
  NoGradGuard no_grad;
  for_each_safetensor(path, read, [&](const std::string&, Tensor t) { model.score->weight.copy_(t); });
}

std::vector<double> class_probabilities(ModelForSequenceClassification& model,
                                        const tokenizers::Tokenizer& tokenizer, const std::string& text, int64_t context) {
  std::vector<int64_t> ids = tokenizer.encode_with_bos(text);
  if (ids.empty()) throw Error("the text has no tokens");
  if (std::ssize(ids) > context) ids.resize(static_cast<size_t>(context));
  return class_probabilities(model, ids);
}

std::vector<double> class_probabilities(ModelForSequenceClassification& model, const std::vector<int64_t>& ids) {
  NoGradGuard no_grad;
  model.eval();
  const Tensor logits = model.forward(from_vector(ids, {1, std::ssize(ids)}));  // (1, n)
  return softmax(logits.to(kFloat64), -1).contiguous().tolist<double>();
}

}  // namespace tg::models
