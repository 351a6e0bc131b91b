// nn/chunked_loss.cpp — the head and cross_entropy in checkpointed chunks of rows (see the header).
#include "nn/chunked_loss.h"

#include <algorithm>
#include <string>

#include "autograd/checkpoint.h"
#include "autograd/error.h"
#include "autograd/ops.h"

namespace tg::nn {

Tensor chunked_cross_entropy(Linear& head, const Tensor& hidden, const Tensor& targets, int64_t chunk_rows,
                             int64_t ignore_index) {
  if (chunk_rows <= 0) throw Error("chunked_cross_entropy: chunk_rows must be positive, got " + std::to_string(chunk_rows));
  if (hidden.dim() != 2 || targets.dim() != 1 || targets.dtype() != kInt64 || targets.size(0) != hidden.size(0))
    throw Error("chunked_cross_entropy: expected hidden (N, C) and int64 targets (N), got hidden " +
                shape_str(hidden.sizes()) + " and targets " + shape_str(targets.sizes()) + " " +
                dtype_name(targets.dtype()));
  const int64_t N = hidden.size(0);
  if (N == 0) return cross_entropy(head.forward(hidden), targets, "mean", ignore_index);  // nan, as PyTorch's
  const Tensor counted = targets.contiguous();
  const int64_t* target = counted.data_ptr<int64_t>();
  int64_t count = 0;  // rows that count: the mean's denominator
  for (int64_t i = 0; i < N; ++i) count += target[i] != ignore_index;
  Tensor total;
  for (int64_t start = 0; start < N; start += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, N - start);
    const Tensor chunk_targets = targets.narrow(0, start, rows);  // (rows)
    Tensor chunk_sum = checkpoint(  // keeps hidden's rows; backward makes their logits (rows, V) again
        [&head, chunk_targets, ignore_index](const Tensor& rows_of_hidden) {
          return cross_entropy(head.forward(rows_of_hidden), chunk_targets, "sum", ignore_index);
        },
        hidden.narrow(0, start, rows));
    total = total.defined() ? total + chunk_sum : chunk_sum;
  }
  return total / static_cast<double>(count);  // 0 rows that count: nan, as cross_entropy's mean
}

}  // namespace tg::nn
