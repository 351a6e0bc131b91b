// autograd/ops/feed_forward.cpp — a transformer's feed-forward layer as one op:
// Linear(C, H) -> GELU -> Linear(H, C_out), the GPT's H = 4C.
//
//   x (..., C), w1 (H, C), b1 (H), w2 (C_out, H), b2 (C_out)   (b1, b2 may be undefined)
//   forward   h  = x w1^T + b1                 (..., H)   the pre-activation
//             a  = gelu(h)                     (..., H)
//             y  = a w2^T + b2                 (..., C_out)
//   backward  db2 = sum dy                     over the rows
//             da  = dy w2
//             a   = gelu(h)                    recomputed from h
//             dh  = gelu'(h) * da              (for "tanh" one pass gives a and dh)
//             dw2 = dy^T a                     summed over the rows (...)
//             dw1 = dh^T x
//             db1 = sum dh
//             dx  = dh w1
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/loops.h"
#include "autograd/fast_kernels.h"
#include "autograd/record.h"

namespace tg {
namespace {

constexpr const char* kOp = "feed_forward";

// Every operand defined (the biases may be undefined), floating, of x's dtype, and of shapes
// that fit: x (..., C), w1 (H, C), b1 (H), w2 (C_out, H), b2 (C_out).
void check_feed_forward_inputs(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
                               const Tensor& b2, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh") {
    throw Error(std::string(kOp) + ": approximate must be 'none' or 'tanh', got '" + approximate + "'");
  }
  check_defined(x, kOp, "x");
  check_defined(w1, kOp, "w1");
  check_defined(w2, kOp, "w2");
  check_floating(x, kOp);
  const std::vector<std::pair<const char*, Tensor>> operands{{"w1", w1}, {"b1", b1}, {"w2", w2}, {"b2", b2}};
  for (const auto& [name, t] : operands) {
    if (t.defined() && t.dtype() != x.dtype()) {
      throw Error(std::string(kOp) + ": " + name + " of shape " + shape_str(t.sizes()) + " is " +
                  dtype_name(t.dtype()) + ", but x of shape " + shape_str(x.sizes()) + " is " + dtype_name(x.dtype()));
    }
  }
  auto mismatch = [](const std::string& a, const Tensor& ta, const std::string& b, const Tensor& tb,
                     const std::string& why) {
    return Error(std::string(kOp) + ": " + a + " of shape " + shape_str(ta.sizes()) + " does not fit " + b +
                 " of shape " + shape_str(tb.sizes()) + " (" + why + ")");
  };
  if (w1.dim() != 2) throw Error(std::string(kOp) + ": w1 must be 2-d (H, C), got shape " + shape_str(w1.sizes()));
  if (w2.dim() != 2) throw Error(std::string(kOp) + ": w2 must be 2-d (C_out, H), got shape " + shape_str(w2.sizes()));
  if (x.dim() == 0 || x.size(-1) != w1.size(1)) {
    throw mismatch("x", x, "w1", w1, "x's last dim must be w1's " + std::to_string(w1.size(1)) + " inputs");
  }
  if (w2.size(1) != w1.size(0)) {
    throw mismatch("w2", w2, "w1", w1, "w2's " + std::to_string(w2.size(1)) + " inputs vs w1's " +
                                           std::to_string(w1.size(0)) + " outputs");
  }
  if (b1.defined() && (b1.dim() != 1 || b1.size(0) != w1.size(0))) {
    throw mismatch("b1", b1, "w1", w1, "b1 must be (" + std::to_string(w1.size(0)) + ")");
  }
  if (b2.defined() && (b2.dim() != 1 || b2.size(0) != w2.size(0))) {
    throw mismatch("b2", b2, "w2", w2, "b2 must be (" + std::to_string(w2.size(0)) + ")");
  }
}

// dW of a linear layer out = inp W^T from dout: matmul's db for the operand W^T, summed over
// any batch dims the tape would have summed, and transposed back as W^T's entry does.
Tensor linear_weight_grad(const Tensor& dout, const Tensor& inp) {
  Tensor dwt = matmul_backward_b(dout, inp, 2, /*b_transposed=*/true);  // (H, C_out) or (batch.., H, C_out)
  if (dwt.dim() > 2) dwt = sum_to(dwt, {dwt.size(-2), dwt.size(-1)});
  return dwt.t();
}

// Under autocast the product that reads a = gelu(h) rounds it to bfloat16: a is made rounded
// already (the same values, half the bytes to write and read back).
ScalarType product_input_dtype() { return autocast_dtype() == kBFloat16 ? kBFloat16 : kFloat32; }

Tensor activation_for_product(const Tensor& h, const std::string& approximate) {
  if (approximate == "tanh" && product_input_dtype() == kBFloat16) {
    if (std::optional<Tensor> a = gelu_tanh_rounded_to_bf16(h)) return *a;
  }
  return gelu(h, approximate);
}

// linear(x, w, b) with the tape off. Under autocast, x's rows as one matrix go through
// matmul_into with the bias, which adds it to the product's sums as they are stored: linear's
// bits, without another pass over the (..., H) result.
Tensor linear_part(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (!autocast_applies(x, w) || !b.defined() || x.dim() < 2) return linear(x, w, b);
  const int64_t rows = shape_numel(Shape(x.sizes().begin(), x.sizes().end() - 1));
  Shape shape = x.sizes();
  shape.back() = w.size(0);
  Tensor y = empty(shape);  // float32, as a bfloat16 product's result
  matmul_into(y.view({rows, w.size(0)}), x.reshape({rows, x.size(-1)}), w.t(), b);
  return y;
}

}  // namespace

