// nn/serialize.cpp — tg::save and tg::load: a state_dict through a safetensors file.
#include "nn/serialize.h"

#include "nn/safetensors.h"

namespace tg {

void save(const nn::Module& module, const std::string& path) {
  save_safetensors(path, module.state_dict(), {{"format", "pt"}});
}

void load(nn::Module& module, const std::string& path, const SafetensorsReadOptions& options) {
  module.load_state_dict(load_safetensors(path, options), /*strict=*/true, path);
}

}  // namespace tg
