// Bad input to the indexing, sorting and splitting ops: each error names the op and the value.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "test_util.h"

namespace tg {
namespace {

using test::error_of;
using test::has_part;

TEST(IndexOps, OutOfRangeIndicesNameTheIndexTheDimAndTheSize) {
  Tensor x = zeros({2, 4});
  EXPECT_EQ(error_of([&] { gather(x, 1, tensor({{0, 4}, {1, 1}})); }),
            "gather: index 4 is out of bounds for dimension 1 with size 4");
  EXPECT_EQ(error_of([&] { gather(x, 1, tensor({{-1}, {0}})); }),
            "gather: index -1 is out of bounds for dimension 1 with size 4");
  EXPECT_EQ(error_of([&] { index_select(x, 0, tensor({0, 2})); }),
            "index_select: index 2 is out of bounds for dimension 0 with size 2");
  EXPECT_TRUE(has_part(error_of([&] { scatter_add(x, 0, tensor({{5, 0}}), ones({1, 2})); }),
                       "scatter_add: index 5 is out of bounds for dimension 0 with size 2"));
}

TEST(IndexOps, IndexShapesAndDtypesAreChecked) {
  Tensor x = zeros({2, 4});
  EXPECT_TRUE(has_part(error_of([&] { gather(x, 1, tensor({0, 1})); }), "gather: index (2) must have as many dims as input (2,4)"));
  EXPECT_TRUE(has_part(error_of([&] { gather(x, 1, tensor({{0}, {1}, {1}})); }), "is larger than input (2,4) in dim 0"));
  EXPECT_TRUE(has_part(error_of([&] { gather(x, 1, tensor({{0.0}, {1.0}})); }), "gather: expected index to have dtype int64"));
  EXPECT_TRUE(has_part(error_of([&] { index_select(x, 1, tensor({{0}})); }), "index_select: index must be 1-d"));
  EXPECT_TRUE(has_part(error_of([&] { gather(x, 2, tensor({{0}, {1}})); }), "gather: dim 2 out of range [-2, 1]"));
}

TEST(SortOps, TopkOfMoreThanTheDimHoldsIsAnError) {
  EXPECT_EQ(error_of([] { topk(zeros({3, 4}), 5); }),
            "topk: k (5) is out of range for dim 1 of size 4 (shape (3,4))");
  EXPECT_TRUE(has_part(error_of([] { topk(zeros({3, 4}), -1, 0); }), "topk: k (-1) is out of range for dim 0"));
  EXPECT_TRUE(has_part(error_of([] { sort(zeros({3}), 1); }), "sort: dim 1 out of range [-1, 0]"));
}

TEST(SortOps, TopkAndSortOfZeroAndOneElementRows) {
  ValuesIndices r = topk(tensor({3.0, 1.0}), 0);
  EXPECT_EQ(r.values.numel(), 0);
  EXPECT_EQ(sort(scalar_tensor(2.0)).values.item(), 2.0);
  EXPECT_EQ(sort(zeros({0, 3}), 1).values.sizes(), (Shape{0, 3}));
}

TEST(SplitOps, SizesThatDoNotAddUpAreNamed) {
  Tensor x = zeros({2, 6});
  EXPECT_EQ(error_of([&] { split(x, std::vector<int64_t>{1, 2}, 1); }),
            "split: split sizes (1,2) add up to 3, but dim 1 has size 6");
  EXPECT_TRUE(has_part(error_of([&] { split(x, 0, 1); }), "split: split_size must be positive"));
  EXPECT_EQ(error_of([&] { chunk(x, 0); }), "chunk: number of chunks must be positive, got 0");
  EXPECT_EQ(error_of([] { split(scalar_tensor(1.0), 1); }), "split: cannot split a 0-d tensor");
}

TEST(SplitOps, ChunkAndSplitGiveViewsOfPyTorchsSizes) {
  Tensor x = arange(0, 10).reshape({10, 1});
  std::vector<Tensor> c = chunk(x, 4);  // ceil(10/4) = 3: pieces 3, 3, 3, 1
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[3].sizes(), (Shape{1, 1}));
  EXPECT_EQ(chunk(zeros({6}), 4).size(), 3u);  // ceil(6/4) = 2: three pieces, not four
  std::vector<Tensor> s = split(x, 4);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[2].sizes(), (Shape{2, 1}));
  EXPECT_TRUE(s[1].is_alias_of(x));
  EXPECT_EQ(s[1].at<int64_t>({0, 0}), 4);
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

TEST(CrossEntropyOptions, BadOptionsAreNamed) {
  Tensor x = zeros({2, 3});
  Tensor t = tensor({0, 2});
  EXPECT_EQ(error_of([&] { cross_entropy(x, t, "avg"); }),
            "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", got \"avg\"");
  EXPECT_TRUE(has_part(error_of([&] { cross_entropy(x, t, "mean", -100, 1.5); }),
                       "cross_entropy: label_smoothing must be between 0.0 and 1.0, got 1.5"));
  EXPECT_TRUE(has_part(error_of([&] { cross_entropy(x, tensor({0, -1})); }), "Target -1 is out of bounds"));
  EXPECT_EQ(cross_entropy(x, tensor({0, -1}), "none", -1).sizes(), (Shape{2}));  // -1 ignored when asked
  EXPECT_TRUE(has_part(error_of([&] { cross_entropy(zeros({2, 4, 3}), tensor({{0, 1, 2, 3}, {0, 1, 2, 3}})); }),
                       "need targets of shape (2,3), got (2,4)"));
}

}  // namespace
}  // namespace tg
