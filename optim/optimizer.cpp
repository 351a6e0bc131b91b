// optim/optimizer.cpp — parameter groups, their checks, zero_grad and the state dictionary.
#include "optim/optimizer.h"

#include <map>
#include <set>

#include "autograd/internal.h"
#include "autograd/ops.h"
#include "autograd/record.h"

namespace tg::optim {

std::vector<ParamGroup> weight_decay_groups(const NamedTensors& params, double weight_decay) {
  ParamGroup decay{{}, std::nullopt, weight_decay}, no_decay{{}, std::nullopt, 0.0};
  for (const auto& named : params) (named.second.dim() >= 2 ? decay : no_decay).params.push_back(named);
  return {decay, no_decay};
}

std::vector<ParamGroup> single_group(const std::vector<Tensor>& params) {
  ParamGroup group;
  for (const Tensor& p : params) group.params.push_back({"", p});
  return {group};
}

std::vector<ParamGroup> single_group(const NamedTensors& params) { return {ParamGroup{params, {}, {}}}; }

namespace {

// The shape and dtype a state tensor must have: "step" is a float32 scalar (as torch 1.13
// keeps it), every other state is shaped like its parameter.
void expected_state(const Tensor& param, const std::string& state, Shape& shape, ScalarType& dtype) {
  shape = state == "step" ? Shape{} : param.sizes();
  dtype = state == "step" ? kFloat32 : param.dtype();
}

}  // namespace

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, std::optional<double> default_lr,
                     double default_weight_decay, std::vector<std::string> state_names)
    : name_(std::move(name)), state_names_(std::move(state_names)) {
  check_non_negative("weight_decay value", default_weight_decay);
  if (default_lr) check_non_negative("learning rate", *default_lr);
  std::set<const void*> seen;  // the same tensor twice is refused, as in PyTorch
  std::set<std::string> names;
  for (size_t g = 0; g < groups.size(); ++g) {
    ParamGroup& in = groups[g];
    const std::string where = name_ + ": parameter group " + std::to_string(g);
    if (!in.lr && !default_lr) {
      throw Error(where + " didn't specify a value of required optimization parameter lr");
    }
    const double lr = in.lr.value_or(default_lr.value_or(0.0));
    const double weight_decay = in.weight_decay.value_or(default_weight_decay);
    check_non_negative("learning rate", lr);
    check_non_negative("weight_decay value", weight_decay);
    group_slots_.emplace_back();
    NamedTensors named;
    for (const auto& [param_name, param] : in.params) {
      const std::string pname = param_name.empty() ? std::to_string(slots_.size()) : param_name;
      if (!param.defined()) throw Error(where + ": parameter '" + pname + "' is an undefined tensor");
      if (!param.is_floating_point()) {
        throw Error(where + ": parameter '" + pname + "' must be floating point, got " + dtype_name(param.dtype()));
      }
      if (!param.requires_grad()) throw Error(where + ": parameter '" + pname + "' does not require grad");
      if (!param.is_leaf()) throw Error(where + ": can't optimize a non-leaf Tensor ('" + pname + "')");
      if (!param.is_contiguous()) throw Error(where + ": parameter '" + pname + "' is not contiguous");
      const void* identity = param.numel() > 0 ? param.raw_data() : impl_ptr_of(param).get();  // its memory
      if (!seen.insert(identity).second) {
        throw Error(where + ": parameter '" + pname + "' appears more than once (some parameters appear in more "
                    "than one parameter group, or twice in one)");
      }
      if (!names.insert(pname).second) throw Error(where + ": two parameters are named '" + pname + "'");
      group_slots_.back().push_back(slots_.size());
      slots_.push_back({pname, param, std::vector<Tensor>(state_names_.size())});
      named.push_back({pname, param});
    }
    groups_.push_back({std::move(named), lr, weight_decay});
  }
  if (slots_.empty()) throw Error(name_ + ": optimizer got an empty parameter list");
}

void Optimizer::check_non_negative(const char* what, double value) const {
  if (!(value >= 0.0)) throw Error(name_ + ": Invalid " + what + ": " + nn::python_float(value));
}

