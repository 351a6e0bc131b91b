// autograd/ops/sort.cpp — sort, argsort and topk along one dim.
//
//   sort(x, dim)      values = x's rows along dim in order, indices = where each came from
//   topk(x, k, dim)   the k largest (or smallest) of each row, largest first when sorted
//   backward (both)   dx = scatter_add(zeros_like(x), dim, indices, g): each value's gradient
//                     goes back to the element it was taken from
//
// Order as PyTorch's CPU kernels: NaN counts as larger than every number (last when sorting
// ascending, first descending, first in a largest topk); equal values keep their order (a
// stable sort).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

namespace {

// a before b in ascending order, NaN last.
template <class T> bool ascending(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Sort each row of x (B,N,I) along N, keeping the first `keep` of each: values (B,keep,I) and
// indices (B,keep,I) of a contiguous x.
template <class T>
void sort_rows(T* values, int64_t* indices, const T* x, const DimSplit& s, int64_t keep, bool descending) {
  std::vector<int64_t> order(static_cast<size_t>(s.N));
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t i = 0; i < s.I; ++i) {
      const T* row = x + b * s.N * s.I + i;  // element n at row[n * I]
      std::iota(order.begin(), order.end(), 0);
      auto before = [&](int64_t p, int64_t q) {
        return descending ? ascending(row[q * s.I], row[p * s.I]) : ascending(row[p * s.I], row[q * s.I]);
      };
      if (keep < s.N) {
        std::partial_sort(order.begin(), order.begin() + keep, order.end(), [&](int64_t p, int64_t q) {
          return before(p, q) || (!before(q, p) && p < q);  // ties: the earlier element first
        });
      } else {
        std::stable_sort(order.begin(), order.end(), before);
      }
      for (int64_t n = 0; n < keep; ++n) {
        values[(b * keep + n) * s.I + i] = row[order[n] * s.I];
        indices[(b * keep + n) * s.I + i] = order[n];
      }
    }
  }
}

ValuesIndices sorted_along(const Tensor& x, int64_t dim, int64_t keep, bool descending, const char* name) {
  const DimSplit s = split_at_dim(x.sizes(), dim);
  Shape out_shape = x.sizes();
  if (!out_shape.empty()) out_shape[dim] = keep;
  ValuesIndices r{make_empty(out_shape, x.dtype()), make_empty(out_shape, kInt64)};
  const Tensor xc = x.contiguous();
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    sort_rows<T>(r.values.data_ptr<T>(), r.indices.data_ptr<int64_t>(), xc.data_ptr<T>(), s, keep, descending);
  });
  // d/dx: each value's gradient back to the element it came from
  const Shape x_shape = x.sizes();
  record(name, {x}, r.values, {r.indices}, [x_shape, dim](const BackwardArgs& ctx) {
    if (x_shape.empty()) return Grads{ctx.grad_out};
    return Grads{scatter_add(zeros(x_shape, ctx.grad_out.dtype()), dim, ctx.saved[0], ctx.grad_out)};
  });
  return r;
}

}  // namespace

ValuesIndices sort(const Tensor& x, int64_t dim, bool descending) {
  check_defined(x, "sort", "input");
  dim = wrap_dim(dim, x.dim(), "sort");
  return sorted_along(x, dim, x.dim() ? x.sizes()[dim] : 1, descending, "SortBackward0");
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  NoGradGuard no_grad;
  return sort(x, dim, descending).indices;
}

ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  check_defined(x, "topk", "input");
  dim = wrap_dim(dim, x.dim(), "topk");
  const int64_t n = x.dim() ? x.sizes()[dim] : 1;
  if (k < 0 || k > n) {
    throw Error("topk: k (" + std::to_string(k) + ") is out of range for dim " + std::to_string(dim) + " of size " +
                std::to_string(n) + " (shape " + shape_str(x.sizes()) + ")");
  }
  static_cast<void>(sorted);  // the k values always come out in order, which "unsorted" allows too
  return sorted_along(x, dim, k, largest, "TopkBackward0");
}

}  // namespace tg
