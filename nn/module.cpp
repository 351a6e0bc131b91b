// nn/module.cpp — registration, the recursive walks behind parameters()/state_dict(), loading,
// and PyTorch's module printing.
#include "nn/module.h"

#include <cmath>
#include <functional>
#include <ostream>
#include <set>
#include <sstream>

#include "autograd/internal.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/record.h"

namespace tg::nn {

Tensor Parameter(const Tensor& t) {
  Tensor p = t.detach();
  p.requires_grad_(true);
  return p;
}

Tensor Module::forward(const Tensor&) {
  throw Error(type_name_ + ": this module has no forward(x) taking one tensor");
}

void Module::check_new_name(const std::string& name, const char* what) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw Error(type_name_ + ": " + what + " name \"" + name + "\" must be non-empty and contain no \".\"");
  }
  bool taken = false;
  for (const auto& [n, t] : params_) taken = taken || n == name;
  for (const Buffer& b : buffers_) taken = taken || b.name == name;
  for (const auto& [n, m] : children_) taken = taken || n == name;
  if (taken) throw Error(type_name_ + ": attribute \"" + name + "\" already exists");
}

Tensor Module::register_parameter(const std::string& name, const Tensor& value) {
  check_new_name(name, "parameter");
  if (!value.defined()) throw Error(type_name_ + ": parameter \"" + name + "\" is an undefined tensor");
  if (!value.is_floating_point() && value.dtype() != kFloat16) {
    throw Error(type_name_ + ": parameter \"" + name + "\" must be floating point, got " + dtype_name(value.dtype()));
  }
  // a float16 one is a checkpoint's frozen weight (make_frozen_16bit): registered as it is, never trained
  Tensor p = value.dtype() == kFloat16 ? value : value.requires_grad() && value.is_leaf() ? value : Parameter(value);
  params_.push_back({name, p});
  return p;
}

void Module::set_parameter(const std::string& name, const Tensor& value) {
  for (auto& [n, p] : params_) {
    if (n != name) continue;
    if (!value.defined() || value.sizes() != p.sizes() || value.dtype() != p.dtype()) {
      throw Error(type_name_ + ": set_parameter \"" + name + "\": expected a " + dtype_name(p.dtype()) + " tensor of shape " +
                  shape_str(p.sizes()) + ", got " +
                  (value.defined() ? std::string(dtype_name(value.dtype())) + " " + shape_str(value.sizes())
                                   : std::string("an undefined tensor")));
    }
    p = value.requires_grad() && value.is_leaf() ? value : Parameter(value);
    return;
  }
  throw Error(type_name_ + ": set_parameter: no parameter \"" + name + "\"");
}

Tensor Module::register_buffer(const std::string& name, const Tensor& value, bool persistent) {
  check_new_name(name, "buffer");
  buffers_.push_back({name, value.detach(), persistent, {}});
  return buffers_.back().value;
}

void Module::register_lazy_buffer(const std::string& name, std::function<Tensor()> make, bool persistent) {
  check_new_name(name, "buffer");
  buffers_.push_back({name, Tensor(), persistent, std::move(make)});
}

const Tensor& Module::value_of(const Buffer& b) {
  if (!b.value.defined() && b.make) b.value = b.make().detach();
  return b.value;
}

Tensor Module::buffer(const std::string& name) const {
  for (const Buffer& b : buffers_)
    if (b.name == name) return value_of(b);
  throw Error(type_name_ + ": no buffer \"" + name + "\"");
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "submodule");
  if (!module) throw Error(type_name_ + ": submodule \"" + name + "\" is null");
  children_.push_back({name, std::move(module)});
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> module) {
  if (!module) throw Error(type_name_ + ": replace_module \"" + name + "\": the new module is null");
  for (auto& [n, m] : children_) {
    if (n != name) continue;
    m = std::move(module);
    return;
  }
  throw Error(type_name_ + ": replace_module: no submodule \"" + name + "\"");
}

