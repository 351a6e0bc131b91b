// autograd/ops/attention.cpp — the weights of scaled dot-product attention as one op:
// masked_fill(-inf), the division by sqrt(d_k) and softmax over the keys, forward and backward.
//
//   scores (..., T_q, T_k): one row of T_k keys per query i
//   masked(i, j) = (causal and j > query_offset + i) or mask[..., i, j]
//   z_j = scores_j / sqrt(d_k)                               (a division, as the PyTorch classes)
//   forward   y_j = exp(z_j - m) / s  for the keys not masked,  m = max z_j,  s = sum_j exp(z_j - m)
//             y_j = 0 where masked, and on a row whose keys are all masked (not softmax's NaN)
//   backward  dscores_j = y_j (g_j - sum_k g_k y_k) / sqrt(d_k)  where not masked, else 0
// Saved for backward: the output y and the caller's mask (no copy); the causal rule is recomputed.
//
// What the fusion saves: one output buffer instead of four intermediates, one pass back instead
// of three; and with the causal rule, the part of a row above the diagonal (half of the scores
// in self-attention) is neither read nor exponentiated, only written with zeros. Why its bits
// are the composition's: above masked_scaled_softmax_reference, the test oracle, at the end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/kernels/softmax_kernels.h"
#include "autograd/runtime/parallel.h"
#include "autograd/fast_kernels.h"
#include "autograd/record.h"

namespace tg {
namespace {

constexpr const char* kSoftmaxOp = "masked_scaled_softmax";

// The keys one query row may not see: j >= visible (the causal rule; T_k without it), and j
// with hidden[j * stride] (the caller's mask along the row; nullptr: none).
struct RowKeys {
  int64_t visible = 0;
  const bool* hidden = nullptr;
  int64_t stride = 0;
};

// Where every query row's keys are masked, for scores of `shape` (R rows of T_k).
struct KeyMasks {
  int64_t T_q = 1, T_k = 1;
  bool causal = false;
  int64_t query_offset = 0;
  const bool* mask = nullptr;     // the caller's mask, or nullptr
  std::vector<int64_t> mask_row;  // mask_row (R): where row r's keys start in mask
  int64_t mask_stride = 0;        // the step along the keys in mask (0 when broadcast)

  RowKeys row(int64_t r) const {
    int64_t visible = T_k;
    if (causal) visible = std::clamp(std::min(query_offset, T_k) + r % T_q + 1, int64_t{0}, T_k);
    return {visible, mask ? mask + mask_row[static_cast<size_t>(r)] : nullptr, mask_stride};
  }
};

KeyMasks key_masks(const Shape& shape, const Tensor& mask, const MaskedSoftmaxOptions& options) {
  KeyMasks k;
  k.T_q = shape[shape.size() - 2];
  k.T_k = shape.back();
  k.causal = options.causal;
  k.query_offset = options.query_offset;
  if (!mask.defined()) return k;
  const Shape strides = broadcast_strides(mask, shape);  // mask read as if expanded to the scores
  k.mask = mask.data_ptr<bool>();
  k.mask_stride = strides.back();
  k.mask_row.reserve(static_cast<size_t>(shape_numel(shape) / k.T_k));
  for_each_row<1>(shape, {strides.data()}, {0}, [&](const std::array<int64_t, 1>& offset, int64_t, const auto&) {
    k.mask_row.push_back(offset[0]);
  });
  return k;
}

// Rows r < rows of y (row r at y + r stride, its first lengths[r] entries) = their softmax in
// place, 1/s of each into inv[r]: float32 by softmax_kernels' rows, float64 by the plain loop, as
// softmax does along the last dim.
inline void softmax_rows_in_place(double* inv, float* y, int64_t stride, const int64_t* lengths, int64_t rows) {
  softmax_kernels::softmax_rows(inv, y, stride, y, stride, lengths, rows);
}
inline void softmax_rows_in_place(double* inv, double* y, int64_t stride, const int64_t* lengths, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    inv[r] = nn_loops::softmax_row_reference(y + r * stride, y + r * stride, lengths[r]);
  }
}

// y (n) = x (n) / divisor: float32 by softmax_kernels' vectorised loop, float64 plainly.
inline void divide_row(float* y, const float* x, int64_t n, float divisor) {
  softmax_kernels::divide_row(y, x, n, divisor);
}
inline void divide_row(double* y, const double* x, int64_t n, double divisor) {
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] / divisor;
}

