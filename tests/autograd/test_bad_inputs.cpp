// Bad and edge inputs: sizes that overflow, numbers an element type cannot hold, view bounds
// that overflow, and int64 arithmetic that wraps as PyTorch's does. Each is a clear tg::Error
// (checked by its message) or the value PyTorch gives, never undefined behaviour.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/print_format.h"
#include "autograd/random/random_kernels.h"
#include "test_util.h"

// The test binary's AddressSanitizer options. Its runtime calls this function where it is linked
// in (TG_SANITIZE=ON); elsewhere nothing calls it. Under TG_SANITIZE the tests' own code is not
// instrumented (tests/CMakeLists.txt), so no compiler macro would say so here.
//   - allocator_may_return_null=1: ASan aborts on an allocation it cannot serve; a real allocator
//     returns null, which is what the out-of-memory test checks.
//   - detect_container_overflow=0: libc++ marks the unused capacity of a std::vector for ASan in
//     instrumented code only, so a vector the tests' code grew and the library reads looks
//     overflowed (a false report, as ASan's documentation says of mixed code). The example
//     programs the tests start are instrumented whole and keep the check.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:detect_container_overflow=0"; }

namespace tg {
namespace {

using test::error_of;
using test::has_part;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// --- sizes ---------------------------------------------------------------------------------------

TEST(SizeOverflow, EyeOfTwoToThe31IsAStorageOverflowNotACrash) {
  const std::string e = error_of([] { eye(1LL << 31); });
  EXPECT_TRUE(has_part(e, "eye: storage size overflows: shape (2147483648,2147483648)"));
}

TEST(SizeOverflow, ZerosOfTwoToThe62IsAStorageOverflowNotATinyBuffer) {
  const std::string e = error_of([] { zeros({1LL << 62}); });
  EXPECT_TRUE(has_part(e, "zeros: storage size overflows: shape (4611686018427387904) of float32"));
  EXPECT_TRUE(has_part(error_of([] { ones({1LL << 62}, kInt64); }), "ones: storage size overflows"));
  EXPECT_TRUE(has_part(error_of([] { full({1LL << 61}, 1.0, kFloat64); }), "full: storage size overflows"));
}

TEST(SizeOverflow, EmptyWhoseElementCountWrapsToZeroIsRefused) {
  const std::string e = error_of([] { empty({1LL << 32, 1LL << 32}); });
  EXPECT_TRUE(has_part(e, "empty: storage size overflows: shape (4294967296,4294967296)"));
  // three sizes whose product wraps to a small positive number
  EXPECT_TRUE(has_part(error_of([] { empty({3, 1LL << 62, 4}); }), "storage size overflows"));
}

TEST(SizeOverflow, AnEmptyTensorWithHugeOtherSizesIsFine) {
  Tensor t = empty({0, 1LL << 40, 1LL << 40});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.sizes(), (Shape{0, 1LL << 40, 1LL << 40}));
}

TEST(SizeOverflow, NegativeSizesAreRefusedWithTheSize) {
  EXPECT_TRUE(has_part(error_of([] { zeros({2, -3}); }), "zeros: negative size -3 in shape (2,-3)"));
  EXPECT_TRUE(has_part(error_of([] { empty({-1}); }), "empty: negative size -1 in shape (-1)"));
  EXPECT_TRUE(has_part(error_of([] { shape_numel({4, -2}); }), "negative size -2"));
}

TEST(SizeOverflow, ShapeNumelOverflowIsAnError) {
  EXPECT_TRUE(has_part(error_of([] { shape_numel({1LL << 32, 1LL << 32}); }),
                       "shape_numel: number of elements overflows int64: shape (4294967296,4294967296)"));
  EXPECT_EQ(shape_numel({1LL << 31, 1LL << 31}), 1LL << 62);
}

TEST(SizeOverflow, ATooLargeButValidRequestIsOutOfMemoryNamingTheBytes) {
  // 2^50 bytes (1 PiB): a valid size that no allocator can serve here
  const std::string e = error_of([] { empty({1LL << 47}, kFloat64); });
  EXPECT_TRUE(has_part(e, "empty: out of memory: cannot allocate 1125899906842624 bytes for shape (140737488355328) of float64"));
}

TEST(SizeOverflow, ExpandToAHugeShapeIsAViewButItsCountMustFit) {
  Tensor big = zeros({1}).expand({1LL << 40});
  EXPECT_EQ(big.numel(), 1LL << 40);
  EXPECT_EQ(big.stride(0), 0);
  Tensor big2 = zeros({1, 1}).expand({1LL << 31, 1LL << 31});
  EXPECT_EQ(big2.numel(), 1LL << 62);
  const std::string e = error_of([] { zeros({1, 1}).expand({1LL << 32, 1LL << 32}); });
  EXPECT_TRUE(has_part(e, "expand: number of elements overflows int64: shape (4294967296,4294967296)"));
}

TEST(SizeOverflow, ViewReshapeAndFlattenWithOverflowingProductsAreErrors) {
  Tensor x = zeros({4});
  // 2^32 * 2^32 * 0 would wrap to 0 == numel of an empty tensor; 2^32 * 2^32 wraps to 0 as well
  EXPECT_TRUE(has_part(error_of([&] { x.view({1LL << 32, 1LL << 32, 4}); }),
                       "view: shape '(4294967296,4294967296,4)' is invalid for input of size 4 (its number of "
                       "elements overflows int64)"));
  Tensor e = zeros({0});
  EXPECT_TRUE(has_part(error_of([&] { e.view({1LL << 32, 1LL << 32, 0}); }), "overflows int64"));
  EXPECT_TRUE(has_part(error_of([&] { e.reshape({1LL << 32, 1LL << 32, 0}); }), "reshape: shape"));
  EXPECT_TRUE(has_part(error_of([&] { x.view({-1, 1LL << 32, 1LL << 32}); }), "overflows int64"));
  Tensor wide = empty({0, 1LL << 40, 1LL << 40});
  EXPECT_TRUE(has_part(error_of([&] { wide.flatten(1); }),
                       "flatten: dims 1..2 of shape (0,1099511627776,1099511627776) hold more elements than int64"));
}

TEST(SizeOverflow, CatWhoseSizesAddPastInt64IsAnError) {
  Tensor half = zeros({1}).expand({1LL << 62});
  EXPECT_TRUE(has_part(error_of([&] { cat({half, half}); }),
                       "cat: the concatenated size along dim 0 overflows int64 (tensor 1 of shape (4611686018427387904))"));
}

TEST(SizeOverflow, ReducingAnEmptyTensorWithHugeOtherSizesIsAnErrorNotUB) {
  Tensor e = empty({0, 1LL << 40, 1LL << 40});
  EXPECT_TRUE(has_part(error_of([&] { sum(e, 0); }),
                       "split_at_dim: the sizes before or after dim 0 of shape (0,1099511627776,1099511627776) hold more"));
}

// --- numbers an element type cannot hold ---------------------------------------------------------

TEST(CheckedCast, FullOfInfinityAsInt64IsAnError) {
  EXPECT_TRUE(has_part(error_of([] { full({2}, kInf, kInt64); }),
                       "full: value inf cannot be converted to type int64 without overflow"));
  EXPECT_TRUE(has_part(error_of([] { full({2}, kNan, kInt64); }), "full: value nan cannot be converted"));
  EXPECT_TRUE(has_part(error_of([] { full({2}, 1e30, kInt64); }), "full: value 1e+30 cannot be converted"));
  // the largest double below 2^63 fits; 2^63 itself does not
  EXPECT_EQ(full({1}, 9223372036854774784.0, kInt64).item<int64_t>(), 9223372036854774784LL);
  EXPECT_TRUE(has_part(error_of([] { full({1}, 9223372036854775808.0, kInt64); }), "value 9223372036854775808"));
  EXPECT_EQ(full({1}, -9223372036854775808.0, kInt64).item<int64_t>(), INT64_MIN);
}

TEST(CheckedCast, FillOfInfNanOrHugeOnInt64IsAnError) {
  Tensor t = zeros({3}, kInt64);
  EXPECT_TRUE(has_part(error_of([&] { t.fill_(kInf); }), "fill_: value inf cannot be converted to type int64"));
  EXPECT_TRUE(has_part(error_of([&] { t.fill_(-kInf); }), "fill_: value -inf cannot be converted"));
  EXPECT_TRUE(has_part(error_of([&] { t.fill_(kNan); }), "fill_: value nan cannot be converted"));
  EXPECT_TRUE(has_part(error_of([&] { t.fill_(1e30); }), "fill_: value 1e+30 cannot be converted"));
  EXPECT_EQ(t.tolist<int64_t>(), (std::vector<int64_t>{0, 0, 0}));  // untouched
  EXPECT_EQ(t._version(), 0u);
}

TEST(CheckedCast, FillAndFullOfAFiniteValuePastFloatRangeAreErrorsButInfIsFine) {
  // PyTorch: "value cannot be converted to type float without overflow"
  EXPECT_TRUE(has_part(error_of([] { full({2}, 1e300); }), "full: value 1e+300 cannot be converted to type float32"));
  Tensor t = zeros({2});
  EXPECT_TRUE(has_part(error_of([&] { t.fill_(1e300); }), "fill_: value 1e+300"));
  EXPECT_TRUE(std::isinf(full({1}, kInf).item<float>()));
  EXPECT_TRUE(std::isnan(full({1}, kNan).item<float>()));
  // a scalar operand past float's range rounds to inf, as PyTorch's x * 1e300
  EXPECT_TRUE(std::isinf(mul(ones({1}), 1e300).item<float>()));
}

TEST(CheckedCast, MaskedFillOfMinusInfOnInt64IsAnError) {
  Tensor x = arange(4);
  Tensor mask = tensor({true, false, true, false});
  EXPECT_TRUE(has_part(error_of([&] { masked_fill(x, mask, -kInf); }),
                       "masked_fill: value -inf cannot be converted to type int64 without overflow"));
  EXPECT_TRUE(has_part(error_of([&] { x.masked_fill_(mask, kNan); }), "masked_fill: value nan"));
  EXPECT_EQ(masked_fill(x, mask, -7.0).tolist<int64_t>(), (std::vector<int64_t>{-7, 1, -7, 3}));
}

TEST(CheckedCast, ToInt64OfNanInfOrHugeNamesTheValueAndIndex) {
  Tensor x = tensor({1.5, -2.5, kNan});
  EXPECT_TRUE(has_part(error_of([&] { x.to(kInt64); }),
                       "to: value nan at index 2 cannot be converted to type int64 without overflow"));
  EXPECT_TRUE(has_part(error_of([] { tensor({0.0, 1e30}, kFloat64).to(kInt64); }), "to: value 1e+30 at index 1"));
  EXPECT_TRUE(has_part(error_of([] { tensor({-kInf}, kFloat32).to(kInt64); }), "to: value -inf at index 0"));
  // a strided source: the index is the element's row-major position
  Tensor m = tensor({{1.0, kInf}, {3.0, 4.0}}).t();  // [[1, 3], [inf, 4]]
  EXPECT_TRUE(has_part(error_of([&] { m.to(kInt64); }), "to: value inf at index 2"));
  EXPECT_EQ(tensor({1.9, -1.9}).to(kInt64).tolist<int64_t>(), (std::vector<int64_t>{1, -1}));  // truncates
  EXPECT_EQ(tensor({kNan, 0.0}).to(kBool).tolist<bool>(), (std::vector<bool>{true, false}));
}

TEST(CheckedCast, CopyOfNonFiniteFloatsIntoInt64IsAnError) {
  Tensor dst = zeros({2}, kInt64);
  EXPECT_TRUE(has_part(error_of([&] { dst.copy_(tensor({1.0, kInf})); }),
                       "copy_: value inf at index 1 cannot be converted to type int64"));
}

TEST(CheckedCast, FromVectorOfUnrepresentableValuesNamesTheIndex) {
  EXPECT_TRUE(has_part(error_of([] { from_vector(std::vector<double>{1.0, 2.0, kNan}, {3}, kInt64); }),
                       "from_vector: value nan at index 2 cannot be converted to type int64 without overflow"));
  EXPECT_EQ(from_vector(std::vector<double>{-3.0, 4.0}, {2}, kInt64).tolist<int64_t>(),
            (std::vector<int64_t>{-3, 4}));
}

TEST(CheckedCast, ArangeValuesPastInt64AreAnError) {
  // 2^63 - 2048 fits, one step further (2^63) does not
  const double last = 9223372036854773760.0;
  Tensor ok = arange(last - 2048.0, last + 1024.0, 2048.0, kInt64);
  EXPECT_EQ(ok.tolist<int64_t>().back(), 9223372036854773760LL);
  EXPECT_TRUE(has_part(error_of([&] { arange(last, last + 4096.0, 2048.0, kInt64); }),
                       "arange: value 9223372036854775808 cannot be converted to type int64"));
}

TEST(CheckedCast, IntegerScalarsKeepTheirExactValue) {
  // an integer Scalar is not rounded through a double: 2^53 + 1 and INT64_MAX stay exact
  const int64_t odd = (1LL << 53) + 1;
  EXPECT_EQ(full({1}, odd, kInt64).item<int64_t>(), odd);
  EXPECT_EQ(full({1}, LLONG_MAX, kInt64).item<int64_t>(), INT64_MAX);
  Tensor x = zeros({2}, kInt64);
  EXPECT_EQ(add(x, LLONG_MAX).tolist<int64_t>(), (std::vector<int64_t>{INT64_MAX, INT64_MAX}));
  EXPECT_EQ(eq(add(x, odd), odd).tolist<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(masked_fill(x, tensor({true, false}), LLONG_MIN).tolist<int64_t>(), (std::vector<int64_t>{INT64_MIN, 0}));
  x.fill_(odd);
  EXPECT_EQ(x.tolist<int64_t>(), (std::vector<int64_t>{odd, odd}));
  EXPECT_EQ(add(zeros({1}, kInt64), ones({1}, kInt64), odd).item<int64_t>(), odd);  // alpha too
  EXPECT_EQ(sub(zeros({1}, kInt64), ones({1}, kInt64), LLONG_MIN).item<int64_t>(), INT64_MIN);  // -INT64_MIN wraps
}

TEST(CheckedCast, ReadingAFloatElementAsAnIntegerIsChecked) {
  Tensor x = tensor({{1.0, 2.0}, {kNan, 4.0}});
  EXPECT_TRUE(has_part(error_of([&] { x.at<int64_t>({1, 0}); }), "at: value nan at index 2 cannot be converted"));
  EXPECT_TRUE(has_part(error_of([&] { x.tolist<int64_t>(); }), "tolist: value nan at index 2"));
  EXPECT_TRUE(has_part(error_of([] { tensor({kInf}).item<int64_t>(); }), "item: value inf at index 0"));
  EXPECT_EQ(x.at<int64_t>({-1, -1}), 4);
}

TEST(CheckedCast, FractionalAlphaOnIntegerTensorsIsAnErrorNamingAlpha) {
  Tensor a = arange(3), b = arange(3);
  EXPECT_TRUE(has_part(error_of([&] { add(a, b, 0.5); }),
                       "add: for integral input tensors, argument alpha must not be a floating point number, got 0.5"));
  EXPECT_TRUE(has_part(error_of([&] { sub(a, b, 1.5); }), "sub: for integral input tensors, argument alpha"));
  EXPECT_TRUE(has_part(error_of([&] { a.add_(b, 2.5); }), "add: for integral input tensors, argument alpha"));
  EXPECT_TRUE(has_part(error_of([&] { add(a, b, 1e30); }), "add: value 1e+30 cannot be converted to type int64"));
  EXPECT_EQ(add(a, b, 2).tolist<int64_t>(), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(add(a, b, 2.0).tolist<int64_t>(), (std::vector<int64_t>{0, 3, 6}));  // a whole alpha is fine
  EXPECT_EQ(sub(a, b, 3).tolist<int64_t>(), (std::vector<int64_t>{0, -2, -4}));
  // floating tensors take any alpha
  EXPECT_EQ(add(tensor({1.0}), tensor({1.0}), 0.5).item<float>(), 1.5f);
}

// --- view bounds ---------------------------------------------------------------------------------

TEST(ViewBounds, NarrowWithAHugeLengthIsAnErrorNotAnEmptyView) {
  Tensor x = zeros({3});
  EXPECT_TRUE(has_part(error_of([&] { x.narrow(0, 1, INT64_MAX); }),
                       "narrow: start (1) + length (9223372036854775807) exceeds dimension size (3) of dim 0"));
  EXPECT_TRUE(has_part(error_of([&] { x.narrow(0, 4, 0); }), "narrow: start (4) + length (0) exceeds"));
  EXPECT_TRUE(has_part(error_of([&] { x.narrow(0, INT64_MIN, 1); }), "narrow: start ("));
  EXPECT_EQ(x.narrow(0, 3, 0).numel(), 0);
  EXPECT_EQ(x.narrow(0, -1, 1).numel(), 1);
}

TEST(ViewBounds, SliceWithHugeStartEndOrStepIsSafe) {
  Tensor x = arange(4);
  // PyTorch 1.13 gives an empty tensor for x[::INT64_MAX] (its size computation wraps); the
  // first element is the right answer
  EXPECT_EQ(x.slice(0, 0, std::nullopt, INT64_MAX).tolist<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(x.slice(0, 1, INT64_MAX, INT64_MAX - 1).tolist<int64_t>(), (std::vector<int64_t>{1}));
  EXPECT_EQ(x.slice(0, INT64_MIN, INT64_MAX).tolist<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(x.slice(0, INT64_MAX, INT64_MIN).numel(), 0);
  EXPECT_EQ(x.slice(0, -2, std::nullopt, 3).tolist<int64_t>(), (std::vector<int64_t>{2}));
  EXPECT_EQ(x.slice(0, 0, std::nullopt, 3).tolist<int64_t>(), (std::vector<int64_t>{0, 3}));
}

TEST(ViewBounds, ExpandRejectsNegativeTargetSizesUpFront) {
  Tensor x = zeros({1});
  EXPECT_TRUE(has_part(error_of([&] { x.expand({-2}); }),
                       "expand: the target size -2 at dim 0 is invalid (sizes are >= 0, or -1 to keep the existing "
                       "size).  Target sizes: (-2)"));
  EXPECT_TRUE(has_part(error_of([&] { x.expand({2, -5}); }), "expand: the target size -5 at dim 1 is invalid"));
  EXPECT_TRUE(has_part(error_of([&] { x.expand({-1, 1}); }), "expand: -1 is not allowed in a leading"));
  EXPECT_EQ(x.expand({3, -1}).sizes(), (Shape{3, 1}));
  EXPECT_EQ(x.expand({0}).numel(), 0);
}

TEST(ViewBounds, ArangeWithInfNanOrTooManyElementsSaysSo) {
  EXPECT_TRUE(has_part(error_of([] { arange(0, kInf); }),
                       "arange: unsupported range: 0 -> inf with step 1 (start, end and step must be finite)"));
  EXPECT_TRUE(has_part(error_of([] { arange(0, kNan); }), "arange: unsupported range: 0 -> nan"));
  EXPECT_TRUE(has_part(error_of([] { arange(-kInf, 0); }), "arange: unsupported range: -inf -> 0"));
  EXPECT_TRUE(has_part(error_of([] { arange(0, 10, kInf); }), "with step inf (start, end and step must be finite)"));
  EXPECT_TRUE(has_part(error_of([] { arange(0.0, 1e30, 1.0); }),
                       "arange: unsupported range: 0 -> 1e+30 with step 1 has 1e+30 elements, more than int64 can count"));
  // a count that fits int64 but not memory is a storage error, not a negative size
  EXPECT_TRUE(has_part(error_of([] { arange(0.0, 5e18, 1.0); }), "arange: storage size overflows"));
}

// --- int64 arithmetic wraps (as PyTorch), without undefined behaviour ------------------------------

Tensor int64s(std::vector<int64_t> v) { return from_vector(v, {static_cast<int64_t>(v.size())}); }

TEST(WrappingArithmetic, Int64AddSubMulNegWrapAsPyTorch) {
  const Tensor max = int64s({INT64_MAX}), min = int64s({INT64_MIN}), one = int64s({1}), minus_one = int64s({-1});
  EXPECT_EQ((max + one).item<int64_t>(), INT64_MIN);
  EXPECT_EQ(add(max, 1).item<int64_t>(), INT64_MIN);
  EXPECT_EQ((min - one).item<int64_t>(), INT64_MAX);
  EXPECT_EQ(sub(min, 1).item<int64_t>(), INT64_MAX);
  EXPECT_EQ(rsub(one, 0).item<int64_t>(), -1);
  EXPECT_EQ((min * minus_one).item<int64_t>(), INT64_MIN);
  EXPECT_EQ(mul(min, -1).item<int64_t>(), INT64_MIN);
  EXPECT_EQ((max * int64s({2})).item<int64_t>(), -2);
  EXPECT_EQ(neg(min).item<int64_t>(), INT64_MIN);
  EXPECT_EQ(add(max, max, 2).item<int64_t>(), 9223372036854775805LL);  // max + 2*max wraps twice
  EXPECT_EQ(sub(min, max).item<int64_t>(), 1);
}

TEST(WrappingArithmetic, Int64InPlaceOpsWrap) {
  Tensor x = int64s({INT64_MAX, 5});
  x.add_(int64s({1, 1}));
  EXPECT_EQ(x.tolist<int64_t>(), (std::vector<int64_t>{INT64_MIN, 6}));
  x.sub_(int64s({1, 1}));
  EXPECT_EQ(x.tolist<int64_t>(), (std::vector<int64_t>{INT64_MAX, 5}));
  x.mul_(int64s({2, 2}));
  EXPECT_EQ(x.tolist<int64_t>(), (std::vector<int64_t>{-2, 10}));
}

TEST(WrappingArithmetic, Int64SumWrapsAsPyTorch) {
  // torch.tensor([2**62, 2**62]).sum() == -2**63
  EXPECT_EQ(int64s({1LL << 62, 1LL << 62}).sum().item<int64_t>(), INT64_MIN);
  EXPECT_EQ(int64s({INT64_MIN, -1}).sum().item<int64_t>(), INT64_MAX);
  Tensor m = from_vector(std::vector<int64_t>{INT64_MAX, 1, INT64_MAX, 2}, {2, 2});
  EXPECT_EQ(m.sum(0).tolist<int64_t>(), (std::vector<int64_t>{-2, 3}));
  EXPECT_EQ(m.sum(1).tolist<int64_t>(), (std::vector<int64_t>{INT64_MIN, INT64_MIN + 1}));
}

// --- printing huge tensors -----------------------------------------------------------------------

// PyTorch's repr of each case in tests/reference/inputs_torch.json (made by make_inputs_reference.py).
std::string torch_repr(const std::string& name) {
  const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/inputs_torch.json");
  for (const json::Value& c : doc["cases"].as_array())
    if (c["name"].as_string() == name) return c["repr"].as_string();
  ADD_FAILURE() << "no case " << name << " in inputs_torch.json";
  return "";
}

void expect_prints_as_torch(const Tensor& t, const std::string& name) {
  EXPECT_EQ(repr(t), torch_repr(name)) << "case " << name;
}

TEST(PrintLarge, AnExpandedTwoToThe40TensorPrintsTorchsSummary) {
  expect_prints_as_torch(zeros({1}).expand({1LL << 40}), "expand_2pow40");
  expect_prints_as_torch(arange(0.0, 1 << 20, 1.0).expand({1 << 20, 1 << 20}), "expand_rows_2pow20");
  expect_prints_as_torch(arange(0.0, 7.0, 1.0).reshape({7, 1, 1, 1}).expand({7, 8, 9, 10}), "expand_4d");
  expect_prints_as_torch(tensor({true, false, true, false, true}).expand({3000, 5}), "bool_expand_3000x5");
}

TEST(PrintLarge, BigViewsOfModestMemoryPrintTorchsSummary) {
  expect_prints_as_torch(div(arange(0.0, 1e6, 1.0).reshape({1000, 1000}), 7.0).narrow(1, 250, 500),
                         "narrow_1000x500");
  expect_prints_as_torch(mul(arange(0.0, 3000.0, 1.0, kFloat64).reshape({60, 50}), 0.001).t(),
                         "float64_transposed_60x50");
}

TEST(PrintLarge, SummarisedContiguousTensorsPrintAsTorch) {
  expect_prints_as_torch(arange(0.0, 2000.0, 1.0), "arange_2000_float");
  expect_prints_as_torch(arange(24000).reshape({20, 30, 40}), "int64_20x30x40");
  expect_prints_as_torch(mul(ones({2000}).requires_grad_(), 2.0), "grad_fn_2000");
  expect_prints_as_torch(mul(arange(0.0, 1001.0, 1.0), 1e-5), "scientific_1001");
}

TEST(PrintLarge, TheEdgesOnlyValuesMatchTheFullValues) {
  // format_repr given every value and given only the summary's edges prints the same
  Tensor t = div(arange(0.0, 3.0 * 500 * 7, 1.0, kFloat64).reshape({3, 500, 7}), 3.0);
  print::Values full;
  full.sizes = t.sizes();
  full.floats = t.tolist<double>();
  EXPECT_EQ(print::format_repr(full, {"dtype=torch.float64"}), repr(t));
  EXPECT_EQ(print::summary_sizes({3, 500, 7}), (std::vector<int64_t>{3, 6, 6}));
  EXPECT_EQ(print::summary_sizes({10, 10}), (std::vector<int64_t>{10, 10}));  // 100 elements: not summarised
}

// --- max / min / argmax: empty inputs and NaN results as PyTorch ---------------------------------

TEST(MaxMinEmpty, ReducingAlongADimWhenAnotherDimIsZeroGivesAnEmptyResult) {
  const Tensor x = zeros({0, 3});
  ValuesIndices m = max(x, 1);
  EXPECT_EQ(m.values.sizes(), (Shape{0}));
  EXPECT_EQ(m.indices.sizes(), (Shape{0}));
  EXPECT_EQ(m.indices.dtype(), kInt64);
  EXPECT_EQ(min(x, 1, true).values.sizes(), (Shape{0, 1}));
  EXPECT_EQ(argmax(x, 1).sizes(), (Shape{0}));
  EXPECT_EQ(max(zeros({2, 0, 3}), 2).values.sizes(), (Shape{2, 0}));
  EXPECT_EQ(min(x, -1).indices.sizes(), (Shape{0}));
}

TEST(MaxMinEmpty, TheGradientOfAnEmptyMaxIsAnEmptyZeroGradient) {
  Tensor x = zeros({0, 3}).requires_grad_();
  max(x, 1).values.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().sizes(), (Shape{0, 3}));
}

TEST(MaxMinEmpty, ReducingADimOfSizeZeroIsAnErrorWithTorchsMessage) {
  const Tensor x = zeros({0, 3});
  EXPECT_TRUE(has_part(error_of([&] { max(x, 0); }), "max(): Expected reduction dim 0 to have non-zero size (input shape (0,3))."));
  EXPECT_TRUE(has_part(error_of([&] { min(x, -2); }), "min(): Expected reduction dim 0 to have non-zero size"));
  EXPECT_TRUE(has_part(error_of([&] { argmax(x, 0); }), "argmax(): Expected reduction dim 0 to have non-zero size"));
  EXPECT_TRUE(has_part(error_of([&] { max(zeros({0}), 0); }), "max(): Expected reduction dim 0 to have non-zero size"));
  EXPECT_TRUE(has_part(error_of([&] { argmax(x); }),
                       "argmax(): Expected reduction dim to be specified for input.numel() == 0 (input shape (0,3))"));
  EXPECT_TRUE(has_part(error_of([&] { max(x); }),
                       "max(): Expected reduction dim to be specified for input.numel() == 0 (input shape (0,3))"));
  EXPECT_TRUE(has_part(error_of([&] { min(x); }), "min(): Expected reduction dim to be specified"));
}

// The gradient of f(x).backward() for a float32 leaf with the given values and shape.
std::vector<float> grad_of(const std::vector<double>& values, const Shape& shape, Tensor (*f)(const Tensor&)) {
  Tensor x = from_vector(values, shape).requires_grad_();
  f(x).backward();
  return x.grad().tolist<float>();
}

TEST(MaxMinNan, TheGradientOfANanMaximumGoesToTheNanElementsSplitEvenly) {
  const double nan = kNan;
  Tensor (*max_all)(const Tensor&) = [](const Tensor& x) { return max(x); };
  Tensor (*min_all)(const Tensor&) = [](const Tensor& x) { return min(x); };
  // torch.max(torch.tensor([1., nan, 3., nan])).backward() -> [0, 0.5, 0, 0.5]
  EXPECT_EQ(grad_of({1, nan, 3, nan}, {4}, max_all), (std::vector<float>{0, 0.5f, 0, 0.5f}));
  EXPECT_EQ(grad_of({1, nan, 3, nan}, {4}, min_all), (std::vector<float>{0, 0.5f, 0, 0.5f}));
  EXPECT_EQ(grad_of({1, nan, nan, 2}, {2, 2}, max_all), (std::vector<float>{0, 0.5f, 0.5f, 0}));
  EXPECT_EQ(grad_of({5, nan, 7}, {3}, max_all), (std::vector<float>{0, 1, 0}));
  EXPECT_EQ(grad_of({5, 7, 7}, {3}, max_all), (std::vector<float>{0, 0.5f, 0.5f}));  // ties still split
}

TEST(MaxMinNan, AlongADimTheGradientGoesToTheFirstNan) {
  const double nan = kNan;
  // torch.max(x, 1) of [[1, nan, nan], [3, 2, 1]]: indices [1, 0], grad [[0, 1, 0], [1, 0, 0]]
  Tensor x = from_vector(std::vector<double>{1, nan, nan, 3, 2, 1}, {2, 3}).requires_grad_();
  ValuesIndices m = max(x, 1);
  EXPECT_EQ(m.indices.tolist<int64_t>(), (std::vector<int64_t>{1, 0}));
  m.values.sum().backward();
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{0, 1, 0, 1, 0, 0}));
  Tensor y = from_vector(std::vector<double>{1, nan, nan, 3, 2, 1}, {2, 3}).requires_grad_();
  min(y, 1).values.sum().backward();
  EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{0, 1, 0, 0, 0, 1}));
}

