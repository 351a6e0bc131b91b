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
// Read masked_scaled_attention first, then kBlockRows (what the causal rule lets it skip) and
// masked_scaled_attention_reference (why its results are the composition's).
#include <algorithm>
#include <utility>
#include <vector>

#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"
#include "autograd/fast_kernels.h"
#include "autograd/ops/derivatives.h"
#include "autograd/record.h"

namespace tg {

namespace {

constexpr const char* kAttentionOp = "masked_scaled_attention";

// Shapes: same dtype, floating, at least 2-D, the same batch dims, hs and T_k agreeing.
void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v) {
  check_defined(q, kAttentionOp, "q");
  check_defined(k, kAttentionOp, "k");
  check_defined(v, kAttentionOp, "v");
  auto shapes = [&] {
    return "q " + shape_str(q.sizes()) + ", k " + shape_str(k.sizes()) + ", v " + shape_str(v.sizes());
  };
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype()) {
    throw Error(std::string(kAttentionOp) + ": q, k and v must have the same dtype, got " + dtype_name(q.dtype()) + ", " +
                dtype_name(k.dtype()) + " and " + dtype_name(v.dtype()));
  }
  if (q.dim() < 2 || q.dim() != k.dim() || q.dim() != v.dim()) {
    throw Error(std::string(kAttentionOp) + ": expected q (..., T_q, hs), k (..., T_k, hs), v (..., T_k, hs_v) with the same "
                "number of dims (at least 2), got " + shapes());
  }
  const int64_t n = q.dim();
  for (int64_t d = 0; d < n - 2; ++d) {
    if (q.size(d) != k.size(d) || q.size(d) != v.size(d)) {
      throw Error(std::string(kAttentionOp) + ": q, k and v must have the same batch dims, got " + shapes() + " (dim " +
                  std::to_string(d) + ")");
    }
  }
  if (q.size(n - 1) != k.size(n - 1)) {
    throw Error(std::string(kAttentionOp) + ": q and k must have the same last dim (hs), got " + shapes());
  }
  if (k.size(n - 2) != v.size(n - 2)) {
    throw Error(std::string(kAttentionOp) + ": k and v must have the same number of keys (dim -2), got " + shapes());
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
// An index costs `macs` multiply-adds and reads `bytes` of q, k and v: a thread gets at least
// work_split's share by whichever is the larger cost. Training's products are compute (T_q rows
// per key); one generated token's are memory (the cache's keys and values, read once), and a
// tiny model's attention runs on the caller and wakes no one.
struct MatrixCost {
  int64_t macs, bytes;
};
template <class F>
void for_each_matrix(int64_t count, MatrixCost cost, const F& fn) {
  const ScalarType autocast = autocast_dtype();
  const int64_t grain = std::min(work_split::grain_for_macs(cost.macs), work_split::grain_for(cost.bytes));
  parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    NoGradGuard no_grad;
    AutocastGuard same_mode(autocast);
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

// An empty (B, NH, T, hs) tensor stored as (B, T, NH, hs), the layout of the heads once joined
// (the attention layers' join_heads, and split_heads' gradient, are then views, not copies);
// any other shape as it is.
Tensor empty_in_joined_layout(const Shape& sizes, ScalarType dtype) {
  if (sizes.size() != 4) return empty(sizes, dtype);
  return empty({sizes[0], sizes[2], sizes[1], sizes[3]}, dtype).transpose(1, 2);
}

// With the causal rule, a query sees only the keys up to its own position, so about half of S,
// P, dP and dS is zero: the products here skip what they can of it, in blocks of kBlockRows
// queries (or keys) from kMinBlockedQueries queries on, else as one block. Query rows [r0, r1)
// see keys [0, n), n = query_offset + r1 (at most T_k):
//   S, P, out, dP, dS and dq of those rows: the same ops on q[r0:r1] and k[:n], v[:n], with the
//   rule's query_offset moved on by r0 (a smaller attention, the same one for those rows);
//   dv and dk of keys [c0, c1): the sums over the queries that see them, rows r >= c0 - query_offset.
// Self-attention with T = 256 and blocks of 64 computes 10 of 16 blocks: 62.5% of the products.
//
// The causal blocks: 64 rows keep the products large enough to run near their peak, and skip
// 37.5% of them at T = 256 (44% at T = 1024). Each block costs calls of its own (products,
// softmax, copies): with fewer queries than kMinBlockedQueries, the rows stay one block (that
// still skips the keys no query sees). In blocks, T = 256 runs faster and T = 128 slower than as
// one block (measured in docs/performance.md).
constexpr int64_t kBlockRows = 64;
constexpr int64_t kMinBlockedQueries = 256;
// The largest k whose sums every float32 kernel runs as one chain (small_gemm.h).
constexpr int64_t kOneChainK = 256;

// Query rows [first, first + rows) and the keys [0, keys) they see: all T_k without the causal
// rule, else those up to the block's last query.
struct QueryBlock {
  int64_t first, rows, keys;
};

std::vector<QueryBlock> query_blocks(int64_t T_q, int64_t T_k, const MaskedSoftmaxOptions& options) {
  if (!options.causal) return {{0, T_q, T_k}};
  const int64_t block_rows = T_q < kMinBlockedQueries ? std::max<int64_t>(T_q, 1) : kBlockRows;
  std::vector<QueryBlock> blocks;
  for (int64_t first = 0; first < T_q; first += block_rows) {
    const int64_t rows = std::min(block_rows, T_q - first);
    blocks.push_back({first, rows, std::clamp<int64_t>(options.query_offset + first + rows, 0, T_k)});
  }
  return blocks;
}

// The keys any query sees: those of the last block (0 without queries).
int64_t keys_seen_by(const std::vector<QueryBlock>& blocks) { return blocks.empty() ? 0 : blocks.back().keys; }

// The first query that sees key `key` (T_q if none does): 0 without the causal rule.
int64_t first_query_seeing(int64_t key, int64_t T_q, const MaskedSoftmaxOptions& options) {
  if (!options.causal) return 0;
  return std::clamp<int64_t>(key - options.query_offset, 0, T_q);
}

// Block b's part of the mask of batch index i (rows, keys), or none.
Tensor block_mask(const Tensor& mask, int64_t i, const QueryBlock& b) {
  return mask.defined() ? matrix_at(mask, i).narrow(0, b.first, b.rows).narrow(1, 0, b.keys) : Tensor();
}

// The causal rule as block b sees it: its row 0 is query b.first.
MaskedSoftmaxOptions block_options(const MaskedSoftmaxOptions& options, const QueryBlock& b) {
  MaskedSoftmaxOptions shifted = options;
  shifted.query_offset += b.first;
  return shifted;
}

// The attention weights P (rows, keys) of block b of batch index i, made in p (rows, keys): the
// scores q k^T, then the weights over them.
void block_weights(const Tensor& p, const Tensor& q, const Tensor& k, const Tensor& mask, int64_t i,
                   const QueryBlock& b, int64_t d_k, const MaskedSoftmaxOptions& options) {
  matmul_into(p, matrix_at(q, i).narrow(0, b.first, b.rows), matrix_at(k, i).narrow(0, 0, b.keys).t());
  masked_scaled_softmax_into(p, p, block_mask(mask, i, b), d_k, block_options(options, b));
}

// Block b's part of a (T_q, keys) buffer: its query rows and the keys they see.
Tensor block_of(const Tensor& buffer, const QueryBlock& b) {
  return buffer.narrow(0, b.first, b.rows).narrow(1, 0, b.keys);
}

}  // namespace

// Why: the weights are the largest activation of a transformer block, (B, NH, T, T) against
// (B, T, C) for the others. Composed of matmul, masked_scaled_softmax and matmul, the tape keeps
// them until backward; here each batch index's (T_q, T_k) matrices live only while that index is
// computed, forward and backward. The price is computing S and P twice (one more q @ k^T and
// softmax per layer). Without dropout on the weights this is what the composition computes: the
// attention layers use it when their dropout is off (p = 0, or eval) and the weights are not
// kept for inspection.
//
// Each product writes where its result belongs (matmul_into): out, dq, dk and dv in place, S and
// dP into one (T_q, keys) buffer each, where the softmax and its backward turn them into P and dS
// in place. No result is made only to be copied (that was 8% of this op's time at T = 256).
Tensor masked_scaled_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, int64_t d_k,
                               const MaskedSoftmaxOptions& options) {
  check_inputs(q, k, v);
  const int64_t n = q.dim(), T_q = q.size(n - 2), T_k = k.size(n - 2), hs_v = v.size(n - 1);
  Shape scores_shape = q.sizes();
  scores_shape.back() = T_k;
  if (d_k <= 0) throw Error(std::string(kAttentionOp) + ": d_k must be positive, got " + std::to_string(d_k));
  // The mask read as if expanded to the scores (B.., T_q, T_k): stride 0 where it broadcasts.
  check_attention_mask(mask, scores_shape, kAttentionOp);
  const Tensor full_mask = mask.defined() ? mask.expand(scores_shape) : Tensor();
  if (!fast_kernels()) return masked_scaled_attention_reference(q, k, v, mask, d_k, options);
  // out (B.., T_q, hs_v); a 4-D one stored as (B, T_q, NH, hs_v), the heads' layout once joined.
  Shape out_shape = q.sizes();
  out_shape.back() = hs_v;
  Tensor out = empty_in_joined_layout(out_shape, q.dtype());
  // q, k and v are only read by products: under autocast they are kept as bfloat16 copies, made
  // once here, which the forward's products read too (rounded already: half the bytes to pack)
  const bool recorded = should_record({q, k, v});
  auto keep = [recorded](const Tensor& t) { return recorded ? kept_for_product(t) : t; };
  const Tensor q_in = keep(q), k_in = keep(k), v_in = keep(v);
  const std::vector<QueryBlock> blocks = query_blocks(T_q, T_k, options);
  const int64_t keys_seen = keys_seen_by(blocks);
  // S = q k^T and out = P v: T_q x keys_seen x hs (hs_v) multiply-adds; q, k and v read once
  const int64_t hs = q.size(n - 1), element = static_cast<int64_t>(element_size(q.dtype()));
  const MatrixCost cost{T_q * keys_seen * (hs + hs_v), (T_q * hs + keys_seen * (hs + hs_v)) * element};
  for_each_matrix(batch_count(q), cost, [&](int64_t i) {
    const Tensor P = empty({T_q, keys_seen}, q.dtype());  // (T_q, keys_seen), a block of rows at a time
    for (const QueryBlock& b : blocks) {
      const Tensor Pb = block_of(P, b);  // (rows, keys)
      block_weights(Pb, q_in, k_in, full_mask, i, b, d_k, options);
      matmul_into(matrix_at(out, i).narrow(0, b.first, b.rows), Pb, matrix_at(v_in, i).narrow(0, 0, b.keys));
    }
  });
  record("MaskedScaledAttentionBackward0", {q, k, v}, out, {q_in, k_in, v_in, full_mask},
         [d_k, options](const BackwardArgs& ctx) {
           const Tensor &q = ctx.saved[0], &k = ctx.saved[1], &v = ctx.saved[2], &mask = ctx.saved[3];
           const ScalarType grad_dtype = ctx.grad_out.dtype();  // q, k, v may be kept as bfloat16 copies
           Tensor dq = empty_in_joined_layout(q.sizes(), grad_dtype), dk = empty_in_joined_layout(k.sizes(), grad_dtype);
           Tensor dv = empty_in_joined_layout(v.sizes(), grad_dtype);
           const int64_t T_q = q.size(-2), T_k = k.size(-2);
           const std::vector<QueryBlock> blocks = query_blocks(T_q, T_k, options);
           const int64_t keys_seen = keys_seen_by(blocks);  // keys past it: dk = dv = 0
           const int64_t key_step = blocks.size() > 1 ? kBlockRows : std::max<int64_t>(keys_seen, 1);  // keys as queries
           const bool skip_leading_queries = T_q <= kOneChainK;  // see masked_scaled_attention_reference
           // S again, dP, dq, dk and dv: T_q x keys_seen x (3 hs + 2 hs_v) multiply-adds; q, k, v
           // and dout read, dq, dk and dv written
           const int64_t hs = q.size(-1), hs_v = v.size(-1), element = static_cast<int64_t>(element_size(q.dtype()));
           const MatrixCost cost{T_q * keys_seen * (3 * hs + 2 * hs_v), 2 * (T_q + keys_seen) * (hs + hs_v) * element};
           for_each_matrix(batch_count(q), cost, [&](int64_t i) {
             const Tensor dout = matrix_at(ctx.grad_out, i);  // (T_q, hs_v)
             // P and dS (T_q, keys_seen): a block of query rows at a time, zero past a block's keys
             const Tensor P = empty({T_q, keys_seen}, grad_dtype), dS = empty({T_q, keys_seen}, grad_dtype);
             for (const QueryBlock& b : blocks) {
               const Tensor Pb = block_of(P, b), dSb = block_of(dS, b);  // (rows, keys)
               block_weights(Pb, q, k, mask, i, b, d_k, options);
               matmul_into(dSb, dout.narrow(0, b.first, b.rows), matrix_at(v, i).narrow(0, 0, b.keys).t());  // dP
               masked_scaled_softmax_backward_into(dSb, dSb, Pb, block_mask(mask, i, b), d_k,
                                                   block_options(options, b));
               matmul_into(matrix_at(dq, i).narrow(0, b.first, b.rows), dSb, matrix_at(k, i).narrow(0, 0, b.keys));
               for (const Tensor& whole : {P, dS})
                 whole.narrow(0, b.first, b.rows).narrow(1, b.keys, keys_seen - b.keys).zero_();
             }
             // dv and dk of keys [c0, c0 + cols): sums over the queries [r0, T_q) that see them
             for (int64_t c0 = 0; c0 < keys_seen; c0 += key_step) {
               const int64_t cols = std::min(key_step, keys_seen - c0);
               const int64_t r0 = skip_leading_queries ? first_query_seeing(c0, T_q, options) : 0;
               const Tensor P_cols = P.narrow(0, r0, T_q - r0).narrow(1, c0, cols);  // (T_q - r0, cols)
               const Tensor dS_cols = dS.narrow(0, r0, T_q - r0).narrow(1, c0, cols);
               const Tensor q_rows = matrix_at(q, i).narrow(0, r0, T_q - r0);       // (T_q - r0, hs)
               matmul_into(matrix_at(dv, i).narrow(0, c0, cols), P_cols.t(), dout.narrow(0, r0, T_q - r0));
               matmul_into(matrix_at(dk, i).narrow(0, c0, cols), dS_cols.t(), q_rows);  // dk = dS^T q: q^T dS's sums
             }
             matrix_at(dv, i).narrow(0, keys_seen, T_k - keys_seen).zero_();
             matrix_at(dk, i).narrow(0, keys_seen, T_k - keys_seen).zero_();
           });
           return Grads{ctx.needs_grad[0] ? dq : Tensor(), ctx.needs_grad[1] ? dk : Tensor(),
                        ctx.needs_grad[2] ? dv : Tensor()};
         });
  return out;
}

// The plain reference: scores, weights and context as three ops, the weights kept by the tape.
// It runs when the fast kernels are off, and it is the test oracle.
//
// masked_scaled_attention is this composition, bit for bit where every product is summed as one
// chain in k order (below), and within a sum's rounding elsewhere: every matrix goes through the
// same ops, one batch index at a time instead of all at once (matmul runs one gemm per batch
// index either way, and the softmax works row by row). What the causal blocks leave
// out adds nothing: a weight of 0 times a finite value is a zero term, and every kernel sums each
// element as one chain in k order (small_gemm.h, bf16_gemm.h), so a chain without its zero
// terms, at its end (S, out, dP, dq) or at its start (dv, dk, from a sum of +0), ends on the same
// value, up to the sign of a zero. (BLIS's skx gemm is that chain up to K = 256; past it, it adds
// partial sums of blocks of k, so dv and dk skip leading queries only while T_q <= kOneChainK.
// BLIS's other kernels, haswell's and generic ones and its small-matrix path, may order a sum by
// the product's shape: the float64 products, and float32 ones that small_gemm leaves to BLIS, then
// agree with the composition's within rounding; tests/autograd/test_masked_scaled_attention.cpp.)
// Only an inf or NaN in k, v or dout where the weight is 0 differs: the composition's 0 * inf
// spreads NaN, and here it is never read (as masked_scaled_softmax keeps such a gradient out).
Tensor masked_scaled_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                         int64_t d_k, const MaskedSoftmaxOptions& options) {
  check_inputs(q, k, v);
  const Tensor scores = q.matmul(k.transpose(-2, -1));  // (B.., T_q, T_k)
  return masked_scaled_softmax_reference(scores, mask, d_k, options).matmul(v);
}

}  // namespace tg
