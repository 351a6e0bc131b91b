// Tensor basics: creation, views sharing storage, in-place writes through views, element
// access, dtype conversions and the errors bad input gets.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace {

using tg::Shape;
using tg::Tensor;

// Expect fn() to throw an error whose message contains `needle`.
template <class F>
void expect_error(F fn, const std::string& needle) {
  EXPECT_TRUE(tg::test::has_part(tg::test::error_of(fn), needle));
}

TEST(Tensor, NestedInitializerListsGiveShapeAndDtype) {
  Tensor f = tg::tensor({{0.43, 0.15, 0.89}, {0.55, 0.87, 0.66}});
  EXPECT_EQ(f.sizes(), (Shape{2, 3}));
  EXPECT_EQ(f.dtype(), tg::kFloat32);
  EXPECT_FLOAT_EQ(f.at({1, 2}), 0.66f);
  Tensor i = tg::tensor({1, 2, 3});
  EXPECT_EQ(i.dtype(), tg::kInt64);
  Tensor b = tg::tensor({true, false});
  EXPECT_EQ(b.dtype(), tg::kBool);
  Tensor d = tg::tensor({{{1.0}, {2.0}}, {{3.0}, {4.0}}}, tg::kFloat64);
  EXPECT_EQ(d.sizes(), (Shape{2, 2, 1}));
  EXPECT_EQ(d.at({1, 0, 0}), 3.0);
}

TEST(Tensor, RaggedNestedListIsAnError) {
  expect_error([] { tg::tensor({{1.0, 2.0}, {3.0}}); }, "expected sequence of length 2 at row but got 1");
}