// --- in-place writes into an expanded tensor ------------------------------------------------------

constexpr const char* kOverlapMessage =
    "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
    "Please clone() the tensor before performing the operation.";

TEST(InPlaceOverlap, WritesIntoAnExpandedTensorAreRefusedWithTorchsMessage) {
  auto expanded = [] { return zeros({1}).expand({3}); };
  const Tensor ones3 = ones({3});
  const std::string message = std::string(": ") + kOverlapMessage;
  EXPECT_TRUE(has_part(error_of([&] { expanded().add_(ones3); }), "add_" + message));
  EXPECT_TRUE(has_part(error_of([&] { expanded().sub_(ones3); }), "add_" + message));
  EXPECT_TRUE(has_part(error_of([&] { expanded().copy_(ones3); }), "copy_" + message));
  EXPECT_TRUE(has_part(error_of([&] { expanded().mul_(ones3); }), "mul_" + message));
  EXPECT_TRUE(has_part(error_of([&] { expanded().mul_(2.0); }), "mul_" + message));
  EXPECT_TRUE(has_part(error_of([&] { expanded().div_(2.0); }), "div_" + message));
  EXPECT_TRUE(has_part(error_of([&] { expanded().masked_fill_(tensor({true, false, false}), 1.0); }),
                       "masked_fill_" + message));
  EXPECT_TRUE(has_part(error_of([&] { expanded().uniform_(0.0, 1.0); }), "uniform_" + message));
  EXPECT_TRUE(has_part(error_of([&] { zeros({2, 1}).expand({2, 4}).mul_(2.0); }), "(dim 1 of shape (2,4) is expanded"));
}

