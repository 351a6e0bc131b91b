// nn/quantize.cpp — quantize_int8_: each Linear's and Embedding's weight to int8 (nn/quantize.h).
#include "nn/quantize.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "autograd/runtime/memory.h"
#include "nn/layers.h"
#include "nn/safetensors.h"

namespace tg::nn {

namespace {

// Every Linear and Embedding under module, by dotted name, in registration order.
struct QuantizableLayer {
  std::string name;
  Tensor* weight;
  Module* layer;
};

void collect_layers(Module& module, const std::string& prefix, std::vector<QuantizableLayer>& out) {
  if (auto* linear = dynamic_cast<Linear*>(&module)) out.push_back({prefix, &linear->weight, linear});
  if (auto* embedding = dynamic_cast<Embedding*>(&module)) out.push_back({prefix, &embedding->weight, embedding});
  for (const auto& [name, child] : module.named_children())
    collect_layers(*child, prefix.empty() ? name : prefix + "." + name, out);
}

void use_scales(Module* layer, const Tensor& scales) {
  if (auto* linear = dynamic_cast<Linear*>(layer)) linear->use_int8_weight(scales);
  else dynamic_cast<Embedding*>(layer)->use_int8_weight(scales);
}

}  // namespace

int64_t quantize_int8_(Module& model, int64_t group_size) {
  std::vector<QuantizableLayer> layers;
  collect_layers(model, "", layers);
  int8_group_size(1, group_size);  // a bad group size: an Error before anything changes
  // Every weight checked first, so that an Error leaves the model as it was; then each quantized
  // and put in place in turn (the memory of one float weight at a time on top of the model's).
  for (const QuantizableLayer& l : layers)
    if (const std::optional<std::string> bad = first_nonfinite(*l.weight))
      throw Error(l.name + ".weight has " + *bad + ": it cannot be quantized");
  std::vector<std::pair<Tensor, Tensor>> scales_of;  // each weight quantized here, and its scales
  for (const QuantizableLayer& l : layers) {
    Tensor scales;
    for (const auto& [t, s] : scales_of)
      if (t.is_same(*l.weight)) scales = s;  // tied to a weight quantized before: the same scales
    if (!scales.defined()) {
      if (l.weight->dtype() == kInt8) continue;  // quantized before this call
      QuantizedInt8 q = quantize_int8(*l.weight, group_size);
      make_frozen_int8(*l.weight, q.values);
      scales = q.scales;
      scales_of.emplace_back(*l.weight, scales);
    }
    use_scales(l.layer, scales);
  }
  // The float weights let go sit in the allocator's cache of freed buffers (autograd/runtime/
  // memory.h), which no tensor of their sizes will ask for again: give them back to the system.
  empty_cache();
  return static_cast<int64_t>(scales_of.size());
}

}  // namespace tg::nn
