// models/causal_lm.cpp — the names of the checkpointing modes (models/causal_lm.h).
#include "models/causal_lm.h"

#include "autograd/error.h"

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

}  // namespace tg::models
