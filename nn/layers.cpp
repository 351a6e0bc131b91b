// nn/layers.cpp — each layer's constructor (its parameters, initialised in PyTorch's order) and
// forward, built from autograd ops only.
#include "nn/layers.h"

#include "autograd/ops.h"
#include "nn/init.h"

namespace tg::nn {

namespace {
void check_positive(int64_t v, const char* layer, const char* what) {
  if (v <= 0) throw Error(std::string(layer) + ": " + what + " must be positive, got " + std::to_string(v));
}
const char* py_bool(bool b) { return b ? "True" : "False"; }
}  // namespace

Linear::Linear(int64_t in, int64_t out, bool has_bias) : Module("Linear"), in_features(in), out_features(out) {
  check_positive(in, "Linear", "in_features");
  check_positive(out, "Linear", "out_features");
  weight = register_parameter("weight", empty({out, in}));
  if (has_bias) bias = register_parameter("bias", empty({out}));
  init::linear_init_(weight, bias);  // W first, then b, as nn.Linear.reset_parameters
}

Linear::Linear(std::string type_name, const Tensor& w, const Tensor& b)
    : Module(std::move(type_name)), in_features(w.size(1)), out_features(w.size(0)) {
  weight = register_parameter("weight", w);
  if (b.defined()) bias = register_parameter("bias", b);
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() == 0 || x.size(-1) != in_features) {
    throw Error("Linear: input of shape " + shape_str(x.sizes()) + " must end in in_features = " +
                std::to_string(in_features));
  }
  if (weight_scale.defined()) return linear_int8(x, weight, weight_scale, bias);  // quantized: nn/quantize.h
  return linear(x, weight, bias);
}

void Linear::use_int8_weight(const Tensor& scales) { weight_scale = register_buffer("weight_scale", scales); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + py_bool(bias.defined());
}

Embedding::Embedding(int64_t n, int64_t d) : Module("Embedding"), num_embeddings(n), embedding_dim(d) {
  check_positive(n, "Embedding", "num_embeddings");
  check_positive(d, "Embedding", "embedding_dim");
  weight = register_parameter("weight", empty({n, d}));
  init::embedding_init_(weight);
}

Tensor Embedding::forward(const Tensor& indices) {
  if (weight_scale.defined()) return embedding_int8(weight, weight_scale, indices);  // quantized: nn/quantize.h
  return embedding(weight, indices);
}

void Embedding::use_int8_weight(const Tensor& scales) { weight_scale = register_buffer("weight_scale", scales); }

std::string Embedding::extra_repr() const {
  return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
}

LayerNorm::LayerNorm(int64_t d, double e) : Module("LayerNorm"), normalized_size(d), eps(e) {
  check_positive(d, "LayerNorm", "normalized_shape");
  weight = register_parameter("weight", ones({d}));
  bias = register_parameter("bias", zeros({d}));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, {normalized_size}, weight, bias, eps); }

std::string LayerNorm::extra_repr() const {
  std::string s = "(";  // built step by step: g++ 12 warns (-Wrestrict) on the one-expression form
  s += std::to_string(normalized_size);
  s += ",), eps=";
  s += python_float(eps);
  s += ", elementwise_affine=True";
  return s;
}

RMSNorm::RMSNorm(int64_t d, std::optional<double> e) : Module("RMSNorm"), normalized_size(d), eps(e) {
  check_positive(d, "RMSNorm", "normalized_shape");
  if (eps && !(*eps >= 0.0)) throw Error("RMSNorm: eps must be at least 0, got " + python_float(*eps));
  weight = register_parameter("weight", ones({d}));
}

Tensor RMSNorm::forward(const Tensor& x) { return rms_norm(x, {normalized_size}, weight, eps); }

std::string RMSNorm::extra_repr() const {
  std::string s = "(";
  s += std::to_string(normalized_size);
  s += ",), eps=";
  s += eps ? python_float(*eps) : std::string("None");
  s += ", elementwise_affine=True";
  return s;
}

Dropout::Dropout(double prob) : Module("Dropout"), p(prob) {
  if (!(p >= 0.0 && p <= 1.0)) throw Error("Dropout: p must be between 0 and 1, got " + python_float(p));
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

std::string Dropout::extra_repr() const { return "p=" + python_float(p) + ", inplace=False"; }

GELU::GELU(std::string a) : Module("GELU"), approximate(std::move(a)) {
  if (approximate != "none" && approximate != "tanh") {
    throw Error("GELU: approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  }
}

Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate); }

std::string GELU::extra_repr() const { return "approximate='" + approximate + "'"; }

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Tensor SiLU::forward(const Tensor& x) { return silu(x); }

Softmax::Softmax(int64_t d) : Module("Softmax"), dim(d) {}

Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim); }

std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim); }

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) { append_numbered(std::move(module)); }

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : children()) y = m->forward(y);
  return y;
}

std::shared_ptr<Module> Sequential::operator[](size_t i) const { return numbered(i); }

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) { append_numbered(std::move(module)); }

std::shared_ptr<Module> ModuleList::operator[](size_t i) const { return numbered(i); }

}  // namespace tg::nn
