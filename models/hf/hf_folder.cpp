// models/hf/hf_folder.cpp — see hf_folder.h.
#include "models/hf/hf_folder.h"

#include <algorithm>
#include <cctype>

#include "autograd/error.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/user_file.h"

namespace tg::models {

const char* const kReadModelTypes = "\"gpt2\", \"llama\", \"qwen2\" and \"qwen3\"";

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

WeightsDtype weights_dtype_from_flag(const std::string& value, const std::string& flag) {
  if (value == "float32") return WeightsDtype::kFloat32;
  if (value == "auto") return WeightsDtype::kCheckpoint;
  throw Error(flag + " " + json::quote(value) + ": expected auto (the checkpoint's own dtype) or float32");
}

std::string model_type_problem(const std::string& model_type) {
  for (const char* read : {"gpt2", "llama", "qwen2", "qwen3"}) {
    if (model_type == read) return "";
    if (lower(model_type) == read)
      return "is " + json::quote(model_type) + ": model_type is case-sensitive; tapegrad reads " + kReadModelTypes;
  }
  return "is " + json::quote(model_type) + ": tapegrad reads " + kReadModelTypes;
}

ModelFolderKind model_folder_kind(const std::string& dir) {
  const std::string path = path_in(dir, "config.json");
  if (user_file_problem(path) == "no such file") return ModelFolderKind::none;
  const json::Value config = json::parse_file(path);  // a folder or a FIFO: that, by name
  if (!config.is_object())
    throw Error(path + ": must be a JSON object, got " + json::Value::kind_name(config.kind()));
  const json::Value* type = config.find("model_type");
  if (!type) {
    if (config.contains("model")) return ModelFolderKind::run;
    throw Error(path + ": \"model_type\" is missing: a Hugging Face model's config.json names it (tapegrad reads " +
                kReadModelTypes + "), a train_gpt run's has \"model\"");
  }
  if (!type->is_string())
    throw Error(path + ": \"model_type\" must be a string, got " + json::Value::kind_name(type->kind()));
  if (const std::string problem = model_type_problem(type->as_string()); !problem.empty())
    throw Error(path + ": \"model_type\" " + problem);
  return type->as_string() == "gpt2" ? ModelFolderKind::gpt2 : ModelFolderKind::llama;
}

}  // namespace tg::models
