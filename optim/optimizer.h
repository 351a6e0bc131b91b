// optim/optimizer.h — tg::optim::Optimizer: what every optimizer shares, as torch.optim.Optimizer.
//
// An optimizer holds parameter groups. Each group is a list of named parameters with its own
// learning rate and weight decay (unset: the optimizer's own); the other settings (betas,
// momentum, ...) belong to the optimizer. A parameter's name is its Module name ("fc1.weight")
// when the optimizer is built from named_parameters(), else its position ("0", "1", ... counted
// over all groups, as torch numbers them in its state_dict).
//
// Per-parameter state (exp_avg, momentum_buffer, step, ...) is created on the first step() that
// sees the parameter with a gradient, as in PyTorch. state_dict() names each state tensor
// "<param name>.<state name>"; load_state() checks everything before it changes anything.
//
// zero_grad() follows torch 1.13, whose default is set_to_none = false: existing gradients are
// zeroed in place (Module::zero_grad drops them instead, as set_to_none = true).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/tensor.h"
#include "nn/module.h"

namespace tg::optim {

using nn::NamedTensors;

// What a caller passes: some parameters and, optionally, their own lr and weight decay.
struct ParamGroup {
  NamedTensors params;
  std::optional<double> lr;
  std::optional<double> weight_decay;
};

// The usual split for transformers: weight decay on tensors of 2 or more dims (matrices,
// embeddings), none on the rest (biases, LayerNorm scales and shifts). Returns two groups,
// {decay (weight_decay), no decay (0)}, each keeping the order of params.
std::vector<ParamGroup> weight_decay_groups(const NamedTensors& params, double weight_decay);

// One group of unnamed parameters (named "0", "1", ... by the optimizer), or of named ones.
std::vector<ParamGroup> single_group(const std::vector<Tensor>& params);
std::vector<ParamGroup> single_group(const NamedTensors& params);

class Optimizer {
 public:
  // A group as the optimizer keeps it: lr and weight decay always set. A scheduler (or you)
  // may change lr and weight_decay between steps; the parameter list is for reading.
  struct Group {
    NamedTensors params;
    double lr;
    double weight_decay;
  };

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient, under no-grad.
  virtual void step() = 0;
  // Zero every parameter's gradient in place (torch 1.13's default), or drop it.
  void zero_grad(bool set_to_none = false);

  std::vector<Group>& param_groups() { return groups_; }
  const std::vector<Group>& param_groups() const { return groups_; }
  const std::string& name() const { return name_; }

  // Every state tensor, named "<param name>.<state name>", in parameter order. The tensors are
  // the optimizer's own (not copies): save them, do not write them.
  NamedTensors state_dict() const;
  // Copies saved state in. Names, shapes and dtypes are checked first, all problems reported in
  // one error; nothing changes unless everything matches. A parameter with no entries is left
  // without state (fresh); one with entries must have all its optimizer's state names.
  void load_state(const NamedTensors& dict);

 protected:
  // state_names: the per-parameter state this optimizer keeps, in state_dict order ("step",
  // "exp_avg", ...). name: "SGD", "Adam", ... for messages.
  Optimizer(std::string name, std::vector<ParamGroup> groups, std::optional<double> default_lr,
            double default_weight_decay, std::vector<std::string> state_names);

  // A parameter and its state, by position over all groups (the order of state_dict).
  struct Slot {
    std::string name;
    Tensor param;
    std::vector<Tensor> state;  // one per state_names_; all undefined until the first step
  };
  // Calls fn(group, slot, grad) for every parameter with a gradient, after checking the
  // gradient against the parameter; under NoGradGuard.
  template <class Fn>
  void for_each_with_grad(Fn fn);
  Tensor grad_of(const Slot& slot) const;  // checked, contiguous; undefined when there is none
  // fn(float{}) or fn(double{}) for the slot's parameter's dtype; an Error for any other.
  template <class Fn>
  void with_floating_type(const Slot& slot, Fn fn) const;
  // "Adam: Invalid epsilon value: -1.0" unless 0 <= value (NaN fails too), as PyTorch words it.
  void check_non_negative(const char* what, double value) const;
  // The state tensor k of slot, created (uninitialised, shaped like the parameter) if it is
  // not there yet; fresh tells which.
  Tensor& state_of(Slot& slot, size_t k, bool& fresh);
  // After writing a tensor's values through its pointer: bump its version, as an in-place op
  // does, so a tape entry that saved it notices.
  static void mark_written(const Tensor& t);
  const std::vector<std::string>& state_names() const { return state_names_; }
  std::vector<Slot>& slots() { return slots_; }

 private:
  std::string name_;
  std::vector<Group> groups_;
  std::vector<std::vector<size_t>> group_slots_;  // slot indices of each group
  std::vector<Slot> slots_;
  std::vector<std::string> state_names_;
};

// Calls fn(float{}) for a float32 parameter, fn(double{}) for a float64 one: the update loops
// are templates on the element type. They have no other copy, so any other dtype (bfloat16) is
// an error naming the optimizer, the parameter and the dtype, before its data is read as the
// wrong type.
template <class Fn>
void Optimizer::with_floating_type(const Slot& slot, Fn fn) const {
  const ScalarType dtype = slot.param.dtype();
  if (dtype == kFloat32) {
    fn(float{});
  } else if (dtype == kFloat64) {
    fn(double{});
  } else {
    throw Error(name_ + ": parameter '" + slot.name + "' is " + dtype_name(dtype) + "; " + name_ +
                " updates float32 and float64 parameters only (keep the parameters float32 and run the "
                "products in bfloat16 with tg::AutocastGuard)");
  }
}

// Walks the groups in order, as PyTorch's step loops over param_groups then params.
template <class Fn>
void Optimizer::for_each_with_grad(Fn fn) {
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t s : group_slots_[g]) {
      Tensor grad = grad_of(slots_[s]);
      if (grad.defined()) fn(groups_[g], slots_[s], grad);
    }
  }
}

}  // namespace tg::optim
