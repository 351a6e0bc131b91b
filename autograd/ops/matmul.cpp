// autograd/ops/matmul.cpp — matmul with PyTorch's semantics, and linear.
//
//   forward   out = a @ b        (..., M, K) @ (..., K, N) -> (..., M, N)
//             out[.., i, j] = sum_k a[.., i, k] * b[.., k, j]
//   backward  da  = g @ b^T      db = a^T @ g
// Batch dims (all but the last two) broadcast as in elementwise ops; a gradient is summed over
// the batch dims its input was broadcast along (by the tape's sum_to, or on the fast path
// folded into one product).
//
// The forward runs matmul_reference (plain loops, at the end of this file) with fast_kernels()
// off, and for int64; on, the fast path of kernels/gemm.h: BLIS and small register-blocked
// kernels, reading transposed and broadcast views in place.
//
// Saved for backward: a if b needs its gradient, b if a needs its gradient. Under autocast the
// products run in bfloat16 (autograd/autocast.h); the comment above matmul says how.
#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/gemm.h"
#include "autograd/loops.h"
#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/record.h"

namespace tg {

// A float32 operand and a bfloat16 or float16 one, outside autocast: the 16-bit one is a frozen
// weight (a checkpoint's, kept in its own dtype to halve its memory and the bytes a token reads).
// It is widened to float32 as it is read, which is exact, so the product is float32's product of
// the widened weight, to the bit (kernels/gemm.h reads it without a float32 copy where it can).
bool widens_16bit(const Tensor& a, const Tensor& b) {
  return (a.dtype() == kFloat32 && is_16bit(b.dtype())) || (is_16bit(a.dtype()) && b.dtype() == kFloat32);
}

// Both defined, at least 1-D, of one dtype that matmul multiplies, or a float32 one and a frozen
// bfloat16 weight (internal.h); matmul_into checks its operands with it too.
void check_matmul_operands(const Tensor& a, const Tensor& b) {
  check_defined(a, "matmul", "input");
  check_defined(b, "matmul", "other");
  if (a.dim() == 0 || b.dim() == 0) {
    throw Error("matmul: both arguments to matmul need to be at least 1D, but they are " + std::to_string(a.dim()) +
                "D and " + std::to_string(b.dim()) + "D");
  }
  if (autocast_applies(a, b)) return;  // float32 or bfloat16, rounded to bfloat16 either way
  if (widens_16bit(a, b)) {
    const Tensor& weight = is_16bit(a.dtype()) ? a : b;
    if (weight.requires_grad() && grad_mode_enabled())
      throw Error(std::string("matmul: a ") + dtype_name(weight.dtype()) + " operand times a float32 one is a frozen "
                  "16-bit weight, widened to float32 as it is read, and it requires grad here; train a float32 copy "
                  "of it (.to(tg::kFloat32)), or freeze it (requires_grad_(false))");
    return;
  }
  if (a.dtype() == kFloat16 || b.dtype() == kFloat16) {
    throw Error(std::string("matmul: a float16 operand (got ") + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) +
                ") is a checkpoint's frozen weight, multiplied only by a float32 one; or convert it with "
                ".to(tg::kFloat32)");
  }
  if (a.dtype() == kBFloat16 || b.dtype() == kBFloat16) {
    throw Error(std::string("matmul: bfloat16 operands (got ") + dtype_name(a.dtype()) + " and " +
                dtype_name(b.dtype()) + ") are multiplied only under autocast (tg::AutocastGuard autocast(tg::kBFloat16)), "
                "or a bfloat16 one by a float32 one (a frozen 16-bit weight); or convert them with .to(tg::kFloat32)");
  }
  if (a.dtype() != b.dtype()) {
    throw Error(std::string("matmul: expected both operands to have the same dtype, got ") + dtype_name(a.dtype()) +
                " and " + dtype_name(b.dtype()) + "; convert one of them, e.g. with .to_float()");
  }
  if (a.dtype() == kBool) throw Error("matmul: not supported for bool tensors; convert them, e.g. with .to_float()");
}

