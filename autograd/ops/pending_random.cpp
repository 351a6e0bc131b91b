// TEMPORARY placeholder so the library links while the random tensor ops are being written. Delete when ops/random.cpp exists.
#include "autograd/ops.h"
namespace tg {
Tensor rand(const Shape&, Generator*, ScalarType) { throw Error("rand: not implemented yet"); }
Tensor randn(const Shape&, Generator*, ScalarType) { throw Error("randn: not implemented yet"); }
Tensor randint(int64_t, int64_t, const Shape&, Generator*) { throw Error("randint: not implemented yet"); }
Tensor randperm(int64_t, Generator*) { throw Error("randperm: not implemented yet"); }
Tensor rand_like(const Tensor&, Generator*) { throw Error("rand_like: not implemented yet"); }
Tensor randn_like(const Tensor&, Generator*) { throw Error("randn_like: not implemented yet"); }
Tensor multinomial(const Tensor&, int64_t, Generator*) { throw Error("multinomial: not implemented yet"); }
Tensor& Tensor::uniform_(double, double, Generator*) { throw Error("uniform_: not implemented yet"); }
Tensor& Tensor::normal_(double, double, Generator*) { throw Error("normal_: not implemented yet"); }
Tensor& Tensor::bernoulli_(double, Generator*) { throw Error("bernoulli_: not implemented yet"); }
Tensor& Tensor::exponential_(double, Generator*) { throw Error("exponential_: not implemented yet"); }
Tensor& Tensor::random_(int64_t, int64_t, Generator*) { throw Error("random_: not implemented yet"); }
}  // namespace tg
