// Methods a PyTorch reader reaches for on a tensor, compound assignment as in-place ops, and
// how a shape prints.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using test::error_of;
using test::has_part;

std::vector<double> values(const Tensor& t) { return t.tolist<double>(); }

TEST(TensorMethods, ForwardToTheFreeFunctions) {
  Tensor x = tensor({{3.0, -1.0, 2.0}, {0.5, 4.0, -2.0}});
  EXPECT_EQ(values(x.max(1).values), values(max(x, 1).values));
  EXPECT_EQ(x.min(0).indices.tolist<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(x.argmin().item<int64_t>(), 5);
  EXPECT_EQ(x.argmin(1).tolist<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values(x.var()), values(var(x)));
  EXPECT_EQ(values(x.cumsum(1)), (std::vector<double>{3, 2, 4, 0.5, 4.5, 2.5}));
  EXPECT_EQ(values(x.sort(1).values), (std::vector<double>{-1, 2, 3, -2, 0.5, 4}));
  EXPECT_EQ(x.topk(1).indices.tolist<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(values(x.tril()), values(tril(x)));
  EXPECT_EQ(values(x.triu(1)), values(triu(x, 1)));
  EXPECT_EQ(values(x.add(x, 2.0)), values(add(x, x, 2.0)));
  EXPECT_EQ(values(x.sub(1.0)), values(x - 1.0));
  EXPECT_EQ(values(x.mul(x)), values(x * x));
  EXPECT_EQ(values(x.div(2.0)), values(x / 2.0));
  EXPECT_EQ(values(x.maximum(zeros({3}))), (std::vector<double>{3, 0, 2, 0.5, 4, 0}));
  EXPECT_EQ(values(x.clamp_min(0.0)), values(relu(x)));
  EXPECT_EQ(values(x.clamp_max(0.0)), values(clamp(x, std::nullopt, 0.0)));
  EXPECT_EQ(x.gt(0.0).tolist<bool>(), (std::vector<bool>{true, false, true, true, true, false}));
  EXPECT_EQ(values(x.sin()), values(sin(x)));
  EXPECT_EQ(values(x.gelu("tanh")), values(gelu(x, "tanh")));
  EXPECT_EQ(x.split(2, 1).size(), 2u);
  EXPECT_EQ(x.chunk(3, 1).size(), 3u);
  EXPECT_EQ(x.to_long().dtype(), kInt64);
  EXPECT_EQ(x.to_double().dtype(), kFloat64);
  EXPECT_EQ(x.to_long().to_float().dtype(), kFloat32);
  EXPECT_EQ(x.to_bool().dtype(), kBool);
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

TEST(CompoundAssignment, UpdatesAParameterInPlaceUnderNoGrad) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_();
  (w * w).sum().backward();
  const void* before = w.raw_data();
  {
    NoGradGuard no_grad;
    w -= 0.5 * w.grad();  // w - lr * dL/dw
  }
  EXPECT_EQ(w.raw_data(), before);
  EXPECT_EQ(w.tolist<double>(), (std::vector<double>{0, 0}));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(error_of([&] { w -= 0.5 * w.grad(); }),
            "add_: a leaf Variable that requires grad is being used in an in-place operation.");
}

TEST(CompoundAssignment, EachOperatorRecordsItsGradient) {
  Tensor x = tensor({1.0, 2.0, 4.0}).requires_grad_();
  Tensor o = tensor({2.0, 4.0, 8.0}).requires_grad_();
  Tensor y = x * 1.0;
  y += o;   // x + o
  y *= o;   // (x + o) o
  y -= 1.0;
  y /= o;   // ((x + o) o - 1) / o
  y *= 3.0;
  y += 2.0;
  y /= 2.0;
  // y = 1.5 (x + o - 1/o) + 1
  y.sum().backward();
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{1.5, 1.5, 1.5}));
  for (size_t i = 0; i < 3; ++i) {
    const double ov = o.tolist<double>()[i];
    EXPECT_NEAR(o.grad().tolist<double>()[i], 1.5 * (1.0 + 1.0 / (ov * ov)), 1e-12);
  }
}

TEST(CompoundAssignment, DivideInPlaceByATensorPassesGradcheck) {
  Tensor a = test::normal_tensor({2, 3}, 5).requires_grad_();
  Tensor b = (test::normal_tensor({3}, 6).abs() + 0.5).detach().requires_grad_();
  assert_gradcheck([](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 1.0;
    y /= in[1];
    y -= in[1];
    return y;
  }, {a, b});
}

TEST(CompoundAssignment, IntegerTensorsCannotBeDividedInPlace) {
  Tensor i = tensor({4, 6});
  EXPECT_TRUE(has_part(error_of([&] { i /= tensor({2, 3}); }), "div_: result type float32 can't be cast"));
  i += 1;
  EXPECT_EQ(i.tolist<int64_t>(), (std::vector<int64_t>{5, 7}));
}

TEST(ShapePrinting, PrintsLikeATuple) {
  std::ostringstream os;
  os << zeros({2, 3}).sizes() << " " << zeros({5}).sizes() << " " << scalar_tensor(1.0).sizes();
  EXPECT_EQ(os.str(), "(2, 3) (5,) ()");
  const Shape s = std::vector<int64_t>{4, 1};
  EXPECT_EQ(s, (Shape{4, 1}));
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// torch.tensor([1, 0.5]) is float32; torch.tensor([True, 2]) int64; torch.tensor([]) float32 (0,).
TEST(TensorLiterals, MixedNumbersPromoteAsTorchTensor) {
  Tensor a = tensor({1, 0.5});
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.tolist<double>(), (std::vector<double>{1, 0.5}));
  Tensor b = tensor({0.5, NAN});
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_TRUE(std::isnan(b.tolist<double>()[1]));
  Tensor c = tensor({true, 2});
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_EQ(c.tolist<int64_t>(), (std::vector<int64_t>{1, 2}));
  Tensor d = tensor({{1, 0.5}, {2, 3}});
  EXPECT_EQ(d.sizes(), (Shape{2, 2}));
  EXPECT_EQ(d.dtype(), kFloat32);
  EXPECT_EQ(tensor({{{1, 2.5f}}}).sizes(), (Shape{1, 1, 2}));
  EXPECT_EQ(tensor({1, 0.5}, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(tensor({(1LL << 60) + 1, 1}).tolist<int64_t>()[0], (1LL << 60) + 1);  // exact past 2^53
  EXPECT_EQ(tensor({true, 7LL}).tolist<int64_t>()[1], 7);
}

TEST(TensorLiterals, EmptyAndSingleElementLists) {
  Tensor e = tensor({});
  EXPECT_EQ(e.sizes(), (Shape{0}));
  EXPECT_EQ(e.dtype(), kFloat32);
  EXPECT_EQ(tensor({}, kInt64).dtype(), kInt64);
  EXPECT_EQ(tensor({{1}}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(tensor({{{1.0}}}).sizes(), (Shape{1, 1, 1}));
  EXPECT_EQ(tensor({2.0}).sizes(), (Shape{1}));
  EXPECT_TRUE(test::has_part(test::error_of([] { tensor({{1, 0.5}, {2}}); }), "tensor: expected sequence of length 2"));
}

}  // namespace
}  // namespace tg