// dx (n) = the softmax backward of g (n) at y (n), divided by `divisor`: softmax's row again.
inline void softmax_backward_row(float* dx, const float* g, const float* y, int64_t n, float divisor) {
  softmax_kernels::softmax_backward_row(dx, g, y, n, divisor);
}
inline void softmax_backward_row(double* dx, const double* g, const double* y, int64_t n, double divisor) {
  nn_loops::softmax_backward_row_reference(dx, g, y, n, divisor);
}

// One query row's weights y (T_k) from its scores x (T_k), in three steps, the middle one done
// for many rows at once (softmax_rows_in_place):
//   masked_scores     y = x / scale over the visible keys, -inf at the hidden ones; returns the
//                     keys the softmax runs over, 0 when every key is masked
//   softmax           over those keys
//   weights_past      the rest of the row: 0 (all of it when every key is masked)
template <class T>
int64_t masked_scores(T* y, const T* x, const RowKeys& keys, T scale) {
  const int64_t n = keys.visible;  // y[n..T_k) is masked by the causal rule
  divide_row(y, x, n, scale);
  bool any_key = n > 0;
  if (keys.hidden) {
    any_key = false;
    for (int64_t j = 0; j < n; ++j) {
      const bool hidden = keys.hidden[j * keys.stride];
      if (hidden) y[j] = -std::numeric_limits<T>::infinity();
      any_key = any_key || !hidden;
    }
  }
  return any_key ? n : 0;
}

template <class T>
void weights_past(T* y, int64_t T_k, int64_t n, double inv) {
  // exp(-inf) * inv: +0, or NaN as the rest of the row when s is NaN (a NaN score, an unmasked
  // +inf, unmasked scores all -inf), as the composition gives
  std::fill(y + n, y + T_k, n == 0 ? T(0) : static_cast<T>(0.0 * inv));
}

// dx (T_k) for one query row from the gradient g (T_k) of its weights y (T_k). With a mask,
// g_seen (T_k) is scratch: g with 0 at the hidden keys.
template <class T>
void masked_softmax_row_backward(T* dx, const T* g, const T* y, int64_t T_k, const RowKeys& keys, T scale,
                                 std::vector<T>& g_seen) {
  const int64_t n = keys.visible;
  if (!keys.hidden) {
    softmax_backward_row(dx, g, y, n, scale);
  } else {
    g_seen.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) g_seen[static_cast<size_t>(j)] = keys.hidden[j * keys.stride] ? T(0) : g[j];
    softmax_backward_row(dx, g_seen.data(), y, n, scale);
    for (int64_t j = 0; j < n; ++j)
      if (keys.hidden[j * keys.stride]) dx[j] = T(0);
  }
  std::fill(dx + n, dx + T_k, T(0));
}

// out (R, T_k) = the weights of inp (R, T_k); row r of each at r * its row stride (T_k when
// contiguous). out may be inp.
template <class T>
void masked_scaled_softmax_forward(T* out, int64_t out_rows, const T* inp, int64_t inp_rows, const KeyMasks& keys,
                                   int64_t R, T scale) {
  const int64_t T_k = keys.T_k;
  parallel_for(0, R, softmax_kernels::rows_per_chunk(T_k), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> softmax_keys(static_cast<size_t>(end - begin));  // per row of the chunk
    std::vector<double> inv(static_cast<size_t>(end - begin));
    for (int64_t r = begin; r < end; ++r)
      softmax_keys[r - begin] = masked_scores(out + r * out_rows, inp + r * inp_rows, keys.row(r), scale);
    softmax_rows_in_place(inv.data(), out + begin * out_rows, out_rows, softmax_keys.data(), end - begin);
    for (int64_t r = begin; r < end; ++r) {
      weights_past(out + r * out_rows, T_k, softmax_keys[r - begin], inv[r - begin]);
    }
  });
}