// Saved for backward: x, h and the weights, not a (under autocast x as its bfloat16 copy, see
// kept_for_product; h stays float32, gelu' reads it). The composition it replaces,
// linear(gelu(linear(x, w1, b1)), w2, b2), keeps both h (for gelu') and a (for dw2): two
// (..., H) buffers per layer until backward. Here a is made again from h, one vectorised gelu
// pass over a buffer that backward then frees at once.
Tensor feed_forward(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                    const std::string& approximate) {
  if (!fast_kernels()) return feed_forward_reference(x, w1, b1, w2, b2, approximate);
  check_feed_forward_inputs(x, w1, b1, w2, b2, approximate);
  Tensor h, y;
  {
    NoGradGuard parts;  // the three ops are not recorded: the one entry below stands for them
    h = linear_part(x, w1, b1);                                       // (..., H)
    y = linear_part(activation_for_product(h, approximate), w2, b2);  // (..., C_out); a is freed here
  }
  const Tensor keep_x = w1.requires_grad() && should_record({x, w1}) ? kept_for_product(x) : Tensor();  // for dw1
  const Tensor keep_w1 = x.requires_grad() ? w1 : Tensor();  // for dx
  const int64_t x_dim = x.dim();
  record("FeedForwardBackward0", {x, w1, b1, w2, b2}, y, {keep_x, h, keep_w1, w2},
         [approximate, x_dim](const BackwardArgs& ctx) {
           // the tape runs backward with grad mode off: nothing here is recorded
           const Tensor& dy = ctx.grad_out;  // (..., C_out)
           const Tensor& h = ctx.saved[1];
           const Tensor& w2 = ctx.saved[3];
           Grads grads(5);
           if (ctx.needs_grad[4]) grads[4] = dy;  // the tape sums it to (C_out)
           const bool needs_dh = ctx.needs_grad[0] || ctx.needs_grad[1] || ctx.needs_grad[2];
           // da (..., H), then dh in its place; a = gelu(h) recomputed, for "tanh" in the same pass
           // as dh = gelu'(h) * da (one tanh per element)
           Tensor dh = needs_dh ? matmul_backward_a(dy, w2.t(), h.dim()) : Tensor();
           std::optional<Tensor> a = needs_dh && approximate == "tanh"
                                         ? gelu_tanh_value_and_backward_(h, dh, product_input_dtype())
                                         : std::nullopt;
           if (needs_dh && !a) dh = gelu_backward(dh, h, approximate);
           if (ctx.needs_grad[3]) grads[3] = linear_weight_grad(dy, a ? *a : activation_for_product(h, approximate));
           a.reset();  // a is freed here
           if (!needs_dh) return grads;
           if (ctx.needs_grad[0]) grads[0] = matmul_backward_a(dh, ctx.saved[2].t(), x_dim);
           if (ctx.needs_grad[1]) grads[1] = linear_weight_grad(dh, ctx.saved[0]);
           if (ctx.needs_grad[2]) grads[2] = dh;  // the tape sums it to (H)
           return grads;
         });
  return y;
}

// The plain reference: the ops the fused one replaces, as nn's FeedForward composes them. It runs
// when the fast kernels are off, and it is the fused op's test oracle.
//
// Bit for bit, feed_forward is this composition, forward and every gradient, in float32 and
// float64, at any thread count. The forward runs the same ops (linear, gelu, linear) with the tape
// off, so the same kernels see the same operands. The backward calls the functions the
// composition's tape entries call (ops/derivatives.h: matmul's da and db, gelu's dx) with the same
// operands (the weights as transposed views, as linear passes them), and hands the bias gradients
// to the tape as dy and dh, which the tape sums to (C_out) and (H) by its own sum_to, as it does
// behind add's entry.
// a = gelu(h) recomputed is the forward's a exactly: the same element formula on the same h, and
// for "tanh" one pass gives both a and dh (one tanh per element instead of two, and no buffer
// for gelu'(h)), the bits of gelu and gelu_backward.
Tensor feed_forward_reference(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                             const std::string& approximate) {
  check_feed_forward_inputs(x, w1, b1, w2, b2, approximate);
  return linear(gelu(linear(x, w1, b1), approximate), w2, b2);
}

}  // namespace tg
