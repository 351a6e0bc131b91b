// autograd/ops/attention_context.cpp — attention's context vectors as one op, without keeping
// the attention weights for backward.
//
//   q (..., T_q, hs), k (..., T_k, hs), v (..., T_k, hs_v), one matrix of each per batch index
//   forward   S = q @ k^T                               (T_q, T_k)
//             P = masked_scaled_softmax(S, mask, d_k)   (T_q, T_k): the attention weights
//             out = P @ v                               (T_q, hs_v)
//   backward  dv = P^T @ dout       dP = dout @ v^T
//             dS = masked_scaled_softmax's backward: P (dP - sum_k dP_k P_k) / sqrt(d_k)
//             dq = dS @ k           dk = (q^T @ dS)^T
// Saved for backward: q, k, v and the mask (no copies; under autocast bfloat16 copies of q, k and
// v, see kept_for_product); P is recomputed from q and k.
//
// Why: the weights are the largest activation of a transformer block, (B, NH, T, T) against
// (B, T, C) for the others. Composed of matmul, masked_scaled_softmax and matmul, the tape keeps
// them until backward; here each batch index's (T_q, T_k) matrices live only while that index is
// computed, forward and backward. The price is computing S and P twice (one more q @ k^T and
// softmax per layer). Without dropout on the weights this is what the composition computes: the
// attention layers use it when their dropout is off (p = 0, or eval) and the weights are not
// kept for inspection.
//
// Bit for bit, this is the composition, masked_scaled_attention_reference (at the end of this
// file; it runs when the fast kernels are off, and it is the test oracle): every matrix goes
// through the same ops on the same shapes and strides, one batch index at a time instead of all
// at once (matmul runs one gemm per batch index either way, and the softmax works row by row).
#include <vector>

#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/fast_kernels.h"
#include "autograd/ops/derivatives.h"
#include "autograd/record.h"

namespace tg {

namespace {

constexpr const char* kOp = "masked_scaled_attention";

// Shapes: same dtype, floating, at least 2-D, the same batch dims, hs and T_k agreeing.
void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v) {
  check_defined(q, kOp, "q");
  check_defined(k, kOp, "k");
  check_defined(v, kOp, "v");
  auto shapes = [&] {
    return "q " + shape_str(q.sizes()) + ", k " + shape_str(k.sizes()) + ", v " + shape_str(v.sizes());
  };
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype()) {
    throw Error(std::string(kOp) + ": q, k and v must have the same dtype, got " + dtype_name(q.dtype()) + ", " +
                dtype_name(k.dtype()) + " and " + dtype_name(v.dtype()));
  }
  if (q.dim() < 2 || q.dim() != k.dim() || q.dim() != v.dim()) {
    throw Error(std::string(kOp) + ": expected q (..., T_q, hs), k (..., T_k, hs), v (..., T_k, hs_v) with the same "
                "number of dims (at least 2), got " + shapes());
  }
  const int64_t n = q.dim();
  for (int64_t d = 0; d < n - 2; ++d) {
    if (q.size(d) != k.size(d) || q.size(d) != v.size(d)) {
      throw Error(std::string(kOp) + ": q, k and v must have the same batch dims, got " + shapes() + " (dim " +
                  std::to_string(d) + ")");
    }
  }
  if (q.size(n - 1) != k.size(n - 1)) {
    throw Error(std::string(kOp) + ": q and k must have the same last dim (hs), got " + shapes());
  }
  if (k.size(n - 2) != v.size(n - 2)) {
    throw Error(std::string(kOp) + ": k and v must have the same number of keys (dim -2), got " + shapes());
  }
}

// The matrix of t (batch.., rows, cols) at flat batch index i: a view.
Tensor matrix_at(const Tensor& t, int64_t i) {
  Tensor m = t;
  for (int64_t d = t.dim() - 3; d >= 0; --d) {
    const int64_t size = t.size(d);
    m = m.select(d, i % size);
    i /= size;
  }
  return m;
}

int64_t batch_count(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.dim() - 2; ++d) n *= t.size(d);
  return n;
}