namespace {

// --- shapes ------------------------------------------------------------------------------------

// A 1-D operand is promoted as PyTorch does: a (K) is read as (1,K), b (K) as (K,1), and that
// added dim is dropped from the result. So 1-D @ 1-D is a dot product (0-d result), 2-D @ 1-D
// a matrix-vector product, and so on.
struct MatmulShapes {
  Shape batch;          // broadcast batch dims of the output
  int64_t M, N, K;      // a (.., M, K) @ b (.., K, N), after promoting 1-D operands
  Shape out;            // the result's shape (promoted dims dropped again)
};

std::string dims_str(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// The inner dims must agree; the messages are PyTorch's for each case.
void check_inner_dims(const Tensor& a, const Tensor& b, int64_t M, int64_t K, int64_t Kb, int64_t N) {
  if (K == Kb) return;
  if (a.dim() == 1 && b.dim() == 1) {
    throw Error("matmul: inconsistent tensor size, expected tensor [" + std::to_string(K) + "] and src [" +
                std::to_string(Kb) + "] to have the same number of elements, but got " + std::to_string(K) +
                " and " + std::to_string(Kb) + " elements respectively");
  }
  if (a.dim() == 2 && b.dim() == 1) {
    throw Error("matmul: size mismatch, got input (" + std::to_string(M) + "), mat (" + dims_str(M, K) +
                "), vec (" + std::to_string(Kb) + ")");
  }
  std::string msg = "matmul: mat1 and mat2 shapes cannot be multiplied (" + dims_str(M, K) + " and " +
                    dims_str(Kb, N) + ")";
  if (a.dim() > 2 || b.dim() > 2) msg += " for inputs of shape " + shape_str(a.sizes()) + " and " + shape_str(b.sizes());
  throw Error(msg);
}

Shape broadcast_batch(const Tensor& a, const Tensor& b) {
  const Shape ba(a.sizes().begin(), a.sizes().end() - std::min<int64_t>(a.dim(), 2));
  const Shape bb(b.sizes().begin(), b.sizes().end() - std::min<int64_t>(b.dim(), 2));
  const size_t n = std::max(ba.size(), bb.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {  // align from the right
    const int64_t da = i < n - ba.size() ? 1 : ba[i - (n - ba.size())];
    const int64_t db = i < n - bb.size() ? 1 : bb[i - (n - bb.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error("matmul: batch dims of shapes " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()) +
                  " cannot be broadcast (batch dim " + std::to_string(i) + ": " + std::to_string(da) + " vs " +
                  std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

MatmulShapes matmul_shapes(const Tensor& a, const Tensor& b) {
  MatmulShapes s;
  s.M = a.dim() == 1 ? 1 : a.size(-2);
  s.K = a.size(-1);
  const int64_t Kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  s.N = b.dim() == 1 ? 1 : b.size(-1);
  check_inner_dims(a, b, s.M, s.K, Kb, s.N);
  s.batch = broadcast_batch(a, b);
  s.out = s.batch;
  if (a.dim() > 1) s.out.push_back(s.M);
  if (b.dim() > 1) s.out.push_back(s.N);
  return s;
}

// t with a size-1 dim inserted at d: a view with no autograd state.
Tensor insert_unit_dim(const Tensor& t, int64_t d) {
  Shape sz = t.sizes(), st = t.strides();
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, d < t.dim() ? t.sizes()[d] * t.strides()[d] : 1);
  return make_view(t, sz, st, t.storage_offset());
}

// t without its size-1 dim d: a view with no autograd state.
Tensor drop_unit_dim(const Tensor& t, int64_t d) {
  Shape sz = t.sizes(), st = t.strides();
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return make_view(t, sz, st, t.storage_offset());
}

// a as matrices (.., M, K): a 1-D a (K) becomes (1,K).
Tensor as_left_matrices(const Tensor& a) { return a.dim() == 1 ? insert_unit_dim(a, 0) : a; }
// b as matrices (.., K, N): a 1-D b (K) becomes (K,1).
Tensor as_right_matrices(const Tensor& b) { return b.dim() == 1 ? insert_unit_dim(b, 1) : b; }

// The last two dims swapped: a view with no autograd state.
Tensor swap_last_two(const Tensor& t) {
  Shape sz = t.sizes(), st = t.strides();
  std::swap(sz[sz.size() - 1], sz[sz.size() - 2]);
  std::swap(st[st.size() - 1], st[st.size() - 2]);
  return make_view(t, sz, st, t.storage_offset());
}

// The node PyTorch (1.13, the reference here) shows as the result's grad_fn: matmul is not one
// op there but dispatches to dot, mv, mm or bmm and reshapes around them.
const char* node_name(const Tensor& a, const Tensor& b) {
  if (a.dim() == 1 && b.dim() == 1) return "DotBackward0";
  if (a.dim() == 2 && b.dim() == 1) return "MvBackward0";
  if (a.dim() == 1 && b.dim() == 2) return "SqueezeBackward3";  // (1,K) @ (K,N), then squeeze
  if (a.dim() == 2 && b.dim() == 2) return "MmBackward0";
  if (a.dim() == 2) {
    // It computes (b^T @ a^T)^T and copies that contiguous, except for a 3-D b whose matrices
    // are stored transposed, which goes to bmm and a reshape.
    const bool b_transposed = b.dim() == 3 && b.stride(2) != 1 && b.stride(0) == b.size(1) * b.size(2);
    return b_transposed ? "UnsafeViewBackward0" : "CloneBackward0";
  }
  return "UnsafeViewBackward0";  // folded into mm/mv, or bmm on expanded operands, then reshaped
}

// g (out's shape) as matrices (batch.., M, N): the dims dropped for 1-D operands put back.
Tensor grad_as_matrices(const Tensor& g, int64_t a_dim, int64_t b_dim) {
  Tensor gm = g;
  if (a_dim == 1) gm = insert_unit_dim(gm, gm.dim() - (b_dim == 1 ? 0 : 1));
  if (b_dim == 1) gm = insert_unit_dim(gm, gm.dim());
  return gm;
}

// The inputs rounded to bfloat16, as float32: what the reference path multiplies.
Tensor rounded_to_bf16(const Tensor& t) { return t.detach().to(kBFloat16).to(kFloat32); }

}  // namespace

// Under autocast (autograd/autocast.h: AutocastGuard(kBFloat16)), float32 operands are rounded to
// bfloat16 and the products summed in float32; the result stays float32. The fast path runs
// kernels/bf16_gemm.h, the reference path matmul_reference on the rounded inputs. An operand that
// is saved and is not a leaf (an activation) is saved as its bfloat16 copy, half the memory
// (kept_for_product, in ops/matmul_autocast.cpp with the rest of autocast's bookkeeping).
// The backward runs under its forward's mode (the tape sees to it), so da and db are bfloat16
// products as well, of the gradient rounded once.
Tensor matmul(const Tensor& a, const Tensor& b) {
  check_matmul_operands(a, b);
  const MatmulShapes s = matmul_shapes(a, b);
  const bool bf16 = autocast_applies(a, b);
  // each operand is saved only if the other one needs its gradient
  const bool recorded = should_record({a, b});
  const bool save_a = recorded && b.requires_grad(), save_b = recorded && a.requires_grad();
  // a saved activation becomes its bfloat16 copy once, read by the product and kept for backward;
  // anything else is read as it is (the bf16 kernel rounds it while packing)
  const Tensor a_in = save_a ? kept_for_product(a) : a, b_in = save_b ? kept_for_product(b) : b;
  Tensor out;
  if (bf16 && fast_kernels()) {
    out = make_empty(s.out, kFloat32);
    kernels::batched_gemm_bf16(out, as_left_matrices(a_in), as_right_matrices(b_in), s.batch, s.M, s.N, s.K);
  } else if (bf16) {
    out = matmul_reference(rounded_to_bf16(a_in), rounded_to_bf16(b_in));
  } else if (widens_16bit(a, b) && !fast_kernels()) {
    out = matmul_reference(a.to(kFloat32), b.to(kFloat32));  // the weight widened: exact
  } else if (fast_kernels() && a.dtype() != kInt64) {  // BLIS has no integer gemm: int64 takes the reference
    out = make_empty(s.out, promote_types(a.dtype(), b.dtype()));
    kernels::batched_gemm(out, as_left_matrices(a), as_right_matrices(b), s.batch, s.M, s.N, s.K);
  } else {
    out = matmul_reference(a, b);
  }
  const int64_t a_dim = a.dim(), b_dim = b.dim();
  const bool b_transposed = b_dim == 2 && b.stride(0) == 1 && b.stride(1) != 1;  // a linear's weight.t()
  record(node_name(a, b), {a, b}, out, {save_a ? a_in : Tensor(), save_b ? b_in : Tensor()},
         [a_dim, b_dim, b_transposed, bf16](const BackwardArgs& ctx) {
           // a bfloat16 product's g is rounded once for both products (they run in the forward's
           // mode, which the tape restores); a float64 product under autocast was not one
           const Tensor g = bf16 ? ctx.grad_out.to(kBFloat16) : ctx.grad_out;
           return Grads{ctx.needs_grad[0] ? matmul_backward_a(g, ctx.saved[1], a_dim) : Tensor(),
                        ctx.needs_grad[1] ? matmul_backward_b(g, ctx.saved[0], b_dim, b_transposed) : Tensor()};
         });
  return out;
}

// da = g @ b^T, shaped (batch.., K) or (batch.., M, K); the tape sums it to a's shape.
Tensor matmul_backward_a(const Tensor& g, const Tensor& b, int64_t a_dim) {
  const Tensor gm = grad_as_matrices(g, a_dim, b.dim());
  const Tensor da = matmul(gm, swap_last_two(as_right_matrices(b)));  // (batch.., M, K)
  return a_dim == 1 ? drop_unit_dim(da, da.dim() - 2) : da;
}

// db = a^T @ g, shaped like b, or with batch dims the tape sums away.
Tensor matmul_backward_b(const Tensor& g, const Tensor& a, int64_t b_dim, bool b_transposed) {
  Tensor left = as_left_matrices(a), right = grad_as_matrices(g, a.dim(), b_dim);  // (.., M, K), (.., M, N)
  bool one_product = a.dim() == 2 && b_dim == 2;
  if (fast_kernels() && b_dim <= 2 && a.dim() > 2) {
    // b without batch dims was used by every batch of a: the sum over batches of a_i^T @ g_i is
    // one product of a (R, K) and g (R, N), R = batch*M, when both fold without a copy (BLIS
    // runs it faster than a product per batch summed by the tape; the same sum in another
    // order). The plain path leaves that sum to the tape.
    const std::optional<Tensor> a_rows = kernels::fold_leading_dims(left);
    const std::optional<Tensor> g_rows = a_rows ? kernels::fold_leading_dims(right) : std::nullopt;
    if (a_rows && g_rows) {
      left = *a_rows;
      right = *g_rows;
      one_product = true;
    }
  }
  Tensor db;
  if (one_product && b_transposed) {
    db = swap_last_two(matmul(swap_last_two(right), left));  // (K, N), stored as (N, K): b's layout
  } else {
    db = matmul(swap_last_two(left), right);  // (K, N), or (batch.., K, N)
  }
  return b_dim == 1 ? drop_unit_dim(db, db.dim() - 1) : db;
}

// linear = matmul with the weight's transpose (a view, not a copy), plus b.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_defined(weight, "linear", "weight");
  if (weight.dim() != 2) throw Error("linear: weight must be 2-d (out, in), got shape " + shape_str(weight.sizes()));
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? add(y, bias) : y;
}

// --- the reference: plain loops, the test oracle of kernels/gemm.h ---------------------------------

namespace {

// out (M,N) = a (M,K) @ b (K,N), all three contiguous row-major. Sums in double (uint64 for
// int64: wrapping on overflow as PyTorch's, without undefined behaviour).
// The loops run i, k, j: row i of out is a row of N sums, and each a[i][k] adds a[i][k] times
// row k of b to it, so b is read row by row, as it lies in memory. Each sum still runs over k
// in order.
template <class T>
void matmul_reference_kernel(T* out, const T* a, const T* b, int64_t M, int64_t N, int64_t K) {
  using Sum = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
  std::vector<Sum> row(static_cast<size_t>(N));  // (N)
  for (int64_t i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), Sum(0));
    for (int64_t k = 0; k < K; ++k) {
      const Sum a_ik = static_cast<Sum>(a[i * K + k]);
      for (int64_t j = 0; j < N; ++j) row[j] += a_ik * static_cast<Sum>(b[k * N + j]);
    }
    for (int64_t j = 0; j < N; ++j) out[i * N + j] = static_cast<T>(row[j]);
  }
}

}  // namespace

// matmul's forward, one batch at a time. Records nothing.
Tensor matmul_reference(const Tensor& a, const Tensor& b) {
  check_matmul_operands(a, b);
  const MatmulShapes s = matmul_shapes(a, b);
  // Each operand's matrices copied contiguous (off the tape): a (batch_a.., M, K), b (batch_b..,
  // K, N). Seen with the full batch, a batch dim it is broadcast along has stride 0.
  const Tensor am = as_left_matrices(a.detach()).contiguous(), bm = as_right_matrices(b.detach()).contiguous();
  Shape full_a = s.batch, full_b = s.batch;
  full_a.insert(full_a.end(), {s.M, s.K});
  full_b.insert(full_b.end(), {s.K, s.N});
  const Shape stride_a = broadcast_strides(am, full_a), stride_b = broadcast_strides(bm, full_b);
  Tensor out = make_empty(s.out, a.dtype());  // (batch.., M, N)
  const int64_t batches = shape_numel(s.batch), dims = static_cast<int64_t>(s.batch.size());
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t n = 0; n < batches; ++n) {
      int64_t offset_a = 0, offset_b = 0;  // batch number n, as an index (i0, i1, ..), in a and b
      for (int64_t d = dims - 1, rest = n; d >= 0; --d) {
        const int64_t index = rest % s.batch[d];
        rest /= s.batch[d];
        offset_a += index * stride_a[d];
        offset_b += index * stride_b[d];
      }
      matmul_reference_kernel(out.data_ptr<T>() + n * s.M * s.N, am.data_ptr<T>() + offset_a,
                              bm.data_ptr<T>() + offset_b, s.M, s.N, s.K);
    }
  };
  if (a.dtype() == kInt64) run(TypeTag<int64_t>{});
  else visit_floating(a.dtype(), "matmul", run);
  return out;
}

}  // namespace tg
