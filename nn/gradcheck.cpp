// nn/gradcheck.cpp — a module's gradient check: the module in float64 for the check, its
// parameters as the captured tensors of tg::gradcheck, everything put back afterwards.
#include "nn/gradcheck.h"

#include <string>
#include <utility>

namespace tg::nn {

namespace {

// Converts the module to float64 for its lifetime and back afterwards (also when the check
// throws), keeping the parameters' gradients from before aside meanwhile.
class Float64ForTheCheck {
 public:
  explicit Float64ForTheCheck(Module& module) : module_(module) {
    NamedTensors floating = module.named_parameters();
    for (const auto& [name, b] : module.named_buffers())
      if (b.is_floating_point()) floating.push_back({name, b});
    for (const auto& [name, t] : floating) {
      if (t.dtype() != floating[0].second.dtype()) {
        throw Error("gradcheck: " + module.type_name() + " mixes dtypes ('" + floating[0].first + "' is " +
                    dtype_name(floating[0].second.dtype()) + ", '" + name + "' is " + dtype_name(t.dtype()) +
                    "); convert it with to() first");
      }
    }
    if (!floating.empty()) dtype_ = floating[0].second.dtype();
    for (const Tensor& p : module.parameters()) {
      grads_.push_back(p.grad());
      p.zero_grad();
    }
    module.to(kFloat64);
  }
  ~Float64ForTheCheck() {
    module_.to(dtype_);  // float32 -> float64 -> float32 is exact: the values are as before
    const std::vector<Tensor> params = module_.parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(grads_[i]);
  }
  Float64ForTheCheck(const Float64ForTheCheck&) = delete;
  Float64ForTheCheck& operator=(const Float64ForTheCheck&) = delete;

 private:
  Module& module_;
  ScalarType dtype_ = kFloat32;
  std::vector<Tensor> grads_;  // each parameter's .grad before the check (maybe undefined)
};

}  // namespace

GradcheckResult gradcheck(Module& module, const std::vector<Tensor>& inputs, const GradcheckFn& forward,
                          GradcheckOptions options) {
  GradcheckFn fn = forward;
  if (!fn) {
    if (inputs.size() != 1) {
      throw Error("gradcheck: " + module.type_name() + " is called as forward(inputs[0]), so it needs exactly one " +
                  "input, got " + std::to_string(inputs.size()) + "; pass a forward function for more");
    }
    fn = [&module](const std::vector<Tensor>& in) { return module.forward(in[0]); };
  }
  const Float64ForTheCheck float64(module);
  return tg::gradcheck(fn, inputs, trainable_parameters(module), options);  // frozen ones are constants
}

GradcheckResult gradcheck(Module& module, const std::vector<Tensor>& inputs, GradcheckOptions options) {
  return gradcheck(module, inputs, GradcheckFn{}, options);
}

void assert_gradcheck(Module& module, const std::vector<Tensor>& inputs, const GradcheckFn& forward,
                      GradcheckOptions options) {
  const GradcheckResult result = gradcheck(module, inputs, forward, options);
  if (!result.passed) throw Error(result.report());
}

}  // namespace tg::nn
