// tests/autograd/test_swiglu.cpp — swiglu(gate, up), SwiGLU's product as one op
// (autograd/ops/activation.cpp), against the two ops it stands for: silu(gate) * up gives the
// same values and the same gradients to the bit, float32 and float64, small and large enough
// to be split over the threads, contiguous and strided. Its float64 gradients against finite
// differences are in test_gradcheck_ops.cpp, its values against PyTorch's in test_ops_vs_torch.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

using namespace tg;
using tg::test::expect_error;

namespace {

struct Outputs {
  Tensor y, dgate, dup;
};

// y = f(gate, up), then y's backward of a fixed weighting w (every element its own gradient).
Outputs run(const Tensor& gate_in, const Tensor& up_in, const Tensor& w, bool fused) {
  Tensor gate = gate_in.detach().requires_grad_(true), up = up_in.detach().requires_grad_(true);
  Tensor y = fused ? swiglu(gate, up) : silu(gate) * up;
  (y * w).sum().backward();
  return {y.detach(), gate.grad(), up.grad()};
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const Tensor x = a.to(kFloat64).contiguous(), z = b.to(kFloat64).contiguous();
  const std::vector<double> xs = x.tolist<double>(), zs = z.tolist<double>();
  for (size_t i = 0; i < xs.size(); ++i) ASSERT_EQ(xs[i], zs[i]) << what << " differs at element " << i;
}

}  // namespace

TEST(Swiglu, IsSiluTimesUpToTheBit) {
  Generator gen(11);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    // 1 element, an odd row, and one large enough that for_elements splits it over threads
    for (const Shape& shape : std::vector<Shape>{{1}, {3, 7}, {4, 64, 344}}) {
      const Tensor gate = (randn(shape, &gen) * 3.0).to(dtype), up = randn(shape, &gen).to(dtype);
      const Tensor w = randn(shape, &gen).to(dtype);
      const Outputs fused = run(gate, up, w, true), plain = run(gate, up, w, false);
      const std::string what = std::string(dtype_name(dtype)) + " " + shape_str(shape);
      expect_same_bits(fused.y, plain.y, "y " + what);
      expect_same_bits(fused.dgate, plain.dgate, "dgate " + what);
      expect_same_bits(fused.dup, plain.dup, "dup " + what);
    }
  }
}

TEST(Swiglu, TakesStridedInputs) {
  Generator gen(12);
  const Tensor gate = randn({6, 5}, &gen).t(), up = randn({5, 6}, &gen);  // gate a transposed view
  const Tensor w = randn({5, 6}, &gen);
  const Outputs fused = run(gate, up, w, true), plain = run(gate, up, w, false);
  expect_same_bits(fused.y, plain.y, "y");
  expect_same_bits(fused.dgate, plain.dgate, "dgate");
  expect_same_bits(fused.dup, plain.dup, "dup");
}

TEST(Swiglu, RefusesGateAndUpOfDifferentShapesOrDtypes) {
  expect_error([] { swiglu(zeros({2, 3}), zeros({3, 2})); },
               {"swiglu: expected gate and up of one shape and dtype, got " + shape_str({2, 3}) + " float32 and " +
                shape_str({3, 2}) + " float32"});
  expect_error([] { swiglu(zeros({2}), zeros({2}).to(kFloat64)); }, {"float32 and", "float64"});
  expect_error([] { swiglu(zeros({2}).to(kInt64), zeros({2}).to(kInt64)); }, {"swiglu: expected a floating point"});
}
