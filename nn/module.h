// nn/module.h — tg::nn::Module: the base of every layer and model, as torch.nn.Module.
//
// A module owns named parameters (tensors that require grad), named buffers (tensors that are
// state but not trained, such as an attention mask) and named submodules, each in the order it
// was registered. From them it derives PyTorch's dotted names ("heads.0.W_query.weight"),
// parameters(), state_dict() and how it prints. Read the example above class Module first, then
// the layers of nn/layers.h, each built that way.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace tg::nn {

using NamedTensors = tg::NamedTensors;  // autograd/tensor.h

// A fresh leaf with t's values that requires grad, as nn.Parameter(t).
Tensor Parameter(const Tensor& t);

// Makes parameter t a frozen tensor of its shape in dtype (bfloat16 or float16), for a loader about
// to read a 16-bit checkpoint's values into it (models/hf/hf_llama.h): every handle to t
// (Linear::weight, the module's own) sees the new storage, whose values are unset until read, and
// it no longer requires grad. matmul and embedding widen such a weight exactly as they read it.
void make_frozen_16bit(const Tensor& t, ScalarType dtype);
// Makes parameter t the int8 tensor `values` of its shape (a quantized weight's, nn/quantize.h):
// every handle to t sees values' storage, t's own storage is let go, and it no longer requires grad.
void make_frozen_int8(const Tensor& t, const Tensor& values);

// A user's module is a class deriving from Module that registers its parts in its constructor,
// in the order the PyTorch class creates them (so the same seed gives the same weights), and
// defines forward:
//
//   struct TwoLayer : tg::nn::Module {
//     std::shared_ptr<tg::nn::Linear> fc1, fc2;
//     TwoLayer() : Module("TwoLayer") {
//       fc1 = register_module("fc1", std::make_shared<tg::nn::Linear>(4, 8));
//       fc2 = register_module("fc2", std::make_shared<tg::nn::Linear>(8, 2));
//     }
//     tg::Tensor forward(const tg::Tensor& x) override { return fc2->forward(tg::relu(fc1->forward(x))); }
//   };
class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The one-input forward most layers have; a module with another signature defines its own.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // --- what it holds (this module's, then its submodules', recursively, in registration order)
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  // The buffer `name` of this module (not of a submodule); a lazy one is made now (see
  // register_lazy_buffer).
  Tensor buffer(const std::string& name) const;
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  int64_t num_parameters() const;  // elements in all parameters

  // --- mode and gradients -------------------------------------------------------------------
  void train(bool on = true);  // this module and every submodule
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();  // drops every parameter's .grad (as set_to_none=True)

  // --- dtype ----------------------------------------------------------------------------------
  // Converts every parameter, floating buffer and existing .grad to dtype (kFloat32 or
  // kFloat64) in place, as module.to(torch.float64): each tensor keeps its identity, so a
  // layer's own handle (Linear::weight) sees the new values. A graph recorded before the
  // conversion can no longer be backpropagated (its saved parameters count as modified).
  Module& to(ScalarType dtype);

  // --- state: parameters and persistent buffers, as PyTorch's state_dict ----------------------
  NamedTensors state_dict() const;
  // Copies dict into this module's tensors. Every name, shape and dtype is checked first and all
  // problems are reported in one error; nothing changes unless everything matches. With strict =
  // false, missing and unexpected names are allowed (shapes and dtypes still must match). source
  // names where dict came from in the message (the file, for tg::load).
  // Parameters shared by two names (tied, set_parameter) are given under both names, as in
  // PyTorch: the two values must be equal.
  void load_state_dict(const NamedTensors& dict, bool strict = true, const std::string& source = "");

  // Makes this module's parameter `name` the tensor `value` (another module's parameter, to tie
  // the two, as PyTorch's `module.weight = other.weight`). The parameter must exist, and value
  // must have its shape and dtype. A handle a layer keeps (Linear::weight) is the caller's to
  // update.
  void set_parameter(const std::string& name, const Tensor& value);

  // Puts module in the place of the existing submodule `name` (same name, same position), as
  // libtorch's replace_module and PyTorch's `parent.name = module`; returns module. A typed
  // handle the parent keeps (MultiHeadAttention::out_proj) is the caller's to update. nn/lora.h
  // uses it to put a LoRALinear where a Linear was.
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    replace_child(name, module);
    return module;
  }

  // --- printing, as PyTorch prints a module --------------------------------------------------------
  const std::string& type_name() const { return type_name_; }
  virtual std::string extra_repr() const { return ""; }  // "in_features=3, out_features=2, bias=True"
  std::string repr() const;

 protected:
  // Registration returns what it registered, so a constructor can keep a handle to it.
  Tensor register_parameter(const std::string& name, const Tensor& value);
  Tensor register_buffer(const std::string& name, const Tensor& value, bool persistent = true);
  // A buffer made by make() the first time it is read (buffer(), state_dict, named_buffers,
  // load_state_dict), not now: MultiHeadAttention's (context_length, context_length) causal mask
  // takes no memory in a model whose state is never handed over (a GPT-2 of n_positions 16384:
  // 1 GiB a block). To it is the same buffer: made now or later, it has the module's dtype.
  void register_lazy_buffer(const std::string& name, std::function<Tensor()> make, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  // For containers (Sequential, ModuleList): children named "0", "1", ... by position.
  void append_numbered(std::shared_ptr<Module> module) { add_child(std::to_string(children_.size()), std::move(module)); }
  std::shared_ptr<Module> numbered(size_t i) const;

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void replace_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect(const std::string& prefix, bool params, bool buffers, bool persistent_only, NamedTensors& out) const;

  std::string type_name_;
  bool training_ = true;
  NamedTensors params_;
  struct Buffer {
    std::string name;
    mutable Tensor value;          // undefined until made, for a lazy buffer
    bool persistent;
    std::function<Tensor()> make;  // a lazy buffer's maker; empty for the others
  };
  static const Tensor& value_of(const Buffer& b);  // made now if it is lazy and not made yet
  std::vector<Buffer> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

// The parameters that require grad, by name, in named_parameters()' order: what an optimizer
// trains when some are frozen (PyTorch: [(n, p) for n, p in m.named_parameters() if p.requires_grad]).
NamedTensors trainable_parameters(const Module& module);

// Python's repr of a float ("1e-05", "0.25", "1.0", "inf", "nan"), for extra_repr and messages:
// json::number's text for finite values.
std::string python_float(double v);

}  // namespace tg::nn
