// autograd/ops.h — every tensor op tapegrad has, as free functions in namespace tg.
// Each family lives in one file of autograd/ops/, forward and backward side by side.
#pragma once
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/fast_kernels.h"
#include "autograd/random/generator.h"
#include "autograd/tensor.h"

namespace tg {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// --- creation (ops/creation.cpp) -------------------------------------------------------------
Tensor empty(const Shape& shape, ScalarType dtype = kFloat32);
Tensor zeros(const Shape& shape, ScalarType dtype = kFloat32);
Tensor ones(const Shape& shape, ScalarType dtype = kFloat32);
Tensor full(const Shape& shape, Scalar value, ScalarType dtype = kFloat32);
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
Tensor scalar_tensor(Scalar value, ScalarType dtype = kFloat32);  // 0-d
// arange(end), arange(start, end, step): int64 when all arguments are integers, else float32.
Tensor arange(Scalar end);
Tensor arange(Scalar start, Scalar end, Scalar step = 1);
Tensor arange(Scalar start, Scalar end, Scalar step, ScalarType dtype);
Tensor eye(int64_t n, ScalarType dtype = kFloat32);
Tensor tril(const Tensor& t, int64_t diagonal = 0);  // zero above the diagonal (last two dims)
Tensor triu(const Tensor& t, int64_t diagonal = 0);  // zero below the diagonal
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// From flat row-major values and a shape.
Tensor from_vector(const std::vector<double>& values, const Shape& shape, ScalarType dtype = kFloat32);
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, ScalarType dtype = kInt64);

// tensor({...}) from nested initializer lists (1-d to 3-d), as torch.tensor: float values give
// float32, integers give int64, bools give bool (or the dtype you pass). Mixed numbers promote
// as in torch.tensor ({1, 0.5} is float32), and tensor({}) is an empty float32 tensor.
namespace detail {
template <class T> constexpr ScalarType default_dtype_for() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_integral_v<T>) return kInt64;
  else return kFloat32;
}
template <class T> Tensor tensor_from(const std::vector<T>& flat, const Shape& shape, ScalarType dtype) {
  if constexpr (std::is_integral_v<T>) {
    return from_vector(std::vector<int64_t>(flat.begin(), flat.end()), shape, dtype);
  } else {
    return from_vector(std::vector<double>(flat.begin(), flat.end()), shape, dtype);
  }
}
void check_ragged(const char* what, size_t got, size_t expected);
}  // namespace detail