void Module::collect(const std::string& prefix, bool params, bool buffers, bool persistent_only,
                     NamedTensors& out) const {
  if (params)
    for (const auto& [n, t] : params_) out.push_back({prefix + n, t});
  if (buffers)
    for (const Buffer& b : buffers_)
      if (b.persistent || !persistent_only) out.push_back({prefix + b.name, value_of(b)});
  for (const auto& [n, m] : children_) m->collect(prefix + n + ".", params, buffers, persistent_only, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors all, unique;
  collect("", true, false, false, all);
  std::set<const void*> seen;  // a parameter shared by two submodules is listed once
  for (auto& [n, t] : all)
    if (seen.insert(t.raw_data()).second || t.numel() == 0) unique.push_back({n, t});
  return unique;
}

NamedTensors trainable_parameters(const Module& module) {
  NamedTensors out;
  for (const auto& [n, t] : module.named_parameters())
    if (t.requires_grad()) out.push_back({n, t});
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, true, false, out);
  return out;
}

std::shared_ptr<Module> Module::numbered(size_t i) const {
  if (i >= children_.size()) {
    throw Error(type_name_ + ": index " + std::to_string(i) + " is out of range for " + std::to_string(children_.size()) +
                " modules");
  }
  return children_[i].second;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, m] : children_) out.push_back(m);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [n, m] : children_) m->train(on);
}

void Module::zero_grad() {
  for (const Tensor& p : parameters()) p.zero_grad();
}

namespace {

// t's values converted to dtype in a fresh storage, with t keeping its identity (as PyTorch's
// param.data = param.data.to(dtype)). The old storage's version is bumped, so a tape entry that
// saved t refuses to backpropagate with values that are no longer the module's.
void convert_in_place(const Tensor& t, ScalarType dtype) {
  if (!t.defined() || t.dtype() == dtype) return;
  const Tensor converted = t.detach().to(dtype).contiguous();
  TensorImpl& impl = impl_of(t);
  mark_written(t);  // the old storage: entries that saved t refuse it
  impl.storage = impl_of(converted).storage;
  impl.dtype = dtype;
  impl.strides = converted.strides();
  impl.offset = converted.storage_offset();
  if (impl.grad) convert_in_place(tensor_of(impl.grad), dtype);
}

}  // namespace

void make_frozen_16bit(const Tensor& t, ScalarType dtype) {
  if (dtype != kBFloat16 && dtype != kFloat16)
    throw Error(std::string("make_frozen_16bit: expected bfloat16 or float16, got ") + dtype_name(dtype));
  if (!t.defined() || t.dtype() == dtype) return;
  const Tensor fresh = make_empty(t.sizes(), dtype);  // contiguous, unset: the loader reads it
  TensorImpl& impl = impl_of(t);
  mark_written(t);  // the old storage: entries that saved t refuse it
  impl.storage = impl_of(fresh).storage;
  impl.dtype = dtype;
  impl.strides = fresh.strides();
  impl.offset = 0;
  impl.grad = nullptr;
  impl.requires_grad = false;
}

void make_frozen_int8(const Tensor& t, const Tensor& values) {
  if (!t.defined() || values.dtype() != kInt8 || values.sizes() != t.sizes() || !values.is_contiguous())
    throw Error("make_frozen_int8: expected contiguous int8 values of the weight's shape");
  TensorImpl& impl = impl_of(t);
  mark_written(t);  // the old storage: entries that saved t refuse it
  impl.storage = impl_of(values).storage;
  impl.dtype = kInt8;
  impl.strides = values.strides();
  impl.offset = values.storage_offset();
  impl.grad = nullptr;
  impl.requires_grad = false;
}

Module& Module::to(ScalarType dtype) {
  if (!is_floating(dtype) || dtype == kBFloat16) {
    throw Error(type_name_ + ".to: only floating point dtypes (float32, float64), got " + dtype_name(dtype) +
                (dtype == kBFloat16 ? " (bfloat16 is for storing tensors; keep a module's parameters in float32)" : ""));
  }
  NoGradGuard no_grad;
  for (auto& [n, t] : params_) convert_in_place(t, dtype);
  for (Buffer& b : buffers_) {
    if (!b.value.defined() && b.make) {  // a lazy buffer not made yet: made in dtype when it is
      b.make = [make = std::move(b.make), dtype] {
        const Tensor t = make();
        return t.is_floating_point() ? t.to(dtype) : t;
      };
    } else if (b.value.is_floating_point()) {
      convert_in_place(b.value, dtype);
    }
  }
  for (auto& [n, m] : children_) m->to(dtype);
  return *this;
}

