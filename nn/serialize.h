// nn/serialize.h — a module's weights to and from a file, with libtorch's names:
//
//   tg::save(model, "model.safetensors");   // model.state_dict() -> save_safetensors
//   tg::load(model, "model.safetensors");   // load_safetensors -> model.load_state_dict (strict)
//
// The file is a safetensors file (nn/safetensors.h) with the state_dict's names and order
// and the metadata {"format": "pt"}, so PyTorch loads it with
// model.load_state_dict(safetensors.torch.load_file(path)) and Hugging Face's loaders accept it.
// load changes nothing unless every name, shape and dtype matches; its error names the file and
// lists every problem at once.
#pragma once
#include <string>

#include "nn/safetensors.h"
#include "nn/module.h"

namespace tg {

void save(const nn::Module& module, const std::string& path);
// options: how the file is read (nn/safetensors.h); finite_only refuses weights that
// hold an inf or a nan, naming the tensor and the index.
void load(nn::Module& module, const std::string& path, const SafetensorsReadOptions& options = {});

}  // namespace tg