template <class T>
Tensor tensor(std::initializer_list<T> v, ScalarType dtype = detail::default_dtype_for<T>()) {
  return detail::tensor_from(std::vector<T>(v), {static_cast<int64_t>(v.size())}, dtype);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> v,
              ScalarType dtype = detail::default_dtype_for<T>()) {
  std::vector<T> flat;
  size_t cols = v.size() ? v.begin()->size() : 0;
  for (const auto& row : v) {
    detail::check_ragged("row", row.size(), cols);
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return detail::tensor_from(flat, {static_cast<int64_t>(v.size()), static_cast<int64_t>(cols)}, dtype);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v,
              ScalarType dtype = detail::default_dtype_for<T>()) {
  std::vector<T> flat;
  size_t rows = v.size() ? v.begin()->size() : 0;
  size_t cols = rows ? v.begin()->begin()->size() : 0;
  for (const auto& block : v) {
    detail::check_ragged("block", block.size(), rows);
    for (const auto& row : block) {
      detail::check_ragged("row", row.size(), cols);
      flat.insert(flat.end(), row.begin(), row.end());
    }
  }
  return detail::tensor_from(flat, {static_cast<int64_t>(v.size()), static_cast<int64_t>(rows),
                                    static_cast<int64_t>(cols)}, dtype);
}

// Mixed literals ({1, 0.5}, {0.5, NAN}) and the empty list. A list whose numbers all have one
// C++ type takes the templates above; the rest come here. (These are templates with a
// non-deduced parameter so that the non-template empty-list overload wins for tensor({}).)
namespace detail {
struct Number {  // one literal, remembering whether it was a bool, an integer or a float
  enum Kind { Bool, Integer, Floating } kind;
  int64_t integer = 0;
  double real = 0;
  Number(bool v) : kind(Bool), integer(v), real(v) {}
  Number(int v) : kind(Integer), integer(v), real(v) {}
  Number(long v) : kind(Integer), integer(v), real(static_cast<double>(v)) {}
  Number(long long v) : kind(Integer), integer(v), real(static_cast<double>(v)) {}
  Number(float v) : kind(Floating), real(v) {}
  Number(double v) : kind(Floating), real(v) {}
};
struct NoValues {};
Tensor tensor_from_numbers(const std::vector<Number>& flat, const Shape& shape, std::optional<ScalarType> dtype);
}  // namespace detail

template <class N = detail::Number>
Tensor tensor(std::initializer_list<std::type_identity_t<N>> v, std::optional<ScalarType> dtype = std::nullopt) {
  return detail::tensor_from_numbers(std::vector<detail::Number>(v), {static_cast<int64_t>(v.size())}, dtype);
}
template <class N = detail::Number>
Tensor tensor(std::initializer_list<std::initializer_list<std::type_identity_t<N>>> v,
              std::optional<ScalarType> dtype = std::nullopt) {
  std::vector<detail::Number> flat;
  const size_t cols = v.size() ? v.begin()->size() : 0;
  for (const auto& row : v) {
    detail::check_ragged("row", row.size(), cols);
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return detail::tensor_from_numbers(flat, {static_cast<int64_t>(v.size()), static_cast<int64_t>(cols)}, dtype);
}
template <class N = detail::Number>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::type_identity_t<N>>>> v,
              std::optional<ScalarType> dtype = std::nullopt) {
  std::vector<detail::Number> flat;
  const size_t rows = v.size() ? v.begin()->size() : 0;
  const size_t cols = rows ? v.begin()->begin()->size() : 0;
  for (const auto& block : v) {
    detail::check_ragged("block", block.size(), rows);
    for (const auto& row : block) {
      detail::check_ragged("row", row.size(), cols);
      flat.insert(flat.end(), row.begin(), row.end());
    }
  }
  return detail::tensor_from_numbers(flat, {static_cast<int64_t>(v.size()), static_cast<int64_t>(rows),
                                            static_cast<int64_t>(cols)}, dtype);
}
// tensor({}): an empty tensor of shape (0), float32 unless told.
inline Tensor tensor(std::initializer_list<detail::NoValues>, ScalarType dtype = kFloat32) {
  return from_vector(std::vector<double>{}, Shape{0}, dtype);
}

// --- random (ops/random.cpp); bit-identical to PyTorch's CPU generator ------------------------
Tensor rand(const Shape& shape, Generator* gen = nullptr, ScalarType dtype = kFloat32);
Tensor randn(const Shape& shape, Generator* gen = nullptr, ScalarType dtype = kFloat32);
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator* gen = nullptr);
Tensor randperm(int64_t n, Generator* gen = nullptr);
Tensor rand_like(const Tensor& t, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, Generator* gen = nullptr);
// num_samples indices per row of probs (1-d or 2-d), as torch.multinomial: one sample, or
// several without replacement (largest noise ratio first), bit-identical to PyTorch's draws.
Tensor multinomial(const Tensor& probs, int64_t num_samples, Generator* gen = nullptr);
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen = nullptr);

// --- elementwise arithmetic with broadcasting (ops/arithmetic.cpp) ---------------------------
Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1.0);
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = 1.0);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
Tensor rsub(const Tensor& a, Scalar b);  // b - a
Tensor rdiv(const Tensor& a, Scalar b);  // b / a
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& a, Scalar exponent);
Tensor pow(const Tensor& a, const Tensor& exponent);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);

// --- elementwise math and activations (ops/unary.cpp, ops/activation.cpp) ---------------------
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor silu(const Tensor& x);  // x * sigmoid(x), as F.silu
// SwiGLU's product silu(gate) * up as one op (ops/activation.cpp), the values of the two to the
// bit: gate and up of one shape and dtype.
Tensor swiglu(const Tensor& gate, const Tensor& up);
Tensor relu(const Tensor& x);
// approximate = "none" (exact, with erf) or "tanh"
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);

