// models/causal_lm.cpp — the names of the checkpointing modes, and the check of a model's input
// ids (models/causal_lm.h).
#include "models/causal_lm.h"

#include "autograd/error.h"
#include "autograd/ops.h"

namespace tg::models {

Checkpointing checkpointing_from_name(const std::string& name) {
  if (name == "none") return Checkpointing::none;
  if (name == "every") return Checkpointing::every;
  if (name == "ffn") return Checkpointing::ffn;
  throw Error("checkpointing: expected none, every or ffn, got \"" + name + "\"");
}

std::string checkpointing_name(Checkpointing mode) {
  switch (mode) {
    case Checkpointing::every: return "every";
    case Checkpointing::ffn: return "ffn";
    case Checkpointing::none: break;
  }
  return "none";
}

void check_token_ids(const Tensor& idx, int64_t past, int64_t context, const std::string& context_field,
                     const std::string& model, const Tensor& key_padding_mask) {
  if (idx.dim() != 2 || idx.dtype() != ScalarType::Int64) {
    throw Error(model + ": expected token ids of shape (batch, num_tokens) and dtype int64, got shape " +
                shape_str(idx.sizes()) + " and dtype " + std::string(dtype_name(idx.dtype())));
  }
  if (past + idx.size(1) > context) {
    throw Error(model + ": num_tokens (" + std::to_string(past + idx.size(1)) + (past ? ", cached ones included" : "") +
                ") exceeds " + context_field + " (" + std::to_string(context) + ")");
  }
  if (key_padding_mask.defined() && (key_padding_mask.dtype() != kBool || key_padding_mask.sizes() != idx.sizes())) {
    throw Error(model + ": key_padding_mask must be bool of the ids' shape " + shape_str(idx.sizes()) +
                ", true = padded; got " + dtype_name(key_padding_mask.dtype()) + " of shape " +
                shape_str(key_padding_mask.sizes()));
  }
}

}  // namespace tg::models
