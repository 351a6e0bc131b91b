// autograd/ops/matmul.cpp — matmul with PyTorch's semantics, on BLIS's gemm.
//
//   forward   out = a @ b        (..., M, K) @ (..., K, N) -> (..., M, N)
//   backward  da  = g @ b^T      db = a^T @ g
// Batch dims (all but the last two) broadcast as in elementwise ops; a gradient is summed over
// the batch dims its input was broadcast along (by the tape's sum_to, or folded into one gemm).
// A 1-D operand is promoted as PyTorch does: a (K) is read as (1,K), b (K) as (K,1), and that
// added dim is dropped from the result. So 1-D @ 1-D is a dot product (0-d result), 2-D @ 1-D
// a matrix-vector product, and so on.
//
// Why views cost nothing here: BLIS reads each matrix through a row stride and a column stride,
// so a transposed view (x.t(), k.transpose(-2, -1)) is the same memory with the two strides
// swapped, and a batch dim of stride 0 (broadcast) just hands the same pointer to every gemm.
// An operand is copied only when BLIS cannot read its layout (see blis_can_read).
//
// Float32 products too small for BLIS's fixed cost per call (attention's per-head products),
// or with an inner dim small enough for one cache-resident panel, run on the register-blocked
// kernels of kernels/small_gemm.h instead, which read the same strides.
//
// Saved for backward: a if b needs its gradient, b if a needs its gradient.
#include <blis.h>

#include <algorithm>
#include <optional>

#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/loops.h"
#include "autograd/ops/matmul_naive.h"
#include "autograd/kernels/small_gemm.h"
#include "autograd/runtime/parallel.h"
#include "autograd/record.h"

