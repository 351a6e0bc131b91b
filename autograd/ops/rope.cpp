// autograd/ops/rope.cpp — rotary position embeddings (RoPE), in Hugging Face's rotate-half
// convention (Llama, Qwen): each head's features are two halves, x1 = x[:hs/2] and
// x2 = x[hs/2:], and feature i of the first half turns with feature i of the second.
//
// x is (..., T, hs), cos and sin are (T, hs): row t holds position t's angles, the same angle in
// both halves (models/llama.h's RotaryEmbedding makes them).
//   forward   y = x * cos + rotate_half(x) * sin,    rotate_half(x) = cat(-x2, x1)
//             y1 = x1 c1 - x2 s1                     y2 = x2 c2 + x1 s2
//   backward  dx = g * cos + rotate_half^T(g * sin), rotate_half^T(u) = cat(u2, -u1)
//             dx1 = g1 c1 + g2 s2                    dx2 = g2 c2 - g1 s1
// A rotation by the angle: the backward turns the gradient back (with c1 = c2, s1 = s2).
// cos and sin are constants (tables of the positions): they get no gradient, and one that
// requires grad is refused rather than silently left without one.
// Saved for backward: cos and sin.
// With the fast kernels on, float32 x is read through its strides (kernels/row_kernels.h:
// rope_forward), so a head's queries or keys, a transposed view of the projection's output, are
// turned without a copy first; the same formula per element, so the same bits.
#include <optional>
#include <string>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/row_kernels.h"
#include "autograd/loops.h"
#include "autograd/ops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/record.h"
#include "autograd/tape.h"

namespace tg {
namespace nn_loops {

// out (R,T,hs) from inp (R,T,hs), cos and sin (T,hs). All contiguous; hs even.
// The order of the products and the sum is Hugging Face's: (x * cos) + (rotate_half(x) * sin).
template <class T>
void rope_forward_reference(T* out, const T* inp, const T* cos, const T* sin, int64_t R, int64_t Tn, int64_t hs) {
  const int64_t half = hs / 2;
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t t = 0; t < Tn; ++t) {
      const T* x = inp + (r * Tn + t) * hs;  // x (hs)
      T* y = out + (r * Tn + t) * hs;        // y (hs)
      const T* c = cos + t * hs;             // c (hs)
      const T* s = sin + t * hs;             // s (hs)
      for (int64_t i = 0; i < half; ++i) {
        const T x1 = x[i], x2 = x[i + half];
        const T first = x1 * c[i], first_turned = -x2 * s[i];
        const T second = x2 * c[i + half], second_turned = x1 * s[i + half];
        y[i] = first + first_turned;
        y[i + half] = second + second_turned;
      }
    }
  }
}

// dinp (R,T,hs) from dout (R,T,hs), cos and sin (T,hs). All contiguous; hs even.
template <class T>
void rope_backward_reference(T* dinp, const T* dout, const T* cos, const T* sin, int64_t R, int64_t Tn, int64_t hs) {
  const int64_t half = hs / 2;
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t t = 0; t < Tn; ++t) {
      const T* g = dout + (r * Tn + t) * hs;  // g (hs)
      T* dx = dinp + (r * Tn + t) * hs;       // dx (hs)
      const T* c = cos + t * hs;
      const T* s = sin + t * hs;
      for (int64_t i = 0; i < half; ++i) {
        const T g1 = g[i], g2 = g[i + half];
        const T from_first = g1 * c[i], from_second = g2 * s[i + half];
        const T back_second = g2 * c[i + half], back_first = -g1 * s[i];
        dx[i] = from_first + from_second;
        dx[i + half] = back_second + back_first;
      }
    }
  }
}

template void rope_forward_reference<float>(float*, const float*, const float*, const float*, int64_t, int64_t,
                                            int64_t);
template void rope_forward_reference<double>(double*, const double*, const double*, const double*, int64_t, int64_t,
                                             int64_t);
template void rope_backward_reference<float>(float*, const float*, const float*, const float*, int64_t, int64_t,
                                             int64_t);
template void rope_backward_reference<double>(double*, const double*, const double*, const double*, int64_t,
                                              int64_t, int64_t);

}  // namespace nn_loops

