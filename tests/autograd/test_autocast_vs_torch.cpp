// matmul under AutocastGuard(kBFloat16) against PyTorch 1.13 (tests/reference/
// make_autocast_reference.py -> autocast_torch.json), forward and both gradients, on the fast and
// the reference path:
//   - against tapegrad's definition run in PyTorch (inputs and incoming gradient rounded to
//     bfloat16, float32 sums, float32 results): equal to float32 accumulation's rounding;
//   - against torch.autocast itself, whose results are bfloat16 (rounded once, and for dot, mv and
//     a gradient summed over a batch, summed in bfloat16 along the way: several bfloat16 steps
//     from the exact value): both against the exact (float64) products of the same rounded
//     values, tapegrad's largest error is at most 1/20 of PyTorch's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autocast.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "test_util.h"

namespace tg {
namespace {

using test::all_close;
using test::decode_reference;

const json::Value& reference() {
  static const json::Value doc = json::parse_file(TG_REFERENCE_DIR "/autocast_torch.json");
  return doc;
}

struct Results {
  Tensor out, da, db;
};

Results run_case(const json::Value& c) {
  Tensor a = test::leaf(decode_reference(c["a"])), b = decode_reference(c["b"]);
  if (c["b_transposed"].as_bool()) b = b.transpose(-2, -1).contiguous().transpose(-2, -1);  // as PyTorch stored it
  b = test::leaf(b);
  Tensor out;
  {
    AutocastGuard autocast(kBFloat16);
    out = matmul(a, b);
  }
  out.backward(decode_reference(c["g"]));
  return {out.detach(), a.grad(), b.grad()};
}

class AutocastVsTorch : public ::testing::TestWithParam<bool> {};  // fast kernels on / off

TEST_P(AutocastVsTorch, MatchesTheDefinitionRunInPyTorch) {
  FastKernelsGuard mode(GetParam());
  for (const json::Value& c : reference()["cases"].as_array()) {
    SCOPED_TRACE(c["name"].as_string());
    const Results r = run_case(c);
    const json::Value& want = c["emulated"];
    // float32 sums of up to ~130 products of values about 1, in another order than PyTorch's
    EXPECT_TRUE(all_close(r.out, decode_reference(want["out"]), 2e-5, 1e-5)) << "out";
    EXPECT_TRUE(all_close(r.da, decode_reference(want["da"]), 2e-5, 1e-5)) << "da";
    EXPECT_TRUE(all_close(r.db, decode_reference(want["db"]), 2e-5, 1e-5)) << "db";
  }
}

// The exact products of the rounded values: float64 on bf16(a), bf16(b), bf16(g).
Results exact_case(const json::Value& c) {
  auto rounded64 = [](const Tensor& t) { return t.to(kBFloat16).to(kFloat64); };
  const Tensor a = test::leaf(rounded64(decode_reference(c["a"]))), b = test::leaf(rounded64(decode_reference(c["b"])));
  const Tensor out = matmul(a, b);
  out.backward(rounded64(decode_reference(c["g"])));
  return {out.detach(), a.grad(), b.grad()};
}

double max_error(const Tensor& got, const Tensor& exact) {
  return (got.to(kFloat64) - exact).abs().max().item<double>();
}

TEST_P(AutocastVsTorch, MoreExactThanTorchAutocast) {
  FastKernelsGuard mode(GetParam());
  for (const json::Value& c : reference()["cases"].as_array()) {
    SCOPED_TRACE(c["name"].as_string());
    const Results r = run_case(c), exact = exact_case(c);
    const json::Value& torch = c["autocast"];
    const std::vector<std::pair<const char*, std::pair<Tensor, Tensor>>> results = {
        {"out", {r.out, exact.out}}, {"da", {r.da, exact.da}}, {"db", {r.db, exact.db}}};
    for (const auto& [name, ours_and_exact] : results) {
      const double ours = max_error(ours_and_exact.first, ours_and_exact.second);
      const double theirs = max_error(decode_reference(torch[name]), ours_and_exact.second);
      EXPECT_LE(ours, theirs / 20) << name << ": tapegrad's largest error " << ours << ", torch.autocast's " << theirs;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FastAndReference, AutocastVsTorch, ::testing::Bool(),
                         [](const auto& info) { return info.param ? std::string("fast") : std::string("reference"); });

}  // namespace
}  // namespace tg