TEST(InPlaceOverlap, NothingIsWrittenWhenTheWriteIsRefused) {
  Tensor base = tensor({5.0f});
  Tensor e = base.expand({3});
  EXPECT_FALSE(error_of([&] { e.add_(ones({3})); }).empty());
  EXPECT_EQ(base.item<float>(), 5.0f);
}

TEST(InPlaceOverlap, FillOfAnExpandedTensorIsAllowedAsInTorch) {
  // torch.zeros(1).expand(3).fill_(2.) -> tensor([2., 2., 2.]); zero_ likewise
  Tensor base = zeros({1});
  base.expand({3}).fill_(2.0);
  EXPECT_EQ(base.item<float>(), 2.0f);
  base.expand({3}).zero_();
  EXPECT_EQ(base.item<float>(), 0.0f);
}

TEST(InPlaceOverlap, WritesIntoABroadcastSizeOneDimAreFine) {
  Tensor x = zeros({2, 1});
  x.expand({2, 1}).add_(ones({2, 1}));  // stride 0 only where the size is 1: no shared element
  EXPECT_EQ(x.tolist<float>(), (std::vector<float>{1, 1}));
}

// --- one error type --------------------------------------------------------------------------------

TEST(OneErrorType, ACorruptRngStateIsCaughtAsATgError) {
  Generator gen(3);
  std::vector<uint8_t> state = gen.get_state();
  state[8] = state[9] = state[10] = state[11] = 0;  // 'left' = 0 is not a valid state
  bool caught = false;
  try {
    gen.set_state(state);
  } catch (const tg::Error& e) {
    caught = true;
    EXPECT_TRUE(has_part(e.what(), "Generator::set_state"));
  }
  EXPECT_TRUE(caught) << "set_state of a corrupt state threw nothing or not a tg::Error";
}

TEST(OneErrorType, JsonRandomKernelAndPrintErrorsAreTgErrors) {
  EXPECT_TRUE(has_part(error_of([] { json::parse("[1, 2", "t.json"); }), "json: t.json"));
  EXPECT_TRUE(has_part(error_of([] { json::parse_file("/nonexistent/x.json"); }), "/nonexistent/x.json: no such file"));
  EXPECT_TRUE(has_part(error_of([] { rng::dropout_scale(1.0); }), "dropout_scale"));
  print::Values v;
  v.sizes = {3};
  v.floats = {1.0};
  EXPECT_TRUE(has_part(error_of([&] { print::format_repr(v, {}); }), "tg::print: shape (3,) has 3 elements but floats holds 1 values"));
}

}  // namespace
}  // namespace tg
