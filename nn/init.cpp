// nn/init.cpp — parameter initialisation as PyTorch 1.13 does it (§8 in autograd/random/random_kernels.h).
//
// Every function here is a few uniform_ / normal_ calls under no-grad; what matters for
// bit-exactness is (1) the bounds, computed with the same double operations in the same order
// as torch/nn/init.py, and (2) the order of the calls (Linear: weight, then bias).
#include "nn/init.h"

#include <cmath>
#include <string>

#include "autograd/ops.h"
#include "autograd/random/random_kernels.h"
#include "autograd/tape.h"

namespace tg::nn::init {

namespace {
thread_local bool skip_init = false;
thread_local SkipInit skip_what = SkipInit::kWriteZeros;

// t under a SkipInitGuard: zeros, or left as it is.
Tensor skipped(Tensor& t) { return skip_what == SkipInit::kWriteZeros ? t.zero_() : t; }
}  // namespace

SkipInitGuard::SkipInitGuard(SkipInit what) : previous_(skip_init), previous_what_(skip_what) {
  skip_init = true;
  skip_what = what;
}
SkipInitGuard::~SkipInitGuard() {
  skip_init = previous_;
  skip_what = previous_what_;
}
bool SkipInitGuard::active() { return skip_init; }

Tensor uniform_(const Tensor& w, double a, double b, Generator* gen) {
  NoGradGuard no_grad;
  Tensor t = w;
  return skip_init ? skipped(t) : t.uniform_(a, b, gen);
}

Tensor normal_(const Tensor& w, double mean, double std, Generator* gen) {
  NoGradGuard no_grad;
  Tensor t = w;
  return skip_init ? skipped(t) : t.normal_(mean, std, gen);
}

// torch.nn.init._calculate_fan_in_and_fan_out: fan_in = size(1) * prod(sizes[2:]).
int64_t fan_in(const Tensor& w, const char* op) {
  if (w.dim() < 2) {
    throw Error(std::string(op) + ": fan_in can not be computed for a tensor with fewer than 2 dims, got shape " +
                shape_str(w.sizes()));
  }
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < w.dim(); ++d) receptive_field *= w.size(d);
  return w.size(1) * receptive_field;
}

// gain = sqrt(2 / (1 + a^2)) (calculate_gain("leaky_relu", a)), std = gain / sqrt(fan_in),
// bound = sqrt(3) * std: four double roundings in this order, as in Python.
double kaiming_uniform_bound(int64_t fan_in, double a) {
  if (fan_in <= 0) throw Error("kaiming_uniform_: fan_in must be > 0, got " + std::to_string(fan_in));
  if (a == std::sqrt(5.0)) return rng::kaiming_uniform_bound(fan_in);  // nn.Linear's case
  double gain = std::sqrt(2.0 / (1.0 + a * a));  // Python's a**2 is the correctly rounded a*a
  double std_dev = gain / std::sqrt(static_cast<double>(fan_in));
  return std::sqrt(3.0) * std_dev;
}

// A zero-element weight is left alone with no draws (torch warns "a no-op").
Tensor kaiming_uniform_(const Tensor& w, double a, Generator* gen) {
  if (w.numel() == 0) return w;
  const double bound = kaiming_uniform_bound(fan_in(w, "kaiming_uniform_"), a);
  return uniform_(w, -bound, bound, gen);
}

// nn.Linear.reset_parameters: weight (out, in) first, then bias (out) with bound 1/sqrt(in).
void linear_init_(const Tensor& weight, const Tensor& bias, Generator* gen) {
  if (weight.dim() != 2) {
    throw Error("linear_init_: weight must be 2-d (out_features, in_features), got shape " +
                shape_str(weight.sizes()));
  }
  if (bias.defined() && bias.sizes() != Shape{weight.size(0)}) {
    throw Error("linear_init_: bias has shape " + shape_str(bias.sizes()) + ", expected (" +
                std::to_string(weight.size(0)) + ") for weight " + shape_str(weight.sizes()));
  }
  kaiming_uniform_(weight, std::sqrt(5.0), gen);
  if (!bias.defined()) return;
  const double bound = rng::linear_bias_bound(fan_in(weight, "linear_init_"));
  uniform_(bias, -bound, bound, gen);
}

// nn.Embedding.reset_parameters: weight (N, d) ~ N(0, 1), then the padding row zeroed.
void embedding_init_(const Tensor& weight, std::optional<int64_t> padding_idx, Generator* gen) {
  if (weight.dim() != 2) {
    throw Error("embedding_init_: weight must be 2-d (num_embeddings, embedding_dim), got shape " +
                shape_str(weight.sizes()));
  }
  const int64_t num = weight.size(0);
  if (padding_idx && (*padding_idx < -num || *padding_idx >= num)) {
    throw Error("embedding_init_: padding_idx (" + std::to_string(*padding_idx) +
                ") must be within [-" + std::to_string(num) + ", " + std::to_string(num) + ")");
  }
  normal_(weight, 0.0, 1.0, gen);
  if (!padding_idx) return;
  const int64_t row = *padding_idx < 0 ? *padding_idx + num : *padding_idx;
  NoGradGuard no_grad;
  weight.select(0, row).fill_(0.0);
}

}  // namespace tg::nn::init
