// nn/init.h — parameter initialisation, drawing exactly what PyTorch 1.13's nn.init and module
// constructors draw (§8 in autograd/random/random_kernels.h), so a model seeded like a PyTorch one
// starts from the same weights, bit for bit. Read nn/init.cpp beside that section.
//
//   uniform_(w, a, b)         w ~ U(a, b)                                   (§3)
//   normal_(w, mean, std)     w ~ N(mean, std^2)                            (§4)
//   kaiming_uniform_(w, a)    w ~ U(-bound, bound), leaky_relu gain, mode fan_in:
//                               gain  = sqrt(2 / (1 + a^2))
//                               bound = sqrt(3) * gain / sqrt(fan_in)
//                             fan_in = w.size(1) * (product of sizes from dim 2 on)
//   linear_init_(W, b)        nn.Linear.reset_parameters: W (out, in) by kaiming_uniform_(W, sqrt(5)),
//                             THEN b (out) ~ U(-1/sqrt(in), 1/sqrt(in)); b may be undefined
//   embedding_init_(W, pad)   nn.Embedding.reset_parameters: W (N, d) ~ N(0, 1), then row pad
//                             (if given; negative counts from the end) set to 0
#pragma once
#include <cstdint>
#include <optional>

#include "autograd/random/generator.h"
#include "autograd/tensor.h"

namespace tg::nn::init {

// While a SkipInitGuard is alive on a thread, uniform_ and normal_ (and so every initialiser
// here, and the layers' constructors) draw nothing and write zeros: for a model whose weights
// are all read from a file right after it is built (models/hf/hf_llama.h), where drawing them would
// take longer than reading them (measured in docs/performance.md). The generator is left as it
// was, so what is drawn after the guard differs from what a model built without it would be
// followed by.
//
// With kLeaveUnset they write nothing either: the values are whatever the memory held, for a
// loader that reads every one of them next. A fresh buffer's pages are then never touched, so a
// weight that a loader makes bfloat16 before reading it (models/hf/hf_llama.h, kCheckpoint) never
// holds float32 pages: the model is never resident at float32's size.
enum class SkipInit { kWriteZeros, kLeaveUnset };
class SkipInitGuard {
 public:
  explicit SkipInitGuard(SkipInit what = SkipInit::kWriteZeros);
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;
  static bool active();

 private:
  bool previous_;
  SkipInit previous_what_;
};

// All the initialisers run under no-grad, so they work on parameters that require grad; they
// write in place (the tensor's storage version is bumped) and return the tensor they were given.
// gen = nullptr draws from tg::default_generator().
Tensor uniform_(const Tensor& w, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
Tensor normal_(const Tensor& w, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor kaiming_uniform_(const Tensor& w, double a = 0.0, Generator* gen = nullptr);

// fan_in of a weight of 2 or more dims: size(1) times the receptive field (sizes 2..).
int64_t fan_in(const Tensor& w, const char* op);
// The kaiming_uniform_ bound for fan_in and negative slope a, in PyTorch's order of double
// operations (for a = sqrt(5) it is rng::kaiming_uniform_bound).
double kaiming_uniform_bound(int64_t fan_in, double a);

void linear_init_(const Tensor& weight, const Tensor& bias, Generator* gen = nullptr);
void embedding_init_(const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                     Generator* gen = nullptr);

}  // namespace tg::nn::init
