// examples/your_journey.h — the attention notebooks' running example: "Your journey
// starts with one step", one 3-d embedding per token.
#pragma once
#include <string>
#include <vector>

#include "autograd/ops.h"

namespace tg::examples {

inline std::vector<std::string> your_journey_tokens() { return {"Your", "journey", "starts", "with", "one", "step"}; }

// (6, 3) float32
inline Tensor your_journey_inputs() {
  return tensor({{0.43, 0.15, 0.89},    // Your     (x^1)
                 {0.55, 0.87, 0.66},    // journey  (x^2)
                 {0.57, 0.85, 0.64},    // starts   (x^3)
                 {0.22, 0.58, 0.33},    // with     (x^4)
                 {0.77, 0.25, 0.10},    // one      (x^5)
                 {0.05, 0.80, 0.55}});  // step     (x^6)
}

}  // namespace tg::examples