NamedTensors Module::state_dict() const {
  // each module's parameters, then its persistent buffers, then its submodules (PyTorch's order)
  NamedTensors out;
  std::function<void(const std::string&, const Module&)> walk = [&](const std::string& prefix, const Module& m) {
    for (const auto& [n, t] : m.params_) out.push_back({prefix + n, t});
    for (const Buffer& b : m.buffers_)
      if (b.persistent) out.push_back({prefix + b.name, value_of(b)});
    for (const auto& [n, c] : m.children_) walk(prefix + n + ".", *c);
  };
  walk("", *this);
  return out;
}

void Module::load_state_dict(const NamedTensors& dict, bool strict, const std::string& source) {
  const NamedTensors own = state_dict();
  std::vector<std::string> problems;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source), made only if all is well
  std::set<std::string> given;
  for (const auto& [n, t] : dict) {
    if (!given.insert(n).second) problems.push_back("key '" + n + "' given twice");
  }
  for (const auto& [name, dst] : own) {
    const Tensor* src = nullptr;
    for (const auto& [n, t] : dict)
      if (n == name) src = &t;
    if (!src) {
      if (strict) problems.push_back("missing key '" + name + "'");
      continue;
    }
    if (!src->defined()) {
      problems.push_back("'" + name + "' is an undefined tensor");
    } else if (src->sizes() != dst.sizes()) {
      problems.push_back("'" + name + "' has shape " + shape_str(src->sizes()) + ", expected " + shape_str(dst.sizes()));
    } else if (src->dtype() != dst.dtype()) {
      problems.push_back("'" + name + "' has dtype " + dtype_name(src->dtype()) + ", expected " + dtype_name(dst.dtype()) +
                         (is_16bit(src->dtype())
                              ? std::string(" (convert the ") + dtype_name(src->dtype()) +
                                    " tensors first: t = t.to(tg::kFloat32))"
                              : std::string()));
    } else {
      copies.push_back({dst, *src});
    }
  }
  // tied parameters: one tensor under two names, so the values given for the two must agree
  for (size_t i = 0; i < copies.size(); ++i) {
    for (size_t j = i + 1; j < copies.size(); ++j) {
      if (copies[i].first.raw_data() != copies[j].first.raw_data()) continue;
      if (!allclose(copies[i].second, copies[j].second, 0.0, 0.0, /*equal_nan=*/true)) {
        std::string a, b;
        for (const auto& [n, t] : own) {
          if (t.raw_data() == copies[i].first.raw_data()) (a.empty() ? a : b) = n;
        }
        problems.push_back("'" + a + "' and '" + b + "' are one tied tensor, but the values given for them differ");
      }
    }
  }
  if (strict) {
    for (const auto& [n, t] : dict) {
      bool known = false;
      for (const auto& [name, dst] : own) known = known || name == n;
      if (!known) problems.push_back("unexpected key '" + n + "'");
    }
  }
  if (!problems.empty()) {
    std::string message = "load_state_dict: " + std::to_string(problems.size()) +
                          (problems.size() == 1 ? " problem" : " problems") + " loading " +
                          (source.empty() ? "" : source + " ") + "into " + type_name_ + ": ";
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw Error(message + " (nothing was changed)");
  }
  NoGradGuard no_grad;
  for (auto& [dst, src] : copies) {
    Tensor d = dst;
    d.copy_(src);
  }
}

// --- printing ---------------------------------------------------------------------------------------

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";  // Python writes every NaN as nan, whatever its sign bit
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return json::number(v);  // the text JSON files get: 1e-05, 0.25, 1.0
}

std::string Module::repr() const {
  // Name(extra) for a leaf; otherwise Name(\n  extra\n  (child): child repr\n), nested lines indented
  std::string extra = extra_repr();
  if (children_.empty()) return type_name_ + "(" + extra + ")";
  std::ostringstream os;
  os << type_name_ << "(\n";
  if (!extra.empty()) os << "  " << extra << "\n";
  for (const auto& [n, m] : children_) {
    std::string child = m->repr();
    std::string indented;
    for (char c : child) {
      indented += c;
      if (c == '\n') indented += "  ";
    }
    os << "  (" << n << "): " << indented << "\n";
  }
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace tg::nn