Tensor& Optimizer::state_of(Slot& slot, size_t k, bool& fresh) {
  fresh = !slot.state[k].defined();
  if (fresh) {
    Shape shape;
    ScalarType dtype;
    expected_state(slot.param, state_names_[k], shape, dtype);
    slot.state[k] = empty(shape, dtype);
  }
  return slot.state[k];
}

void Optimizer::mark_written(const Tensor& t) { tg::mark_written(t); }

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Slot& slot : slots_) {
    Tensor grad = slot.param.grad();
    if (!grad.defined()) continue;
    if (set_to_none) {
      slot.param.zero_grad();
    } else {
      grad.zero_();
    }
  }
}

Tensor Optimizer::grad_of(const Slot& slot) const {
  Tensor grad = slot.param.grad();
  if (!grad.defined()) return grad;
  if (grad.sizes() != slot.param.sizes() || grad.dtype() != slot.param.dtype()) {
    throw Error(name_ + ": the gradient of '" + slot.name + "' is " + dtype_name(grad.dtype()) + " " +
                shape_str(grad.sizes()) + ", expected the parameter's " + dtype_name(slot.param.dtype()) + " " +
                shape_str(slot.param.sizes()));
  }
  return grad.contiguous();
}

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  for (const Slot& slot : slots_)
    for (size_t k = 0; k < state_names_.size(); ++k)
      if (slot.state[k].defined()) out.push_back({slot.name + "." + state_names_[k], slot.state[k]});
  return out;
}

void Optimizer::load_state(const NamedTensors& dict) {
  std::map<std::string, std::pair<size_t, size_t>> where;  // "<param>.<state>" -> (slot, state index)
  for (size_t s = 0; s < slots_.size(); ++s)
    for (size_t k = 0; k < state_names_.size(); ++k) where[slots_[s].name + "." + state_names_[k]] = {s, k};
  std::vector<std::string> problems;
  std::vector<std::vector<Tensor>> loaded(slots_.size(), std::vector<Tensor>(state_names_.size()));
  std::vector<std::vector<bool>> named(slots_.size(), std::vector<bool>(state_names_.size()));  // key given
  for (const auto& [key, value] : dict) {
    auto it = where.find(key);
    if (it == where.end()) {
      problems.push_back("unexpected key '" + key + "'");
      continue;
    }
    const auto [s, k] = it->second;
    if (named[s][k]) {
      problems.push_back("key '" + key + "' appears twice");
      continue;
    }
    named[s][k] = true;
    Shape shape;
    ScalarType dtype;
    expected_state(slots_[s].param, state_names_[k], shape, dtype);
    if (!value.defined()) {
      problems.push_back("'" + key + "' is an undefined tensor");
    } else if (value.sizes() != shape || value.dtype() != dtype) {
      problems.push_back("'" + key + "' is " + dtype_name(value.dtype()) + " " + shape_str(value.sizes()) +
                         ", expected " + dtype_name(dtype) + " " + shape_str(shape));
    } else {
      loaded[s][k] = value;
    }
  }
  for (size_t s = 0; s < slots_.size(); ++s) {
    size_t present = 0;
    for (bool given : named[s]) present += given;
    if (present == 0 || present == state_names_.size()) continue;
    for (size_t k = 0; k < state_names_.size(); ++k)
      if (!named[s][k]) problems.push_back("missing key '" + slots_[s].name + "." + state_names_[k] + "'");
  }
  if (!problems.empty()) {
    std::string message = name_ + ": load_state: " + std::to_string(problems.size()) + " problem" +
                          (problems.size() == 1 ? "" : "s") + ": ";
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw Error(message);
  }
  NoGradGuard no_grad;
  for (size_t s = 0; s < slots_.size(); ++s)
    for (size_t k = 0; k < state_names_.size(); ++k)
      slots_[s].state[k] = loaded[s][k].defined() ? loaded[s][k].detach().clone() : Tensor();
}

}  // namespace tg::optim
