// autograd/ops/embedding.cpp — embedding: rows of a weight table picked by integer indices.
//
//   forward   out[n, :] = weight[idx[n], :]            idx flattened to (N), out (N,C)
//   backward  dweight[v, :] = sum_{n : idx[n] = v} g[n, :]   (a scatter-add: repeated indices add)
//
// The output has shape (*indices.shape, C). A bfloat16 weight (a checkpoint's, kept 16-bit and
// frozen) gives float32 rows, widened exactly. Saved for backward: the indices only (the weight's
// values are not needed, only its row count V).
#include <cstring>
#include <string>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/record.h"

namespace tg {
namespace nn_loops {

// --- fused kernels ------------------------------------------------------------------------------

// out (N,C) = weight (V,C) rows at idx (N); all contiguous, idx already checked to be in [0, V).
template <class T>
void embedding_forward(T* out, const T* weight, const int64_t* idx, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    std::memcpy(out + n * C, weight + idx[n] * C, static_cast<size_t>(C) * sizeof(T));
  }
}

// dweight (V,C) = scatter-add of dout (N,C) rows into the rows idx (N); dweight is overwritten.
template <class T>
void embedding_backward(T* dweight, const T* dout, const int64_t* idx, int64_t N, int64_t V, int64_t C) {
  std::memset(static_cast<void*>(dweight), 0, static_cast<size_t>(V * C) * sizeof(T));
  for (int64_t n = 0; n < N; ++n) {
    T* dw = dweight + idx[n] * C;  // dw (C)
    const T* g = dout + n * C;     // g (C)
    for (int64_t c = 0; c < C; ++c) dw[c] += g[c];
  }
}

// The same rows of a bfloat16 or float16 table (a checkpoint's frozen 16-bit weight), each element
// widened to float32 (exact: a bfloat16's 16 bits, then 16 zero bits; a float16: autograd/float16.h).
template <class W>
void embedding_forward_widened(float* out, const W* weight, const int64_t* idx, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n) {
    const W* row = weight + idx[n] * C;
    for (int64_t c = 0; c < C; ++c) out[n * C + c] = static_cast<float>(row[c]);
  }
}
template void embedding_forward_widened<BFloat16>(float*, const BFloat16*, const int64_t*, int64_t, int64_t);
template void embedding_forward_widened<Float16>(float*, const Float16*, const int64_t*, int64_t, int64_t);

template void embedding_forward<float>(float*, const float*, const int64_t*, int64_t, int64_t);
template void embedding_forward<double>(double*, const double*, const int64_t*, int64_t, int64_t);
template void embedding_backward<float>(float*, const float*, const int64_t*, int64_t, int64_t, int64_t);
template void embedding_backward<double>(double*, const double*, const int64_t*, int64_t, int64_t, int64_t);

}  // namespace nn_loops

namespace {

// "[1,2]": the position of flat element k in a tensor of this shape ("" for a 0-d tensor).
std::string position_str(int64_t k, const Shape& shape) {
  if (shape.empty()) return "";
  std::string s;
  int64_t rest = k;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    s = std::to_string(rest % shape[d]) + (s.empty() ? "" : ",") + s;
    rest /= shape[d];
  }
  return "[" + s + "]";
}

// idx (N): the indices flattened, each checked to be a row of weight (V,C).
Tensor checked_indices(const Tensor& weight, const Tensor& indices) {
  const char* op = "embedding";
  if (!weight.defined() || weight.dtype() != kFloat16) check_floating(weight, op);  // float16: a frozen table (below)
  check_defined(indices, op, "indices");
  if (indices.dtype() != kInt64) {
    throw Error(std::string(op) + ": expected indices of dtype int64 (Long), got " + dtype_name(indices.dtype()));
  }
  if (weight.dim() != 2) {
    throw Error(std::string(op) + ": weight must be 2-D (V,C), got shape " + shape_str(weight.sizes()));
  }
  const int64_t V = weight.sizes()[0];
  const Tensor idx = indices.contiguous().reshape({indices.numel()});
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t k = 0; k < idx.numel(); ++k) {
    if (p[k] >= 0 && p[k] < V) continue;
    throw Error(std::string(op) + ": index out of range in self: indices" + position_str(k, indices.sizes()) +
                " = " + std::to_string(p[k]) + ", but weight has " + std::to_string(V) +
                " rows (valid indices are 0.." + std::to_string(V - 1) + ")");
  }
  return idx;
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  const Tensor idx = checked_indices(weight, indices);
  const int64_t N = idx.numel();
  const int64_t V = weight.sizes()[0];
  const int64_t C = weight.sizes()[1];
  const Tensor wc = weight.is_contiguous() ? weight : weight.detach().contiguous();
  Shape out_shape = indices.sizes();
  out_shape.push_back(C);
  if (is_16bit(weight.dtype())) {  // a frozen 16-bit table: float32 rows out
    if (weight.requires_grad() && grad_mode_enabled())
      throw Error(std::string("embedding: a ") + dtype_name(weight.dtype()) + " weight is a frozen 16-bit table, widened "
                  "to float32 as it is read, and it requires grad here; train a float32 copy of it "
                  "(.to(tg::kFloat32)), or freeze it");
    Tensor out = make_empty(out_shape, kFloat32);
    if (weight.dtype() == kBFloat16)
      nn_loops::embedding_forward_widened(out.data_ptr<float>(), wc.data_ptr<BFloat16>(), idx.data_ptr<int64_t>(), N, C);
    else
      nn_loops::embedding_forward_widened(out.data_ptr<float>(), wc.data_ptr<Float16>(), idx.data_ptr<int64_t>(), N, C);
    return out;
  }
  Tensor out = make_empty(out_shape, weight.dtype());
  visit_floating(weight.dtype(), "embedding", [&](auto tag) {
    using T = typename decltype(tag)::type;
    nn_loops::embedding_forward<T>(out.data_ptr<T>(), wc.data_ptr<T>(), idx.data_ptr<int64_t>(), N, C);
  });
  record("EmbeddingBackward0", {weight, indices}, out, {idx}, [V, C](const BackwardArgs& ctx) {
    const Tensor& ix = ctx.saved[0];
    const Tensor g = ctx.grad_out.contiguous();
    Tensor dweight = make_empty({V, C}, g.dtype());
    visit_floating(g.dtype(), "embedding_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      nn_loops::embedding_backward<T>(dweight.data_ptr<T>(), g.data_ptr<T>(), ix.data_ptr<int64_t>(), ix.numel(),
                                      V, C);
    });
    return Grads{dweight, Tensor()};
  });
  return out;
}

}  // namespace tg