// dinp (R, T_k) from dout (R, T_k) and the forward's out (R, T_k), each row r at r * its row
// stride. dinp may be dout.
template <class T>
void masked_scaled_softmax_backward(T* dinp, int64_t dinp_rows, const T* dout, int64_t dout_rows, const T* out,
                                    int64_t out_rows, const KeyMasks& keys, int64_t R, T scale) {
  const int64_t T_k = keys.T_k;
  parallel_for(0, R, softmax_kernels::rows_per_chunk(T_k), [&](int64_t begin, int64_t end) {
    std::vector<T> g_seen;
    for (int64_t r = begin; r < end; ++r) {
      masked_softmax_row_backward(dinp + r * dinp_rows, dout + r * dout_rows, out + r * out_rows, T_k, keys.row(r),
                                  scale, g_seen);
    }
  });
}

// How the loops above step through a tensor's rows of T_k (its last dim): their count and the
// step between them. A contiguous (..., T_k), or a 2-D block whose rows are contiguous at any
// row stride (masked_scaled_attention's buffers).
struct SoftmaxRows {
  int64_t count, stride;
};
SoftmaxRows rows_of(const Tensor& t) {
  const int64_t T_k = t.size(-1);
  if (t.numel() == 0) return {0, T_k};
  if (t.dim() == 2 && t.size(0) > 1) return {t.size(0), t.stride(0)};
  return {t.numel() / T_k, T_k};
}

}  // namespace

// The one check of an attention mask (masked_scaled_softmax and masked_scaled_attention): bool,
// and broadcastable to the scores (..., T_q, T_k).
void check_attention_mask(const Tensor& mask, const Shape& scores_shape, const char* op) {
  if (!mask.defined()) return;
  if (mask.dtype() != kBool) {
    throw Error(std::string(op) + ": mask must be bool (true = masked), got " + dtype_name(mask.dtype()) +
                " of shape " + shape_str(mask.sizes()));
  }
  check_broadcasts_to(mask.sizes(), scores_shape, op, "mask");
}

namespace {

// scores floating with at least 2 dims, mask bool and broadcastable to it (or undefined), d_k > 0.
void check_attention_inputs(const Tensor& scores, const Tensor& mask, int64_t d_k, const char* op) {
  check_floating(scores, op);
  if (scores.dim() < 2) {
    throw Error(std::string(op) + ": expected scores of shape (..., T_q, T_k), got " + shape_str(scores.sizes()));
  }
  if (d_k <= 0) throw Error(std::string(op) + ": d_k must be positive, got " + std::to_string(d_k));
  check_attention_mask(mask, scores.sizes(), op);
}

}  // namespace

Tensor masked_scaled_softmax(const Tensor& scores, const Tensor& mask, int64_t d_k,
                             const MaskedSoftmaxOptions& options) {
  check_attention_inputs(scores, mask, d_k, kSoftmaxOp);
  if (!fast_kernels()) return masked_scaled_softmax_reference(scores, mask, d_k, options);
  const Tensor x = scores.is_contiguous() ? scores : scores.detach().contiguous();
  Tensor y = make_empty(scores.sizes(), scores.dtype());
  masked_scaled_softmax_into(y, x, mask, d_k, options);
  record("MaskedScaledSoftmaxBackward0", {scores}, y, {y, mask}, [d_k, options](const BackwardArgs& ctx) {
    return Grads{masked_scaled_softmax_backward(ctx.saved[0], ctx.grad_out, ctx.saved[1], d_k, options)};
  });
  return y;
}

Tensor masked_scaled_softmax_backward(const Tensor& y, const Tensor& grad, const Tensor& mask, int64_t d_k,
                                      const MaskedSoftmaxOptions& options) {
  const Tensor g = grad.contiguous();
  Tensor dx = make_empty(y.sizes(), y.dtype());
  masked_scaled_softmax_backward_into(dx, g, y, mask, d_k, options);
  return dx;
}