// --- comparisons, where, masked_fill (ops/compare.cpp); comparisons give bool ----------------
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);
Tensor logical_not(const Tensor& a);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
Tensor isnan(const Tensor& x);     // bool
Tensor isfinite(const Tensor& x);  // bool: neither inf nor NaN
Tensor logical_and(const Tensor& a, const Tensor& b);  // bool; a number is true where nonzero
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // elementwise, broadcasting; NaN wins
Tensor minimum(const Tensor& a, const Tensor& b);

// --- reductions (ops/reduce.cpp) --------------------------------------------------------------
Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor var(const Tensor& x, int64_t dim, bool unbiased = true, bool keepdim = false);
Tensor var(const Tensor& x);  // over all elements, unbiased (N - 1)
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64
};  // (declared in tensor.h, which methods returning it need)
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);  // index into the flattened tensor
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
// Sum a (broadcast) gradient down to `shape` (the reverse of broadcasting).
Tensor sum_to(const Tensor& x, const Shape& shape);

// --- scans, sorting and indexing (ops/scan.cpp, sort.cpp, index.cpp) ---------------------------
Tensor cumsum(const Tensor& x, int64_t dim);  // int and bool inputs give int64
// Values and int64 indices along dim. NaN counts as the largest value; equal values keep
// their order.
ValuesIndices sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
// out[i][j] = x[i][index[i][j]] for dim 1 (index: int64, as many dims as x).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// A copy of x with src[i][j] added at x[i][index[i][j]] for dim 1.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// The slices index[0], index[1], ... of x along dim (index: 1-d int64).
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// Views of x along dim: pieces of split_size (the last one smaller), of the given sizes, or
// `chunks` pieces of ceil(size / chunks) (fewer when they run out), as PyTorch's.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);

// --- linear algebra (ops/matmul.cpp), on BLIS ---------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
// x W^T + b, as F.linear: x (*, in), weight (out, in), bias (out) or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// --- weights quantized to int8 (ops/quantize.cpp), as llama.cpp's Q8_0 ------------------------
// A weight W (rows, cols) as int8 values and one float32 scale per group of consecutive elements
// of a row: Ŵ = values * the group's scale. Frozen: nothing trains it.
struct QuantizedInt8 {
  Tensor values;  // int8 (rows, cols)
  Tensor scales;  // float32 (rows, cols / group)
};
// The group quantize_int8 uses for rows of cols elements: the largest divisor of cols <= asked.
int64_t int8_group_size(int64_t cols, int64_t asked);
// weight float32 or bfloat16 (rows, cols), every value finite; |w - ŵ| <= scale * (1/2 + 2^-16).
QuantizedInt8 quantize_int8(const Tensor& weight, int64_t group_size = 32);
// Ŵ, float32 (rows, cols).
Tensor dequantize_int8(const Tensor& values, const Tensor& scales);
// x Ŵ^T + b, as linear on the dequantized weight: x (*, cols) float32 or float64, bias (rows) or
// undefined. Backward gives x's gradient (and the bias's).
Tensor linear_int8(const Tensor& x, const Tensor& values, const Tensor& scales, const Tensor& bias = Tensor());
// Rows of Ŵ picked by int64 indices of any shape: float32 (*indices.shape, cols).
Tensor embedding_int8(const Tensor& values, const Tensor& scales, const Tensor& indices);

// --- neural-network functions (ops/softmax.cpp, loss.cpp, embedding.cpp, layer_norm.cpp, rms_norm.cpp, dropout.cpp, rope.cpp)
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// Cross entropy of logits against int64 class targets, as F.cross_entropy: logits (N,C) with
// targets (N), (C) with a 0-d target, or (N,C,d1,...) with targets (N,d1,...) (class dim 1).
// reduction "mean" (over the rows whose target is not ignore_index), "sum" or "none" (the
// targets' shape); label_smoothing eps mixes in eps * the mean of -log p over the classes.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const std::string& reduction = "mean",
                     int64_t ignore_index = -100, double label_smoothing = 0.0);
