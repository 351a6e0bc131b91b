// autograd/ops/dropout.cpp — dropout, with PyTorch 1.13's CPU random stream bit for bit.
//
//   forward   noise_i = scale with probability 1 - p, else 0       scale = 1 / (1 - p)
//             out_i   = x_i * noise_i
//   backward  dx_i    = g_i * noise_i
//
// What PyTorch runs on the CPU (§6 in autograd/random/random_kernels.h):
//   * p == 0, eval mode, or an empty x: x itself is returned, and nothing is drawn;
//   * p == 1: x * 0 (a 0-d zero; negative x gives -0.0), nothing drawn;
//   * otherwise noise is a new contiguous tensor filled in memory (= row-major) order with
//     bernoulli_(1 - p): U53 < 1 - p compared in double, two engine draws per element; then
//     noise / (1 - p) in the tensor's dtype, so a kept float32 element holds
//     1.0f / f32(1 - p) (not f32(1 / (1 - p))); then out = x * noise, one multiply per element.
// PyTorch's graph shows the multiply: the node is MulBackward0, and it saves the noise (the
// mask already scaled), which is all backward needs.
#include <sstream>
#include <string>
#include <type_traits>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/random/random_kernels.h"
#include "autograd/record.h"

namespace tg {
namespace nn_loops {

// The value a kept element of noise holds, in T: 1.0f / f32(1 - p) for float32, 1 / (1 - p) for
// float64. Needs 0 <= p < 1.
template <class T> T dropout_keep_scale(double p) {
  if constexpr (std::is_same_v<T, float>) return rng::dropout_scale(p);
  else return 1.0 / (1.0 - p);
}

// --- fused kernels ------------------------------------------------------------------------------

// out (N) = inp (N) * noise (N), with noise (N) drawn from gen: dropout_keep_scale(p) with
// probability 1 - p, else 0. 0 < p < 1; all contiguous; 2 draws per element, in order.
template <class T>
void dropout_forward(T* out, T* noise, const T* inp, Generator& gen, int64_t N, double p) {
  const T scale = dropout_keep_scale<T>(p);
  const double keep = 1.0 - p;
  for (int64_t i = 0; i < N; ++i) {
    noise[i] = rng::bernoulli_one(gen, keep) ? scale : T(0);
    out[i] = inp[i] * noise[i];
  }
}

// dinp (N) = dout (N) * noise (N).
template <class T>
void dropout_backward(T* dinp, const T* dout, const T* noise, int64_t N) {
  for (int64_t i = 0; i < N; ++i) dinp[i] = dout[i] * noise[i];
}

template void dropout_forward<float>(float*, float*, const float*, Generator&, int64_t, double);
template void dropout_forward<double>(double*, double*, const double*, Generator&, int64_t, double);
template void dropout_backward<float>(float*, const float*, const float*, int64_t);
template void dropout_backward<double>(double*, const double*, const double*, int64_t);

}  // namespace nn_loops

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  check_floating(x, "dropout");
  if (!(p >= 0.0 && p <= 1.0)) {
    std::ostringstream os;
    os << "dropout: dropout probability has to be between 0 and 1, but got " << p;
    throw Error(os.str());
  }
  if (p == 0.0 || !training || x.numel() == 0) return x;  // no draws
  if (p == 1.0) return mul(x, zeros({}, x.dtype()));      // no draws; MulBackward0 as in PyTorch
  Generator& g = gen ? *gen : default_generator();
  const Tensor xc = x.is_contiguous() ? x : x.detach().contiguous();
  Tensor out = make_empty(x.sizes(), x.dtype());    // out (N): x's shape, contiguous
  Tensor noise = make_empty(x.sizes(), x.dtype());  // noise (N): x's shape, contiguous
  visit_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    nn_loops::dropout_forward<T>(out.data_ptr<T>(), noise.data_ptr<T>(), xc.data_ptr<T>(), g, x.numel(), p);
  });
  record("MulBackward0", {x}, out, {noise}, [](const BackwardArgs& ctx) {
    const Tensor& nz = ctx.saved[0];
    const Tensor gc = ctx.grad_out.contiguous();
    Tensor dx = make_empty(nz.sizes(), nz.dtype());
    visit_floating(nz.dtype(), "dropout_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      nn_loops::dropout_backward<T>(dx.data_ptr<T>(), gc.data_ptr<T>(), nz.data_ptr<T>(), nz.numel());
    });
    return Grads{dx};
  });
  return out;
}

}  // namespace tg
