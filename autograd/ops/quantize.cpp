// autograd/ops/quantize.cpp — weights quantized to 8 bits, as llama.cpp's Q8_0: each row of a
// weight W (rows, cols) is cut into groups of `group` consecutive elements, and each group keeps
// one float32 scale and an int8 per element.
//
//   quantize    d   = max |w| over the group / 127        the group's scale (float32)
//               q   = round(w / d)                        an int8 in [-127, 127] (0 where d = 0)
//   dequantize  ŵ   = q * d                               float32, rounded once
//   error       |w - ŵ| <= d (1/2 + 2^-16)                rounding to an integer moves w by at most
//                                                         d/2; float32's roundings of w / d and
//                                                         q * d add at most 127 d 2^-24 each
//
// A row of cols elements takes cols / group groups, group dividing cols: the group is the
// largest divisor of cols that is at most the size asked (32 for every real checkpoint's widths,
// which are multiples of 64; 24 for a width of 48). The scales tensor (rows, cols / group) says
// the group size that made it.
//
//   linear_int8     forward   y = x Ŵ^T + b
//                   backward  dx = g Ŵ     (Ŵ is frozen: it gets no gradient; b's is add's)
//   embedding_int8  forward   out[n, :] = Ŵ[idx[n], :]    (no gradient: the table is frozen)
//
// The plain path dequantizes the whole weight and runs linear (matmul_reference under
// TG_FAST_KERNELS=0). The fast path, for float32 x, reads the int8 weight as it is and
// dequantizes each element as it reads it (kernels/gemm.h: gemm_int8_weight): the bits the
// float32 kernels give x times Ŵ, from 1 + 4 / group bytes an element instead of 4, which is what
// a token's time is while writing (generation reads every weight once a token).
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/gemm.h"
#include "autograd/loops.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