// fn(i) for every batch index, spread over the threads (each index wholly on one thread, so
// the split changes no bit), with the tape off and the caller's autocast mode on every thread.
template <class F>
void for_each_matrix(int64_t count, const F& fn) {
  const ScalarType autocast = autocast_dtype();
  parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
    NoGradGuard no_grad;
    AutocastGuard same_mode(autocast);
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

// The attention weights P (T_q, T_k) of batch index i.
Tensor weights_at(const Tensor& q, const Tensor& k, const Tensor& mask, int64_t i, int64_t d_k,
                  const MaskedSoftmaxOptions& options) {
  const Tensor scores = matrix_at(q, i).matmul(matrix_at(k, i).t());
  return masked_scaled_softmax(scores, mask.defined() ? matrix_at(mask, i) : Tensor(), d_k, options);
}

}  // namespace

Tensor masked_scaled_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, int64_t d_k,
                               const MaskedSoftmaxOptions& options) {
  check_inputs(q, k, v);
  const int64_t n = q.dim(), T_q = q.size(n - 2), T_k = k.size(n - 2), hs_v = v.size(n - 1);
  Shape scores_shape = q.sizes();
  scores_shape.back() = T_k;
  if (d_k <= 0) throw Error(std::string(kOp) + ": d_k must be positive, got " + std::to_string(d_k));
  // The mask read as if expanded to the scores (B.., T_q, T_k): stride 0 where it broadcasts.
  check_attention_mask(mask, scores_shape, kOp);
  const Tensor full_mask = mask.defined() ? mask.expand(scores_shape) : Tensor();
  if (!fast_kernels()) return masked_scaled_attention_reference(q, k, v, mask, d_k, options);
  // out (B.., T_q, hs_v); a 4-D one stored as (B, T_q, NH, hs_v), the heads' layout once joined.
  Shape out_shape = q.sizes();
  out_shape.back() = hs_v;
  Tensor out = n == 4 ? empty({q.size(0), T_q, q.size(1), hs_v}, q.dtype()).transpose(1, 2)
                      : empty(out_shape, q.dtype());
  for_each_matrix(batch_count(q), [&](int64_t i) {
    matrix_at(out, i).copy_(weights_at(q, k, full_mask, i, d_k, options).matmul(matrix_at(v, i)));
  });
  // q, k and v are only read by products: under autocast they are kept as bfloat16 copies
  const bool recorded = should_record({q, k, v});
  auto keep = [recorded](const Tensor& t) { return recorded ? kept_for_product(t) : t; };
  record("MaskedScaledAttentionBackward0", {q, k, v}, out, {keep(q), keep(k), keep(v), full_mask},
         [d_k, options](const BackwardArgs& ctx) {
           const Tensor &q = ctx.saved[0], &k = ctx.saved[1], &v = ctx.saved[2], &mask = ctx.saved[3];
           const ScalarType grad_dtype = ctx.grad_out.dtype();  // q, k, v may be kept as bfloat16 copies
           Tensor dq = empty(q.sizes(), grad_dtype), dk = empty(k.sizes(), grad_dtype), dv = empty(v.sizes(), grad_dtype);
           for_each_matrix(batch_count(q), [&](int64_t i) {
             const Tensor P = weights_at(q, k, mask, i, d_k, options);
             const Tensor dout = matrix_at(ctx.grad_out, i);
             matrix_at(dv, i).copy_(P.t().matmul(dout));
             const Tensor dP = dout.matmul(matrix_at(v, i).t());
             const Tensor dS = masked_scaled_softmax_backward(P, dP, mask.defined() ? matrix_at(mask, i) : Tensor(),
                                                              d_k, options);
             matrix_at(dq, i).copy_(dS.matmul(matrix_at(k, i)));
             matrix_at(dk, i).t().copy_(matrix_at(q, i).t().matmul(dS));
           });
           return Grads{ctx.needs_grad[0] ? dq : Tensor(), ctx.needs_grad[1] ? dk : Tensor(),
                        ctx.needs_grad[2] ? dv : Tensor()};
         });
  return out;
}

// The plain reference: scores, weights and context as three ops, the weights kept by the tape.
Tensor masked_scaled_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                         int64_t d_k, const MaskedSoftmaxOptions& options) {
  check_inputs(q, k, v);
  const Tensor scores = q.matmul(k.transpose(-2, -1));  // (B.., T_q, T_k)
  return masked_scaled_softmax_reference(scores, mask, d_k, options).matmul(v);
}

}  // namespace tg
