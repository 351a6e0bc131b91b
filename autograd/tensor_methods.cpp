// autograd/tensor_methods.cpp — the ops as Tensor methods (x.matmul(w), x.sum(-1), ...), as
// PyTorch's tensors have them: each forwards to the free function of autograd/ops.h, which
// records itself. The methods that do more are in autograd/tensor.cpp (geometry, element access,
// to, the in-place arithmetic), autograd/ops/view.cpp (the views) and autograd/ops/random.cpp
// (the random fills).
#include "autograd/tensor.h"

#include "autograd/ops.h"

namespace tg {

Tensor Tensor::matmul(const Tensor& other) const { return tg::matmul(*this, other); }
Tensor Tensor::softmax(int64_t d) const { return tg::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return tg::log_softmax(*this, d); }
Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const { return tg::masked_fill(*this, mask, value); }
Tensor Tensor::sum() const { return tg::sum(*this); }
Tensor Tensor::sum(int64_t d, bool keepdim) const { return tg::sum(*this, d, keepdim); }
Tensor Tensor::mean() const { return tg::mean(*this); }
Tensor Tensor::mean(int64_t d, bool keepdim) const { return tg::mean(*this, d, keepdim); }
Tensor Tensor::var(int64_t d, bool unbiased, bool keepdim) const { return tg::var(*this, d, unbiased, keepdim); }
Tensor Tensor::max() const { return tg::max(*this); }
Tensor Tensor::min() const { return tg::min(*this); }
Tensor Tensor::argmax() const { return tg::argmax(*this); }
Tensor Tensor::argmax(int64_t d, bool keepdim) const { return tg::argmax(*this, d, keepdim); }
Tensor Tensor::exp() const { return tg::exp(*this); }
Tensor Tensor::log() const { return tg::log(*this); }
Tensor Tensor::sqrt() const { return tg::sqrt(*this); }
Tensor Tensor::pow(Scalar e) const { return tg::pow(*this, e); }
Tensor Tensor::abs() const { return tg::abs(*this); }
Tensor Tensor::neg() const { return tg::neg(*this); }
Tensor Tensor::tanh() const { return tg::tanh(*this); }
Tensor Tensor::sigmoid() const { return tg::sigmoid(*this); }
Tensor Tensor::relu() const { return tg::relu(*this); }
Tensor Tensor::var() const { return tg::var(*this); }
ValuesIndices Tensor::max(int64_t d, bool keepdim) const { return tg::max(*this, d, keepdim); }
ValuesIndices Tensor::min(int64_t d, bool keepdim) const { return tg::min(*this, d, keepdim); }
Tensor Tensor::argmin() const { return tg::argmin(*this); }
Tensor Tensor::argmin(int64_t d, bool keepdim) const { return tg::argmin(*this, d, keepdim); }
Tensor Tensor::cumsum(int64_t d) const { return tg::cumsum(*this, d); }
ValuesIndices Tensor::sort(int64_t d, bool descending) const { return tg::sort(*this, d, descending); }
ValuesIndices Tensor::topk(int64_t k, int64_t d, bool largest, bool sorted) const {
  return tg::topk(*this, k, d, largest, sorted);
}
Tensor Tensor::gather(int64_t d, const Tensor& index) const { return tg::gather(*this, d, index); }
Tensor Tensor::index_select(int64_t d, const Tensor& index) const { return tg::index_select(*this, d, index); }
std::vector<Tensor> Tensor::split(int64_t size, int64_t d) const { return tg::split(*this, size, d); }
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const { return tg::chunk(*this, chunks, d); }
Tensor Tensor::tril(int64_t diagonal) const { return tg::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return tg::triu(*this, diagonal); }
Tensor Tensor::add(const Tensor& o, Scalar alpha) const { return tg::add(*this, o, alpha); }
Tensor Tensor::add(Scalar o) const { return tg::add(*this, o); }
Tensor Tensor::sub(const Tensor& o, Scalar alpha) const { return tg::sub(*this, o, alpha); }
Tensor Tensor::sub(Scalar o) const { return tg::sub(*this, o); }
Tensor Tensor::mul(const Tensor& o) const { return tg::mul(*this, o); }
Tensor Tensor::mul(Scalar o) const { return tg::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return tg::div(*this, o); }
Tensor Tensor::div(Scalar o) const { return tg::div(*this, o); }
Tensor Tensor::maximum(const Tensor& o) const { return tg::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return tg::minimum(*this, o); }
Tensor Tensor::eq(const Tensor& o) const { return tg::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return tg::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return tg::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return tg::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return tg::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return tg::ge(*this, o); }
Tensor Tensor::eq(Scalar o) const { return tg::eq(*this, o); }
Tensor Tensor::ne(Scalar o) const { return tg::ne(*this, o); }
Tensor Tensor::lt(Scalar o) const { return tg::lt(*this, o); }
Tensor Tensor::le(Scalar o) const { return tg::le(*this, o); }
Tensor Tensor::gt(Scalar o) const { return tg::gt(*this, o); }
Tensor Tensor::ge(Scalar o) const { return tg::ge(*this, o); }
Tensor Tensor::logical_not() const { return tg::logical_not(*this); }
Tensor Tensor::isnan() const { return tg::isnan(*this); }
Tensor Tensor::isfinite() const { return tg::isfinite(*this); }
Tensor Tensor::sin() const { return tg::sin(*this); }
Tensor Tensor::cos() const { return tg::cos(*this); }
Tensor Tensor::gelu(const std::string& approximate) const { return tg::gelu(*this, approximate); }
Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi) const { return tg::clamp(*this, lo, hi); }
Tensor Tensor::clamp_min(double lo) const { return tg::clamp(*this, lo, std::nullopt); }
Tensor Tensor::clamp_max(double hi) const { return tg::clamp(*this, std::nullopt, hi); }
Tensor Tensor::to_float() const { return to(kFloat32); }
Tensor Tensor::to_double() const { return to(kFloat64); }
Tensor Tensor::to_long() const { return to(kInt64); }
Tensor Tensor::to_bool() const { return to(kBool); }

}  // namespace tg
