// autograd/ops/scan.cpp — running sums along one dim.
//
//   cumsum   y[n] = x[0] + ... + x[n]          dx[n] = g[n] + ... + g[N-1]
//            (d/dx cumsum: flip(cumsum(flip(g))), computed as a reverse running sum)
//
// Integer and bool inputs sum to int64, as PyTorch's. Float sums accumulate in double, in
// order, each partial sum rounded to the dtype when stored, as PyTorch's CPU kernel does.
#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

namespace {

// y (B,N,I) = running sum of x (B,N,I) along N, forward or from the end; both contiguous.
template <class T, class R>
void cumsum_kernel(R* y, const T* x, const DimSplit& s, bool reverse) {
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t i = 0; i < s.I; ++i) {
      std::conditional_t<std::is_integral_v<R>, R, double> acc = 0;
      for (int64_t k = 0; k < s.N; ++k) {
        const int64_t n = reverse ? s.N - 1 - k : k;
        const int64_t at = (b * s.N + n) * s.I + i;
        if constexpr (std::is_integral_v<R>) {  // int64 wraps on overflow, as PyTorch's
          acc = static_cast<R>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(x[at]));
        } else {
          acc += static_cast<double>(x[at]);
        }
        y[at] = static_cast<R>(acc);
      }
    }
  }
}

Tensor running_sum(const Tensor& x, int64_t dim, bool reverse) {
  if (x.dtype() == kBFloat16) throw_bfloat16_unsupported("cumsum");
  const DimSplit s = split_at_dim(x.sizes(), dim);
  const ScalarType out_dtype = is_floating(x.dtype()) ? x.dtype() : kInt64;
  Tensor y = make_empty(x.sizes(), out_dtype);
  const Tensor xc = x.contiguous();
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) cumsum_kernel<T, T>(y.data_ptr<T>(), xc.data_ptr<T>(), s, reverse);
    else cumsum_kernel<T, int64_t>(y.data_ptr<int64_t>(), xc.data_ptr<T>(), s, reverse);
  });
  return y;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  check_defined(x, "cumsum", "input");
  dim = wrap_dim(dim, x.dim(), "cumsum");
  Tensor y = running_sum(x, dim, false);
  // d/dx cumsum: the running sum of g from the end
  record("CumsumBackward0", {x}, y, {}, [dim](const BackwardArgs& ctx) {
    return Grads{running_sum(ctx.grad_out, dim, true)};
  });
  return y;
}

}  // namespace tg