namespace tg {

int64_t int8_group_size(int64_t cols, int64_t asked) {
  if (asked < 1) throw Error("quantize_int8: the group size must be at least 1, got " + std::to_string(asked));
  if (cols < 1) throw Error("quantize_int8: a weight with no columns has no groups (cols = " + std::to_string(cols) + ")");
  int64_t group = std::min(asked, cols);
  while (cols % group != 0) --group;
  return group;
}

namespace {

// values int8 (rows, cols) and scales float32 (rows, groups) that dequantize together, or an
// Error naming op and what is wrong. Returns the group size.
int64_t check_int8_weight(const Tensor& values, const Tensor& scales, const char* op) {
  check_defined(values, op, "values");
  check_defined(scales, op, "scales");
  if (values.dtype() != kInt8 || values.dim() != 2)
    throw Error(std::string(op) + ": values must be a 2-d int8 tensor (rows, cols), got " + dtype_name(values.dtype()) +
                " of shape " + shape_str(values.sizes()));
  if (scales.dtype() != kFloat32 || scales.dim() != 2)
    throw Error(std::string(op) + ": scales must be a 2-d float32 tensor (rows, groups), got " +
                dtype_name(scales.dtype()) + " of shape " + shape_str(scales.sizes()));
  const int64_t rows = values.size(0), cols = values.size(1), groups = scales.size(1);
  if (scales.size(0) != rows || groups < 1 || cols % groups != 0)
    throw Error(std::string(op) + ": scales of shape " + shape_str(scales.sizes()) + " do not fit values of shape " +
                shape_str(values.sizes()) + " (expected (" + std::to_string(rows) +
                ", groups), groups dividing " + std::to_string(cols) + ")");
  if (!values.is_contiguous() || !scales.is_contiguous())
    throw Error(std::string(op) + ": values and scales must be contiguous (as quantize_int8 makes them)");
  return cols / groups;
}

// q = round(v) clamped to [-127, 127], rounding a half away from zero as std::round does, for a
// finite v (here w / d, at most 127 and a rounding). std::round is a library call a compiler does
// not vectorise, and a checkpoint has a billion weights to round; these steps vectorise: the whole
// part of |v| by truncation (exact), the rest |v| - whole (exact: Sterbenz), one more for a rest of
// a half or more, and v's sign.
inline int8_t round_to_int8(float v) {
  const float a = std::abs(v);
  const auto whole = static_cast<int32_t>(a);
  const int32_t rounded = std::min(whole + (a - static_cast<float>(whole) >= 0.5f ? 1 : 0), 127);
  return static_cast<int8_t>(v < 0 ? -rounded : rounded);
}

}  // namespace

QuantizedInt8 quantize_int8(const Tensor& weight, int64_t group_size) {
  check_defined(weight, "quantize_int8", "weight");
  if (weight.dim() != 2 || !(weight.dtype() == kFloat32 || weight.dtype() == kBFloat16 || weight.dtype() == kFloat16))
    throw Error("quantize_int8: expected a 2-d float32, bfloat16 or float16 weight (rows, cols), got " +
                std::string(dtype_name(weight.dtype())) + " of shape " + shape_str(weight.sizes()));
  const int64_t rows = weight.size(0), cols = weight.size(1);
  const int64_t group = int8_group_size(cols, group_size), groups = cols / group;
  const Tensor w = weight.detach().contiguous();
  QuantizedInt8 out{make_empty({rows, cols}, kInt8), make_empty({rows, groups}, kFloat32)};
  // Each element is read as float32 (a 16-bit one widened as it is read: exact, with no float32
  // copy), the groups' rows split over the threads. A group holding an inf or a nan is noted and
  // the weight refused afterwards, with its first such element named: nothing is returned half made.
  auto quantize = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pw = w.data_ptr<T>();
    int8_t* q = out.values.data_ptr<int8_t>();
    float* d = out.scales.data_ptr<float>();
    std::atomic<bool> nonfinite{false};
    parallel_for(0, rows, work_split::grain_for(cols * int64_t{sizeof(float)}), [&](int64_t first, int64_t last) {
      // locals, not the captures: an int8 store may alias any variable the loop reads through a
      // reference, which would stop the compiler vectorising the loops
      const int64_t n = group, row_groups = groups, row_cols = cols;
      for (int64_t r = first; r < last; ++r) {
        for (int64_t g = 0; g < row_groups; ++g) {
          const T* x = pw + r * row_cols + g * n;
          // the largest |x| by its bits: the magnitude bits of floats order as the floats do, and an
          // inf's are 0x7F800000, a nan's more, so the same sweep says whether the group is finite
          uint32_t largest_bits = 0;
          for (int64_t k = 0; k < n; ++k)
            largest_bits = std::max(largest_bits, std::bit_cast<uint32_t>(static_cast<float>(x[k])) & 0x7FFFFFFFu);
          const bool finite = largest_bits < 0x7F800000u;
          if (!finite) nonfinite = true;
          const float scale = std::bit_cast<float>(largest_bits) / 127.0f;
          d[r * row_groups + g] = scale;
          int8_t* qg = q + r * row_cols + g * n;
          if (scale == 0 || !finite) {
            std::fill(qg, qg + n, int8_t{0});
            continue;
          }
          for (int64_t k = 0; k < n; ++k) qg[k] = round_to_int8(static_cast<float>(x[k]) / scale);
        }
      }
    });
    if (nonfinite) {
      for (int64_t i = 0; i < rows * cols; ++i)
        if (!std::isfinite(static_cast<float>(pw[i])))
          throw Error("quantize_int8: the weight has a non-finite value (" + number_str(static_cast<float>(pw[i])) +
                      ") at [" + std::to_string(i / cols) + ", " + std::to_string(i % cols) + "]");
    }
  };
  if (w.dtype() == kBFloat16) quantize(TypeTag<BFloat16>{});
  else if (w.dtype() == kFloat16) quantize(TypeTag<Float16>{});
  else quantize(TypeTag<float>{});
  return out;
}

