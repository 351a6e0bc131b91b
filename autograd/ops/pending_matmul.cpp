// TEMPORARY placeholder so the library links while matmul is being written.
#include "autograd/ops.h"
namespace tg {
Tensor matmul(const Tensor&, const Tensor&) { throw Error("matmul: not implemented yet"); }
}  // namespace tg
