// add_ and mul_ write into self's own buffer (autograd/ops/into_self.h): the same bits as add and
// mul, no temporary of self's size; and the cases that cannot (a non-contiguous self, an other
// sharing self's memory, a result of another dtype) still give add's and mul's values.
#include <gtest/gtest.h>

#include <vector>

#include "autograd/ops.h"
#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.to(kFloat64).tolist<double>() == b.to(kFloat64).tolist<double>();
}

TEST(IntoSelf, AddAndMulGiveTheOutOfPlaceBitsForEveryFloatingDtype) {
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16}) {
    Generator gen(7);
    const Tensor x = randn({33, 17}, &gen).to(dt), row = randn({17}, &gen).to(dt), same = randn({33, 17}, &gen).to(dt);
    for (const Tensor& other : {row, same}) {
      Tensor a = x.clone();
      a.add_(other, 0.37);
      EXPECT_TRUE(same_bits(a, add(x, other, 0.37))) << dtype_name(dt);
      Tensor b = x.clone();
      b.add_(other);
      EXPECT_TRUE(same_bits(b, add(x, other))) << dtype_name(dt);
    }
    Tensor c = x.clone();
    c.mul_(-1.7);
    EXPECT_TRUE(same_bits(c, mul(x, -1.7))) << dtype_name(dt);
    Tensor d = x.clone();
    d.add_(d);  // other is self: it shares self's memory, so the sum is made apart and copied in
    EXPECT_TRUE(same_bits(d, add(x, x))) << dtype_name(dt);
  }
}

TEST(IntoSelf, AGradientSumAndAClipAllocateNothing) {
  Generator gen(3);
  Tensor grad = randn({1000, 64}, &gen);
  const Tensor more = randn({1000, 64}, &gen);
  const MemoryStats before = memory_stats();
  reset_peak_memory_stats();
  grad.add_(more);
  grad.mul_(0.5);
  const int64_t temporaries = memory_stats().peak_bytes - before.live_bytes;
  EXPECT_LE(temporaries, 8) << "at most the number 0.5 as a 0-d tensor, not a copy of the 256,000-byte gradient";
}

TEST(IntoSelf, WhatCannotBeWrittenInPlaceStillGivesTheOutOfPlaceValues) {
  Generator gen(5);
  const Tensor x = randn({8, 6}, &gen);
  // self not contiguous
  Tensor t = x.clone().t();
  const Tensor other = randn({6, 8}, &gen);
  t.add_(other, 2.0);
  EXPECT_TRUE(same_bits(t, add(x.t(), other, 2.0)));
  // other overlaps self shifted by one row: every element reads other's value from before the write
  Tensor base = x.clone();
  Tensor head = base.narrow(0, 1, 7), tail = base.narrow(0, 0, 7);
  head.add_(tail);
  EXPECT_TRUE(same_bits(head, add(x.narrow(0, 1, 7), x.narrow(0, 0, 7))));
  // a float32 self with a float64 tensor: the sum is float64, rounded into float32
  Tensor f = x.clone();
  const Tensor wide = randn({8, 6}, &gen).to(kFloat64);
  f.add_(wide);
  EXPECT_TRUE(same_bits(f, add(x, wide).to(kFloat32)));
  // integers keep their exact arithmetic
  Tensor i = arange(0, 10);
  i.mul_(3);
  EXPECT_EQ(i.tolist<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9, 12, 15, 18, 21, 24, 27}));
}

TEST(IntoSelf, TheTapeSeesTheWriteAsBefore) {
  Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_(true);
  Tensor y = w * 2.0;  // not a leaf: may be written in place
  y.add_(tensor({1.0, 1.0, 1.0}), 3.0);
  y.mul_(0.5);
  y.sum().backward();
  EXPECT_EQ(w.grad().tolist<double>(), (std::vector<double>{1.0, 1.0, 1.0}));  // d(0.5 (2w + 3))/dw
  EXPECT_THROW(w.add_(tensor({1.0, 1.0, 1.0})), Error) << "a leaf that requires grad";
  Tensor e = (w * 1.0).exp();  // saves its output
  e.mul_(2.0);
  EXPECT_THROW(e.sum().backward(), Error) << "exp's saved output was written";
}

}  // namespace
}  // namespace tg
