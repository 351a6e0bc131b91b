// nn/layers.h — the layers, with PyTorch's constructor arguments, parameter names and
// initialisation, drawn in PyTorch's order (so the same seed gives the same weights):
//
//   Linear(in, out, bias)   weight (out,in), bias (out)   y = x W^T + b       kaiming-uniform W, then b
//   Embedding(n, d)         weight (n,d)                   y = weight[idx]     N(0, 1)
//   LayerNorm(d, eps)       weight (d) = 1, bias (d) = 0   normalise the last dim
//   RMSNorm(d, eps)         weight (d) = 1                 y = x / sqrt(mean(x^2) + eps) * weight (Llama's)
//   Dropout(p)              zero with probability p and scale by 1/(1-p) in training; identity in eval
//   GELU(approximate), ReLU, SiLU, Softmax(dim)           no parameters
//   Sequential(...)         children "0", "1", ... applied in order
//   ModuleList(...)         children "0", "1", ... held, not applied (no forward)
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>

#include "nn/module.h"

namespace tg::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  // A layer over the given weight (out, in) and bias (out, or undefined), registered as they are
  // (the same tensors, nothing drawn), printed as type_name: nn/lora.h's LoRALinear, and a head
  // made on its embedding's tensor (models/llama.h).
  Linear(std::string type_name, const Tensor& weight, const Tensor& bias);
  // Quantized (nn/quantize.h): weight holds int8 values, and weight_scale, registered as a buffer
  // of that name, their scales.
  void use_int8_weight(const Tensor& scales);
  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined without one
  Tensor weight_scale;  // an int8 weight's scales; undefined otherwise
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  void use_int8_weight(const Tensor& scales);  // as Linear's
  int64_t num_embeddings, embedding_dim;
  Tensor weight;
  Tensor weight_scale;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t normalized_size, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t normalized_size;
  double eps;
  Tensor weight, bias;
};

// As torch.nn.RMSNorm (PyTorch 2.4 on): no eps is the machine epsilon of the input's dtype.
class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t normalized_size, std::optional<double> eps = std::nullopt);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t normalized_size;
  std::optional<double> eps;
  Tensor weight;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string approximate;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override;
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};

class Sequential : public Module {
 public:
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules = {});
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return children().size(); }
  std::shared_ptr<Module> operator[](size_t i) const;
};

class ModuleList : public Module {
 public:
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules = {});
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  std::shared_ptr<Module> operator[](size_t i) const;
};

}  // namespace tg::nn