namespace {

void check_rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const char* op = "apply_rotary_pos_emb";
  check_defined(x, op, "input");
  check_defined(cos, op, "cos");
  check_defined(sin, op, "sin");
  check_floating(x, op);
  if (x.dim() < 2) throw Error("apply_rotary_pos_emb: expected input of shape (..., T, head_dim), got " + shape_str(x.sizes()));
  const int64_t T = x.size(-2), hs = x.size(-1);
  if (hs % 2 != 0) {
    throw Error("apply_rotary_pos_emb: head_dim must be even (its two halves turn together), got input of shape " +
                shape_str(x.sizes()));
  }
  for (const auto& [name, table] : {std::pair{"cos", &cos}, std::pair{"sin", &sin}}) {
    if (table->sizes() != Shape{T, hs}) {
      throw Error(std::string("apply_rotary_pos_emb: ") + name + " must be (T, head_dim) = " + shape_str({T, hs}) +
                  " for input of shape " + shape_str(x.sizes()) + ", got " + shape_str(table->sizes()));
    }
    if (table->dtype() != x.dtype()) {
      throw Error(std::string("apply_rotary_pos_emb: expected ") + name + " to have the input's dtype " +
                  dtype_name(x.dtype()) + ", got " + dtype_name(table->dtype()));
    }
    if (table->requires_grad() && grad_mode_enabled()) {
      throw Error(std::string("apply_rotary_pos_emb: ") + name +
                  " requires grad, but the angles are constants and get no gradient; pass it detached");
    }
  }
}

// t as (B, H, T, hs) for the row kernels: at most 4 dims (fewer get leading dims of size 1), the
// last one contiguous; else nullopt.
std::optional<row_kernels::RopeShape> rope_shape(const Tensor& t) {
  if (t.dim() > 4 || t.stride(-1) != 1) return std::nullopt;
  int64_t size[4] = {1, 1, 1, 1}, stride[4] = {0, 0, 0, 1};
  for (int64_t d = 0; d < t.dim(); ++d) {
    size[4 - t.dim() + d] = t.size(d);
    stride[4 - t.dim() + d] = t.stride(d);
  }
  return row_kernels::RopeShape{size[0], size[1], size[2], size[3], stride[0], stride[1], stride[2]};
}

}  // namespace

Tensor apply_rotary_pos_emb(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  check_rope(x, cos, sin);
  const int64_t T = x.size(-2), hs = x.size(-1);
  const int64_t R = T * hs == 0 ? 0 : x.numel() / (T * hs);
  const Tensor cc = cos.contiguous(), sc = sin.contiguous();
  Tensor y = make_empty(x.sizes(), x.dtype());
  const bool fast = fast_kernels() && x.dtype() == kFloat32;
  if (const std::optional<row_kernels::RopeShape> shape = fast ? rope_shape(x) : std::nullopt) {
    row_kernels::rope_forward(y.data_ptr<float>(), x.data_ptr<float>(), cc.data_ptr<float>(), sc.data_ptr<float>(), *shape);
  } else {
    const Tensor xc = x.contiguous();
    visit_floating(x.dtype(), "apply_rotary_pos_emb", [&](auto tag) {
      using F = typename decltype(tag)::type;
      nn_loops::rope_forward_reference<F>(y.data_ptr<F>(), xc.data_ptr<F>(), cc.data_ptr<F>(), sc.data_ptr<F>(), R, T, hs);
    });
  }
  record("RotaryEmbeddingBackward0", {x}, y, {cc, sc}, [R, T, hs](const BackwardArgs& ctx) {
    const Tensor& g = ctx.grad_out;
    Tensor dx = make_empty(g.sizes(), g.dtype());
    const bool fast_backward = fast_kernels() && g.dtype() == kFloat32;
    if (const std::optional<row_kernels::RopeShape> shape = fast_backward ? rope_shape(g) : std::nullopt) {
      row_kernels::rope_backward(dx.data_ptr<float>(), g.data_ptr<float>(), ctx.saved[0].data_ptr<float>(),
                                 ctx.saved[1].data_ptr<float>(), *shape);
      return Grads{dx};
    }
    const Tensor gc = g.contiguous();
    visit_floating(g.dtype(), "apply_rotary_pos_emb_backward", [&](auto tag) {
      using F = typename decltype(tag)::type;
      nn_loops::rope_backward_reference<F>(dx.data_ptr<F>(), gc.data_ptr<F>(), ctx.saved[0].data_ptr<F>(),
                                           ctx.saved[1].data_ptr<F>(), R, T, hs);
    });
    return Grads{dx};
  });
  return y;
}

}  // namespace tg