namespace tg {

namespace {

thread_local GemmCall last_call;

// --- shapes ------------------------------------------------------------------------------------

struct MatmulShapes {
  Shape batch;          // broadcast batch dims of the output
  int64_t M, N, K;      // a (.., M, K) @ b (.., K, N), after promoting 1-D operands
  Shape out;            // the result's shape (promoted dims dropped again)
};

std::string dims_str(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

void check_operands(const Tensor& a, const Tensor& b) {
  check_defined(a, "matmul", "input");
  check_defined(b, "matmul", "other");
  if (a.dim() == 0 || b.dim() == 0) {
    throw Error("matmul: both arguments to matmul need to be at least 1D, but they are " + std::to_string(a.dim()) +
                "D and " + std::to_string(b.dim()) + "D");
  }
  if (a.dtype() != b.dtype()) {
    throw Error(std::string("matmul: expected both operands to have the same dtype, got ") + dtype_name(a.dtype()) +
                " and " + dtype_name(b.dtype()) + "; convert one of them, e.g. with .to_float()");
  }
  if (a.dtype() == kBool) throw Error("matmul: not supported for bool tensors; convert them, e.g. with .to_float()");
}

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

// t (d0, ..., dn-2, C) seen as one matrix (R, C), R = d0*...*dn-2, when memory allows it without
// a copy: the leading dims must step through memory as one dim would.
std::optional<Tensor> fold_leading_dims(const Tensor& t) {
  const int64_t n = t.dim();
  int64_t rows = 1, row_stride = t.strides()[n - 1], next = -1;  // next: stride the next outer dim needs
  for (int64_t d = n - 2; d >= 0; --d) {
    const int64_t size = t.sizes()[d], stride = t.strides()[d];
    if (size == 1) continue;  // steps nowhere
    if (next >= 0 && stride != next) return std::nullopt;
    if (next < 0) row_stride = stride;
    next = stride * size;
    rows *= size;
  }
  return make_view(t, {rows, t.sizes()[n - 1]}, {row_stride, t.strides()[n - 1]}, t.storage_offset());
}

// --- BLIS ----------------------------------------------------------------------------------------

// One matrix as BLIS reads it: element (i, j) at p[i*rs + j*cs].
struct MatrixLayout {
  int64_t rows, cols, rs, cs;
};

// The last two dims of t.
MatrixLayout matrix_layout(const Tensor& t) {
  const int64_t n = t.dim();
  MatrixLayout l{t.sizes()[n - 2], t.sizes()[n - 1], t.strides()[n - 2], t.strides()[n - 1]};
  // A size-1 dim is never stepped along, so its stride is free; views leave arbitrary values
  // there, which BLIS's checks below may reject. Pick one they accept.
  if (l.rows == 1 && l.cols == 1) {
    l.rs = l.cs = 1;
  } else if (l.rows == 1) {
    l.rs = l.cols * l.cs;
  } else if (l.cols == 1) {
    l.cs = l.rows * l.rs;
  }
  return l;
}

// Can BLIS's gemm read this matrix in place? BLIS checks every operand's strides and aborts the
// program when they break its rules, so we check first and copy instead. Its rules:
//   - no stride may be 0: a broadcast (expanded) matrix must be materialised;
//   - row-major (cs == 1) needs rs >= cols, column-major (rs == 1) needs cs >= rows;
//   - rs == cs (1 or not) only for a single row or column;
//   - general stride (neither is 1): the dim with the smaller stride must fit inside the larger
//     stride (rows*rs <= cs, or cols*cs <= rs), so rows and columns never interleave.
// Transposes, permutes, selects and slices (even x[:, ::2], strides (C,2)) of a dense tensor
// always pass, so in practice only expanded matrices are copied. We also refuse negative
// strides (tapegrad makes none). Empty matrices never reach BLIS.
bool blis_can_read(const MatrixLayout& l) {
  if (l.rs <= 0 || l.cs <= 0) return false;
  if (l.rs == l.cs) return l.rows == 1 || l.cols == 1;
  if (l.cs == 1) return l.rs >= l.cols;
  if (l.rs == 1) return l.cs >= l.rows;
  return l.rs < l.cs ? l.rows * l.rs <= l.cs : l.cols * l.cs <= l.rs;
}

// t itself when BLIS can read its matrices in place, else a contiguous copy (without the tape).
Tensor blis_operand(const Tensor& t) {
  if (blis_can_read(matrix_layout(t))) return t;
  return t.detach().contiguous();
}

// Small products run on one thread. BLIS's OpenMP threads cost a fork/join per call, and when
// the cores are already busy (ctest -j, or our own parallel_for) they spin-wait for each other:
// measured, a 64x64x64 gemm went from microseconds to milliseconds. Below about 128^3
// multiply-adds one core is as fast anyway.
constexpr int64_t kSingleThreadWork = 128 * 128 * 128;
constexpr int64_t kParallelBatchWork = 64 * 64 * 64;  // the least work worth a thread of its own

// A BLIS runtime object asking for one thread, or null (= BLIS's global thread setting).
rntm_t* runtime_for(int64_t M, int64_t N, int64_t K, rntm_t* single) {
  if (M * N * K > kSingleThreadWork) return nullptr;
  bli_rntm_init(single);
  bli_rntm_set_num_threads(1, single);
  return single;
}

void blis_gemm(float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, const MatrixLayout& la,
               const MatrixLayout& lb) {
  float one = 1.0f, zero = 0.0f;  // BLIS takes alpha and beta by pointer
  rntm_t single;
  // BLIS's pointers are not const, but it only reads a and b.
  bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &one, const_cast<float*>(a), la.rs, la.cs,
               const_cast<float*>(b), lb.rs, lb.cs, &zero, c, N, 1, nullptr, runtime_for(M, N, K, &single));
}

void blis_gemm(double* c, const double* a, const double* b, int64_t M, int64_t N, int64_t K, const MatrixLayout& la,
               const MatrixLayout& lb) {
  double one = 1.0, zero = 0.0;
  rntm_t single;
  bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &one, const_cast<double*>(a), la.rs, la.cs,
               const_cast<double*>(b), lb.rs, lb.cs, &zero, c, N, 1, nullptr, runtime_for(M, N, K, &single));
}

// y (m) = A (m,n) @ x (n), A element (i, j) at a[i*rsa + j*csa], x's at x[j*incx]. y is
// zeroed first, so with beta = 0 nothing of what was there can reach the result.
void blis_gemv(float* y, const float* a, const float* x, int64_t m, int64_t n, int64_t rsa, int64_t csa, int64_t incx) {
  float one = 1.0f, zero = 0.0f;
  std::fill(y, y + m, 0.0f);
  bli_sgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, m, n, &one, const_cast<float*>(a), rsa, csa, const_cast<float*>(x),
            incx, &zero, y, 1);
}

void blis_gemv(double* y, const double* a, const double* x, int64_t m, int64_t n, int64_t rsa, int64_t csa,
               int64_t incx) {
  double one = 1.0, zero = 0.0;
  std::fill(y, y + m, 0.0);
  bli_dgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, m, n, &one, const_cast<double*>(a), rsa, csa,
            const_cast<double*>(x), incx, &zero, y, 1);
}

