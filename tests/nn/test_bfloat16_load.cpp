// A bfloat16 safetensors file (most published PyTorch weights) into a float32 module: refused
// with a message that says how to convert, and loaded once the tensors are converted.
#include <gtest/gtest.h>

#include "nn/safetensors.h"
#include "nn/nn.h"
#include "test_util.h"

namespace tg::nn {
namespace {

TEST(BFloat16Load, AFloat32ModuleTakesBfloat16WeightsOnlyThroughAnExplicitConversion) {
  test::TempFolder dir;
  Linear source(3, 2);
  NamedTensors weights;
  for (const auto& [name, t] : source.state_dict()) weights.emplace_back(name, t.to(kBFloat16));
  save_safetensors(dir.file("bf16.safetensors"), weights);

  Linear model(3, 2);
  const std::string message = test::error_of([&] { load(model, dir.file("bf16.safetensors")); });
  EXPECT_TRUE(test::has_part(message, "'weight' has dtype bfloat16, expected float32 (convert the bfloat16 tensors "
                                      "first: t = t.to(tg::kFloat32))"));

  NamedTensors converted = load_safetensors(dir.file("bf16.safetensors"));
  for (auto& [name, t] : converted) t = t.to(kFloat32);
  model.load_state_dict(converted);
  EXPECT_EQ(model.weight.tolist<float>(), source.weight.to(kBFloat16).to(kFloat32).tolist<float>());
}

}  // namespace
}  // namespace tg::nn