TEST(Tensor, TransposeIsAViewThatSharesStorage) {
  Tensor x = tg::arange(0, 6).reshape({2, 3});
  Tensor t = x.t();
  EXPECT_EQ(t.sizes(), (Shape{3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.is_alias_of(x));
  EXPECT_EQ(t.at<int64_t>({2, 1}), 5);
}

TEST(Tensor, InPlaceWriteThroughAViewIsSeenByItsBase) {
  Tensor x = tg::zeros({3, 4});
  x.select(1, 2).fill_(7.0);
  x.narrow(0, 1, 1).add_(tg::ones({1, 4}));
  EXPECT_EQ(x.at({0, 2}), 7.0);
  EXPECT_EQ(x.at({1, 2}), 8.0);
  EXPECT_EQ(x.at({1, 0}), 1.0);
  EXPECT_EQ(x.at({2, 0}), 0.0);
  Tensor m = tg::tril(tg::ones({3, 3})) == 0;
  Tensor scores = tg::ones({3, 3});
  scores.masked_fill_(m, -INFINITY);
  EXPECT_TRUE(std::isinf(scores.at({0, 1})) && scores.at({0, 1}) < 0);
  EXPECT_EQ(scores.at({1, 1}), 1.0);
}

TEST(Tensor, ViewOfNonContiguousWorksWhenStridesAllowAndReshapeCopiesOtherwise) {
  Tensor x = tg::arange(0, 24).reshape({2, 3, 4});
  Tensor p = x.permute({1, 0, 2});           // (3,2,4), inner dim still contiguous
  Tensor v = p.view({3, 2, 2, 2});           // splitting the contiguous last dim is fine
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_EQ(v.at<int64_t>({2, 1, 1, 1}), x.at<int64_t>({1, 2, 3}));
  Tensor t = x.transpose(1, 2);              // (2,4,3)
  try {
    t.view({2, 12});
    ADD_FAILURE() << "view of a transposed tensor across dims should fail";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Use .reshape(...) instead"), std::string::npos) << e.what();
  }
  Tensor r = t.reshape({2, 12});
  EXPECT_FALSE(r.is_alias_of(x));
  EXPECT_EQ(r.at<int64_t>({0, 1}), 4);
}

TEST(Tensor, ExpandUsesZeroStridesAndSqueezeUnsqueezeRoundTrip) {
  Tensor x = tg::tensor({1.0, 2.0, 3.0}).unsqueeze(0);  // (1,3)
  Tensor e = x.expand({4, 3});
  EXPECT_EQ(e.strides(), (Shape{0, 1}));
  EXPECT_EQ(e.at({3, 2}), 3.0);
  EXPECT_EQ(e.unsqueeze(-1).sizes(), (Shape{4, 3, 1}));
  EXPECT_EQ(x.squeeze().sizes(), (Shape{3}));
  EXPECT_EQ(x.squeeze(0).sizes(), (Shape{3}));
  expect_error([&] { x.expand({4, 2}); }, "must match the existing size (3) at non-singleton dimension 1");
}

TEST(Tensor, SliceWithStepAndNegativeBounds) {
  Tensor x = tg::arange(0, 10);
  Tensor s = x.slice(0, 1, -1, 3);  // 1, 4, 7
  EXPECT_EQ(s.tolist<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(x.slice(0, -3).tolist<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  expect_error([&] { x.narrow(0, 8, 5); }, "exceeds dimension size (10)");
}

TEST(Tensor, CreationFunctions) {
  EXPECT_EQ(tg::eye(3).sum().item(), 3.0);
  EXPECT_EQ(tg::arange(0.0, 1.0, 0.25).sizes(), (Shape{4}));
  EXPECT_EQ(tg::arange(0.0, 1.0, 0.25).dtype(), tg::kFloat32);
  EXPECT_EQ(tg::full({2, 2}, 3.5).at({1, 1}), 3.5);
  Tensor tr = tg::triu(tg::ones({3, 3}), 1);
  EXPECT_EQ(tr.sum().item(), 3.0);
  EXPECT_EQ(tg::tril(tg::ones({2, 3, 3}), -1).sum().item(), 6.0);
  Tensor a = tg::ones({2, 3}), b = tg::zeros({2, 3});
  EXPECT_EQ(tg::stack({a, b}, 1).sizes(), (Shape{2, 2, 3}));
  EXPECT_EQ(tg::cat({a, b}, 0).sizes(), (Shape{4, 3}));
  EXPECT_EQ(tg::cat({a, b}, -1).sum().item(), 6.0);
  expect_error([&] { tg::cat({a, tg::ones({3, 2})}, 0); }, "Sizes of tensors must match except in dimension 0");
  expect_error([&] { tg::stack({a, tg::ones({3, 2})}); }, "stack expects each tensor to be equal size");
}

TEST(Tensor, ItemAndElementAccessErrors) {
  Tensor x = tg::ones({2, 3});
  expect_error([&] { x.item(); }, "a Tensor with 6 elements cannot be converted to Scalar");
  expect_error([&] { x.at({2, 0}); }, "index 2 is out of bounds for dim 0 with size 2");
  expect_error([&] { x.at({0}); }, "index has 1 entries for a 2-d tensor");
  expect_error([&] { x.select(2, 0); }, "dim 2 out of range [-2, 1]");
  expect_error([&] { x.data_ptr<double>(); }, "tensor has dtype float32, asked for float64");
}

TEST(Tensor, ConversionBetweenDtypes) {
  Tensor x = tg::tensor({1.5, -2.25});
  Tensor d = x.to(tg::kFloat64);
  EXPECT_EQ(d.dtype(), tg::kFloat64);
  EXPECT_EQ(d.at({1}), -2.25);
  EXPECT_EQ(x.to(tg::kInt64).tolist<int64_t>(), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ((x > 0.0).dtype(), tg::kBool);
}

TEST(Tensor, BroadcastingArithmeticAndItsError) {
  Tensor a = tg::tensor({{1.0}, {2.0}});  // (2,1)
  Tensor b = tg::tensor({10.0, 20.0, 30.0});  // (3)
  Tensor c = a + b;
  EXPECT_EQ(c.sizes(), (Shape{2, 3}));
  EXPECT_EQ(c.at({1, 2}), 32.0);
  EXPECT_EQ((2.0 - a).at({1, 0}), 0.0);
  EXPECT_EQ((1.0 / a).at({1, 0}), 0.5);
  EXPECT_EQ((tg::tensor({1, 2}) + 1).dtype(), tg::kInt64);
  EXPECT_EQ((tg::tensor({1, 2}) + 1.5).dtype(), tg::kFloat32);
  EXPECT_EQ((tg::tensor({1, 2}) / 2).dtype(), tg::kFloat32);
  expect_error([] { tg::ones({3, 4}) + tg::ones({5, 4}); }, "add: shapes (3,4) and (5,4) cannot be broadcast (dim 0: 3 vs 5)");
}

TEST(Tensor, ReductionsWithKeepdim) {
  Tensor x = tg::tensor({{1.0, 5.0, 3.0}, {4.0, 2.0, 6.0}});
  EXPECT_EQ(x.sum(0).tolist<double>(), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(x.sum(1, true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(x.mean().item(), 3.5);
  auto mx = tg::max(x, 1);
  EXPECT_EQ(mx.values.tolist<double>(), (std::vector<double>{5, 6}));
  EXPECT_EQ(mx.indices.tolist<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(tg::argmax(x).item<int64_t>(), 5);
  EXPECT_EQ(tg::min(x).item(), 1.0);
  EXPECT_NEAR(x.var(1).at({0}), 4.0, 1e-6);
  EXPECT_NEAR(x.var(1, false).at({0}), 8.0 / 3.0, 1e-6);
  expect_error([&] { x.sum(2); }, "sum: dim 2 out of range [-2, 1]");
}

TEST(Tensor, AllcloseUsesAtolPlusRtolTimesReference) {
  Tensor ref = tg::tensor({100.0, 0.0});
  EXPECT_TRUE(tg::allclose(tg::tensor({100.0005, 0.0}), ref, 1e-5, 1e-8));
  EXPECT_FALSE(tg::allclose(tg::tensor({100.01, 0.0}), ref, 1e-5, 1e-8));
  EXPECT_FALSE(tg::allclose(tg::tensor({NAN}), tg::tensor({NAN})));
  EXPECT_TRUE(tg::allclose(tg::tensor({NAN}), tg::tensor({NAN}), 1e-5, 1e-8, true));
}

TEST(Tensor, PrintsInPyTorchFormat) {
  Tensor x = tg::tensor({{0.43, 0.15}, {2.0, -tg::kInf}});
  EXPECT_EQ(tg::repr(x), "tensor([[0.4300, 0.1500],\n        [2.0000,   -inf]])");
  Tensor w = tg::ones({2}, tg::kFloat64).requires_grad_();
  EXPECT_EQ(tg::repr(w), "tensor([1., 1.], dtype=torch.float64, requires_grad=True)");
  EXPECT_EQ(tg::repr(w * 2.0), "tensor([2., 2.], dtype=torch.float64, grad_fn=<MulBackward0>)");
}

}  // namespace

// The public Tensor shows the API only: its TensorImpl, storage and raw constructor are internal
// (autograd/internal.h), so a user cannot cut a tensor from the tape by accident.
template <class T> concept ReachesImpl = requires(const T& t) { t.impl(); };
template <class T> concept ReachesStorage = requires(const T& t) { t.storage(); };
template <class T> concept BuiltFromPointer = requires(std::shared_ptr<tg::TensorImpl> p) { T(p); };
static_assert(!ReachesImpl<tg::Tensor>);
static_assert(!ReachesStorage<tg::Tensor>);
static_assert(!BuiltFromPointer<tg::Tensor>);