void masked_scaled_softmax_into(const Tensor& out, const Tensor& inp, const Tensor& mask, int64_t d_k,
                                const MaskedSoftmaxOptions& options) {
  const SoftmaxRows o = rows_of(out), i = rows_of(inp);
  if (o.count == 0) return;
  const KeyMasks keys = key_masks(out.sizes(), mask, options);
  const double scale = std::sqrt(static_cast<double>(d_k));
  visit_floating(out.dtype(), kSoftmaxOp, [&](auto tag) {
    using T = typename decltype(tag)::type;
    masked_scaled_softmax_forward<T>(out.data_ptr<T>(), o.stride, inp.data_ptr<T>(), i.stride, keys, o.count,
                                     static_cast<T>(scale));
  });
}

void masked_scaled_softmax_backward_into(const Tensor& dinp, const Tensor& dout, const Tensor& out, const Tensor& mask,
                                         int64_t d_k, const MaskedSoftmaxOptions& options) {
  const SoftmaxRows di = rows_of(dinp), d = rows_of(dout), o = rows_of(out);
  if (di.count == 0) return;
  const KeyMasks keys = key_masks(dinp.sizes(), mask, options);
  const double scale = std::sqrt(static_cast<double>(d_k));
  visit_floating(dinp.dtype(), kSoftmaxOp, [&](auto tag) {
    using T = typename decltype(tag)::type;
    masked_scaled_softmax_backward<T>(dinp.data_ptr<T>(), di.stride, dout.data_ptr<T>(), d.stride, out.data_ptr<T>(),
                                      o.stride, keys, di.count, static_cast<T>(scale));
  });
}

// The plain reference: the ops the fused one replaces, as nn/attention.cpp composes them. It runs
// when the fast kernels are off, and it is the fused op's test oracle.
//
// Bit for bit, the fused op is this composition: masked_fill(masked, -inf), / sqrt(d_k),
// softmax(-1), the rows with every key masked left out of the mask and zeroed afterwards. Every key
// not masked goes through the same operations in the same order, because both run softmax's own row
// loops: z in T, then for float32 softmax_kernels.h's row (vectorised exp, s in 16 double lanes by
// position), for float64 the plain row of nn_loops (std::exp, s from the left); y = T(e * (1/s));
// backward s = the sum of double(g) * double(y) the same way, then dscores = T(T(y (g - s)) /
// T(sqrt(d_k))). A masked key adds exactly 0 to either sum there (exp(-inf) = 0, and g * 0 = +-0
// for a finite g) and gets +0 in both directions (NaN forward when the row's sum is NaN), so
// leaving it out changes no bit: not the keys after a causal row's last visible one (a lane sum of
// a row is that of its prefix when the rest adds 0), nor a hidden key inside it (its term here is
// 0 * y). (Only a gradient that is inf or NaN at a masked key differs: there the composition spreads
// NaN over the row's gradient, and this op keeps it out.)
Tensor masked_scaled_softmax_reference(const Tensor& scores, const Tensor& mask, int64_t d_k,
                                      const MaskedSoftmaxOptions& options) {
  check_attention_inputs(scores, mask, d_k, "masked_scaled_softmax_reference");
  const double scale = std::sqrt(static_cast<double>(d_k));
  Tensor masked = mask;  // broadcastable to scores
  if (options.causal) {
    const int64_t T_q = scores.size(-2), T_k = scores.size(-1);
    Tensor above = triu(ones({T_q, T_k}), options.query_offset + 1) == 1.0;  // j > query_offset + i
    masked = masked.defined() ? logical_or(masked, above) : above;
  }
  if (!masked.defined()) return softmax(scores / scale, -1);
  // a row with every key masked is left out of the mask (softmax would give NaN) and zeroed after
  Tensor all_masked = masked.sum(-1, /*keepdim=*/true) == masked.size(-1);  // (..., T_q or 1, 1)
  Tensor weights = softmax(scores.masked_fill(logical_and(masked, logical_not(all_masked)), -kInf) / scale, -1);
  return weights.masked_fill(all_masked, 0.0);
}

}  // namespace tg
