// multinomial(probs, k), with and without replacement: the same indices as torch.multinomial
// from the same seed, and the same number of draws (torch.rand right after matches bit for bit).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/ops.h"

namespace tg {
namespace {

double from_hex(const std::string& hex) { return std::bit_cast<double>(std::stoull(hex, nullptr, 16)); }


const json::Value& cases() {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/multinomial_torch.json");
  return doc["cases"];
}

TEST(MultinomialVsTorch, ManySamplesWithAndWithoutReplacementMatchTorch) {
  const json::Value& all = cases();
  ASSERT_EQ(all.size(), 10u);
  for (size_t i = 0; i < all.size(); ++i) {
    const json::Value& c = all[i];
    const std::string id = c["id"].as_string();
    const ScalarType dtype = c["dtype"].as_string() == "float64" ? kFloat64 : kFloat32;
    std::vector<double> values;
    for (size_t j = 0; j < c["probs"].size(); ++j) values.push_back(from_hex(c["probs"][j].as_string()));
    Shape shape;
    for (size_t j = 0; j < c["shape"].size(); ++j) shape.push_back(c["shape"][j].as_int64());
    Tensor probs = from_vector(values, shape, dtype);
    if (c["transposed"].as_bool()) probs = probs.t().contiguous().t();  // same values, transposed memory
    manual_seed(c["seed"].as_uint64());
    const std::vector<int64_t> got = multinomial(probs, c["k"].as_int64(), c["replacement"].as_bool()).tolist<int64_t>();
    std::vector<int64_t> want;
    for (size_t j = 0; j < c["indices"].size(); ++j) want.push_back(c["indices"][j].as_int64());
    EXPECT_EQ(got, want) << id;
    const std::vector<double> after = rand({3}).tolist<double>();
    for (size_t j = 0; j < 3; ++j) EXPECT_EQ(after[j], from_hex(c["rand_after"][j].as_string())) << id << " draw count";
  }
}

TEST(MultinomialVsTorch, OneSampleIsTheFirstOfSeveral) {
  Tensor probs = softmax(arange(0, 20).to_float() / 7.0, 0);
  Generator a(9), b(9);
  EXPECT_EQ(multinomial(probs, 1, &a).item<int64_t>(), multinomial(probs, 6, &b).tolist<int64_t>()[0]);
}

}  // namespace
}  // namespace tg