// Rows of weight (V, C) picked by int64 indices of any shape: out (*indices.shape, C).
Tensor embedding(const Tensor& weight, const Tensor& indices);
// Normalise over the trailing dims given by normalized_shape; weight/bias may be undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Root-mean-square normalisation over the trailing dims (ops/rms_norm.cpp), as
// F.rms_norm: x / sqrt(mean(x^2) + eps) * weight; weight may be undefined; no eps: the machine
// epsilon of x's dtype.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);
// Rotary position embeddings in Hugging Face's rotate-half convention (ops/rope.cpp):
// x (..., T, hs) with cos and sin (T, hs) of x's dtype -> x * cos + rotate_half(x) * sin, where
// rotate_half(x) = cat(-x[..., hs/2:], x[..., :hs/2]). cos and sin are constants (no gradient).
Tensor apply_rotary_pos_emb(const Tensor& x, const Tensor& cos, const Tensor& sin);

// --- attention weights (ops/attention.cpp) ------------------------------------------------------
// The weights of scaled dot-product attention from its scores (..., T_q, T_k), over the keys:
//   masked(i, j) = (causal and j > query_offset + i) or mask[..., i, j]
//   y = softmax(masked_fill(scores, masked, -inf) / sqrt(d_k), -1),  y = 0 on a row whose keys are all masked
//   dscores = y * (g - sum_j g_j y_j) / sqrt(d_k),  0 where masked
// One pass per row each way, bit-identical to masked_fill, div and softmax. mask: bool,
// broadcastable to scores (true = masked), or undefined. With a KV cache, query i is at
// position query_offset + i among the keys.
struct MaskedSoftmaxOptions {
  bool causal = false;       // query i sees keys 0..query_offset + i only
  int64_t query_offset = 0;  // the positions before the queries (a KV cache's length)
};
Tensor masked_scaled_softmax(const Tensor& scores, const Tensor& mask, int64_t d_k,
                             const MaskedSoftmaxOptions& options = {});
// Its backward as a function (nothing recorded): dscores from the weights y (contiguous, as the
// op returned them) and their gradient; mask, d_k and options as given to the forward.
Tensor masked_scaled_softmax_backward(const Tensor& y, const Tensor& grad, const Tensor& mask, int64_t d_k,
                                      const MaskedSoftmaxOptions& options = {});
// The attention context masked_scaled_softmax(q @ k^T, mask, d_k, options) @ v, for q (..., T_q, hs),
// k (..., T_k, hs), v (..., T_k, hs_v) with the same batch dims: the same bits, forward and backward,
// without keeping the (..., T_q, T_k) weights for backward (they are recomputed there, one
// (T_q, T_k) matrix at a time). A 4-D q (B, NH, T_q, hs) gets a result stored as (B, T_q, NH, hs_v):
// transpose(1, 2) of it is contiguous, the heads joined. (autograd/ops/attention_context.cpp)
Tensor masked_scaled_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, int64_t d_k,
                               const MaskedSoftmaxOptions& options = {});
// The same from masked_fill, div and softmax, as separate ops: the plain reference, which the
// fused op runs when the fast kernels are off (fast_kernels.h), and its test oracle.
Tensor masked_scaled_softmax_reference(const Tensor& scores, const Tensor& mask, int64_t d_k,
                                       const MaskedSoftmaxOptions& options = {});
// masked_scaled_softmax_reference(q @ k^T, mask, d_k, options) @ v: masked_scaled_attention's
// plain reference (a 4-D result is contiguous (B, NH, T_q, hs_v) here).
Tensor masked_scaled_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                         int64_t d_k, const MaskedSoftmaxOptions& options = {});

// Linear(C, H) -> GELU(approximate) -> Linear(H, C_out) as one op (ops/feed_forward.cpp): x (..., C),
// w1 (H, C), b1 (H), w2 (C_out, H), b2 (C_out), biases may be undefined. Keeps h = x w1^T + b1 for
// backward, not gelu(h); the same values and gradients as the composition, bit for bit.
Tensor feed_forward(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2,
                    const std::string& approximate);
// The same as linear, gelu, linear: the plain reference, which the fused op runs when the fast
// kernels are off, and its test oracle.
Tensor feed_forward_reference(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
                              const Tensor& b2, const std::string& approximate);

// --- comparing values -------------------------------------------------------------------------
// |a - b| <= atol + rtol * |b| everywhere (shapes broadcast), NaNs equal only if equal_nan.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);

}  // namespace tg