// c (M,N) row-major = a (M,K) @ b (K,N), a and b read through their layouts.
// beta = 0 makes BLIS overwrite c without reading it, so c may be uninitialised.
//
// One row (M = 1: a linear layer on one token, an attention query while generating) or one
// column (N = 1) is a matrix-vector product. A gemm (BLIS's, or small_gemm's for a weight read
// transposed) would pack the whole matrix into its blocked layout first, for one use of each
// element: the copy costs more than the product, and generation with the KV cache is all such
// products. gemv reads the matrix in place:
//   M = 1   c (N)  = b^T (N,K) @ a (K)
//   N = 1   c (M)  = a (M,K)   @ b (K)
// The general gemm stays the path for everything else (and matmul_naive the test oracle).
// gemv runs on the calling thread (BLIS does not thread level-2 products). Split by rows over
// two threads it was no faster on a 2-core machine (the medium GPT's median token took 1.6 ms
// either way, 3 interleaved pairs: the products are bound by memory bandwidth), and on a busy
// machine the fork/join of each of a token's ~36 products cost up to hundreds of ms.
template <class T>
void gemm(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, const MatrixLayout& la,
          const MatrixLayout& lb) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // an empty sum: zeros (BLIS would do the same; we need not ask it)
    std::fill(c, c + M * N, T(0));
    return;
  }
  if (M == 1) return blis_gemv(c, b, a, N, K, lb.cs, lb.rs, la.cs);
  if (N == 1) return blis_gemv(c, a, b, M, K, la.rs, la.cs, lb.rs);
  if constexpr (std::is_same_v<T, float>) {
    if (small_gemm::available() && small_gemm::worth_it(M, N, K)) {
      small_gemm::sgemm(c, N, a, la.rs, la.cs, b, lb.rs, lb.cs, M, N, K, small_gemm::best_kernel(N));
      return;
    }
  }
  blis_gemm(c, a, b, M, N, K, la, lb);
}

// out (batch.., M, N) contiguous = a (batch_a.., M, K) @ b (batch_b.., K, N), where the batch
// dims of a and b broadcast to `batch`. A broadcast batch dim has stride 0, so its gemms all get
// the same pointer: nothing is expanded or copied.
template <class T>
void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const MatmulShapes& s) {
  get_num_threads();  // BLIS gets our thread count before its first call
  // A b without batch dims is shared by every batch of a (a linear layer: x (B,T,C) @ w (C,OC)).
  // When a's batch and row dims fold into one, a single (B*T, C) @ (C, OC) gemm does them all,
  // which BLIS runs faster than B small ones; out (B,T,OC) is the same memory as (B*T, OC).
  if (b.dim() == 2 && a.dim() > 2) {
    if (const std::optional<Tensor> rows = fold_leading_dims(a)) {
      return batched_gemm<T>(out, *rows, b, MatmulShapes{{}, rows->size(0), s.N, s.K, {}});
    }
  }
  const Tensor ar = blis_operand(a);
  const Tensor br = blis_operand(b);
  const MatrixLayout la = matrix_layout(ar), lb = matrix_layout(br);
  Shape full_a = s.batch, full_b = s.batch;
  full_a.insert(full_a.end(), {s.M, s.K});
  full_b.insert(full_b.end(), {s.K, s.N});
  const Shape sa = broadcast_strides(ar, full_a);  // batch strides: the first batch.size() entries
  const Shape sb = broadcast_strides(br, full_b);
  T* o = out.data_ptr<T>();
  const T* pa = ar.data_ptr<T>();
  const T* pb = br.data_ptr<T>();
  const int64_t out_step = s.M * s.N;
  // Element offsets of each batch's a and b matrix, batches in row-major order: each "row" of
  // for_each_row is a run along the last batch dim.
  std::vector<std::array<int64_t, 2>> offsets;
  offsets.reserve(static_cast<size_t>(shape_numel(s.batch)));
  for_each_row<2>(s.batch, {sa.data(), sb.data()}, {0, 0},
                  [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                    for (int64_t j = 0; j < len; ++j) offsets.push_back({off[0] + j * st[0], off[1] + j * st[1]});
                  });
  const int64_t batches = static_cast<int64_t>(offsets.size());
  auto run_batches = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      gemm(o + i * out_step, pa + offsets[i][0], pb + offsets[i][1], s.M, s.N, s.K, la, lb);
  };
  // Small gemms run single-threaded inside BLIS (see kSingleThreadWork), so spread the batches
  // over our own threads instead: attention's (B*NH) gemms of (T,hs)@(hs,T) are this case. Each
  // thread gets at least kParallelBatchWork multiply-adds: a fork/join for less (one query per
  // head while generating, a tiny model) costs more than it saves, and on a busy machine the
  // threads wait for each other for milliseconds.
  if (s.M * s.N * s.K <= kSingleThreadWork && batches > 1) {
    parallel_for(0, batches, (kParallelBatchWork + s.M * s.N * s.K - 1) / (s.M * s.N * s.K), run_batches);
  } else {
    run_batches(0, batches);
  }
  if (batches > 0) {  // the debug hook sees the last batch's call
    const std::array<int64_t, 2>& last = offsets.back();
    last_call = GemmCall{pa + last[0], pb + last[1], la.rs, la.cs, lb.rs, lb.cs, s.M, s.N, s.K};
  }
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

}  // namespace