Tensor dequantize_int8(const Tensor& values, const Tensor& scales) {
  const int64_t group = check_int8_weight(values, scales, "dequantize_int8");
  const int64_t rows = values.size(0), cols = values.size(1), groups = cols / group;
  Tensor out = make_empty({rows, cols}, kFloat32);
  const int8_t* q = values.data_ptr<int8_t>();
  const float* d = scales.data_ptr<float>();
  float* w = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)  // ŵ = q * d, d the group's scale
      for (int64_t k = g * group; k < (g + 1) * group; ++k) w[r * cols + k] = static_cast<float>(q[r * cols + k]) * d[r * groups + g];
  return out;
}

Tensor linear_int8(const Tensor& x, const Tensor& values, const Tensor& scales, const Tensor& bias) {
  check_int8_weight(values, scales, "linear_int8");
  check_defined(x, "linear_int8", "x");
  const int64_t N = values.size(0), K = values.size(1);
  if (x.dim() == 0 || x.size(-1) != K)
    throw Error("linear_int8: x of shape " + shape_str(x.sizes()) + " must end in the weight's in_features = " +
                std::to_string(K) + " (the weight is " + shape_str(values.sizes()) + ")");
  if (!(x.dtype() == kFloat32 || x.dtype() == kFloat64))
    throw Error("linear_int8: x must be float32 or float64, got " + std::string(dtype_name(x.dtype())));
  Tensor y;
  if (fast_kernels() && x.dtype() == kFloat32) {  // the weight read as int8, dequantized as read
    const Tensor rows = x.detach().contiguous().reshape({-1, K});  // (R, K)
    Shape out_shape = x.sizes();
    out_shape.back() = N;
    y = make_empty(out_shape, kFloat32);
    kernels::gemm_int8_weight(y.view({-1, N}), rows, values, scales);
  } else {
    NoGradGuard no_grad;  // the plain composition, off the tape: the entry below is the op's own
    y = matmul(x.detach(), dequantize_int8(values, scales).to(x.dtype()).t());
  }
  record("LinearInt8Backward", {x}, y, {values, scales}, [](const BackwardArgs& ctx) {
    const Tensor w = dequantize_int8(ctx.saved[0], ctx.saved[1]).to(ctx.grad_out.dtype());  // Ŵ (N, K)
    return Grads{matmul(ctx.grad_out, w)};  // dx = g Ŵ
  });
  return bias.defined() ? add(y, bias) : y;
}

Tensor embedding_int8(const Tensor& values, const Tensor& scales, const Tensor& indices) {
  const int64_t group = check_int8_weight(values, scales, "embedding_int8");
  check_defined(indices, "embedding_int8", "indices");
  if (indices.dtype() != kInt64)
    throw Error("embedding_int8: expected indices of dtype int64 (Long), got " + std::string(dtype_name(indices.dtype())));
  const int64_t V = values.size(0), C = values.size(1), groups = C / group;
  const Tensor idx = indices.contiguous().reshape({indices.numel()});
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t n = 0; n < idx.numel(); ++n)
    if (p[n] < 0 || p[n] >= V)
      throw Error("embedding_int8: index out of range in self: " + std::to_string(p[n]) + " at position " +
                  std::to_string(n) + ", but the table has " + std::to_string(V) + " rows (valid indices are 0.." +
                  std::to_string(V - 1) + ")");
  Shape out_shape = indices.sizes();
  out_shape.push_back(C);
  Tensor out = make_empty(out_shape, kFloat32);
  const int8_t* q = values.data_ptr<int8_t>();
  const float* d = scales.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t n = 0; n < idx.numel(); ++n)  // out[n, :] = Ŵ[idx[n], :]
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t k = g * group; k < (g + 1) * group; ++k)
        o[n * C + k] = static_cast<float>(q[p[n] * C + k]) * d[p[n] * groups + g];
  return out;
}

}  // namespace tg