// da = g @ b^T, shaped (batch.., K) or (batch.., M, K); the tape sums it to a's shape.
Tensor matmul_backward_a(const Tensor& g, const Tensor& b, int64_t a_dim) {
  const Tensor gm = grad_as_matrices(g, a_dim, b.dim());
  const Tensor da = matmul(gm, swap_last_two(as_right_matrices(b)));  // (batch.., M, K)
  return a_dim == 1 ? drop_unit_dim(da, da.dim() - 2) : da;
}

// db = a^T @ g, shaped like b, or with batch dims the tape sums away.
Tensor matmul_backward_b(const Tensor& g, const Tensor& a, int64_t b_dim) {
  const Tensor gm = grad_as_matrices(g, a.dim(), b_dim);
  const Tensor am = as_left_matrices(a);
  Tensor db;
  // b without batch dims was used by every batch of a: the sum over batches of a_i^T @ g_i is
  // one gemm over a (R, K) and g (R, N), R = batch*M, when both fold without a copy.
  const std::optional<Tensor> a_rows = b_dim <= 2 && a.dim() > 2 ? fold_leading_dims(am) : std::nullopt;
  const std::optional<Tensor> g_rows = a_rows ? fold_leading_dims(gm) : std::nullopt;
  if (a_rows && g_rows) {
    db = matmul(swap_last_two(*a_rows), *g_rows);  // (K, N)
  } else {
    db = matmul(swap_last_two(am), gm);  // (batch.., K, N)
  }
  return b_dim == 1 ? drop_unit_dim(db, db.dim() - 1) : db;
}

const GemmCall& last_gemm_call() { return last_call; }

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands(a, b);
  if (a.dtype() == kInt64) return matmul_naive(a, b);  // BLIS has no integer gemm; no gradient either
  const MatmulShapes s = matmul_shapes(a, b);
  Tensor out = make_empty(s.out, a.dtype());
  visit_floating(a.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    batched_gemm<T>(out, as_left_matrices(a), as_right_matrices(b), s);
  });
  // save each operand only if the other one needs its gradient
  const Tensor keep_a = b.requires_grad() ? a : Tensor();
  const Tensor keep_b = a.requires_grad() ? b : Tensor();
  const int64_t a_dim = a.dim(), b_dim = b.dim();
  record(node_name(a, b), {a, b}, out, {keep_a, keep_b}, [a_dim, b_dim](const BackwardArgs& ctx) {
    return Grads{ctx.needs_grad[0] ? matmul_backward_a(ctx.grad_out, ctx.saved[1], a_dim) : Tensor(),
                 ctx.needs_grad[1] ? matmul_backward_b(ctx.grad_out, ctx.saved[0], b_dim) : Tensor()};
  });
  return out;
}

// linear = matmul with the weight's transpose (a view: BLIS reads it through its strides), plus b.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_defined(weight, "linear", "weight");
  if (weight.dim() != 2) throw Error("linear: weight must be 2-d (out, in), got shape " + shape_str(weight.sizes()));
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? add(y, bias) : y;
}

// --- the plain twin: the test oracle --------------------------------------------------------------

Tensor matmul_naive(const Tensor& a, const Tensor& b) {
  check_operands(a, b);
  const MatmulShapes s = matmul_shapes(a, b);
  Shape full_a = s.batch, full_b = s.batch;
  full_a.insert(full_a.end(), {s.M, s.K});
  full_b.insert(full_b.end(), {s.K, s.N});
  // Both operands expanded to the full batch and copied contiguous: (batch.., M, K), (batch.., K, N).
  const Tensor am = as_left_matrices(a), bm = as_right_matrices(b);
  const Tensor ae = make_view(am, full_a, broadcast_strides(am, full_a), am.storage_offset()).contiguous();
  const Tensor be = make_view(bm, full_b, broadcast_strides(bm, full_b), bm.storage_offset()).contiguous();
  Tensor out = make_empty(s.out, a.dtype());
  const int64_t batches = shape_numel(s.batch);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < batches; ++i) {
      matmul_naive_kernel(out.data_ptr<T>() + i * s.M * s.N, ae.data_ptr<T>() + i * s.M * s.K,
                          be.data_ptr<T>() + i * s.K * s.N, s.M, s.N, s.K);
    }
  };
  if (a.dtype() == kInt64) run(TypeTag<int64_t>{});
  else visit_floating(a.dtype(), "matmul", run);
  return out;
}

}  // namespace tg
