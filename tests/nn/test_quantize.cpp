// tests/nn/test_quantize.cpp — nn::quantize_int8_ (nn/quantize.h) on modules:
//   * every Linear's and Embedding's weight becomes int8 in place, with its scales the buffer
//     weight_scale; norms and biases stay float32, and the output is that of the same module with
//     each weight replaced by its dequantized float32 value, to the bit;
//   * a weight tied to another (a head on its embedding) stays one tensor, quantized once;
//   * a LoRA layer over a quantized base still adds its update;
//   * a non-finite weight is an Error naming it, and leaves the module as it was; a quantized module
//     cannot be saved or converted, with errors that say why.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/layers.h"
#include "nn/lora.h"
#include "nn/quantize.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace tg::nn {
namespace {

// An embedding, a Linear with a bias, and a head tied to the embedding.
struct TinyLM : Module {
  std::shared_ptr<Embedding> wte;
  std::shared_ptr<Linear> fc, head;
  std::shared_ptr<RMSNorm> norm;
  TinyLM() : Module("TinyLM") {
    wte = register_module("wte", std::make_shared<Embedding>(40, 64));
    fc = register_module("fc", std::make_shared<Linear>(64, 64));
    norm = register_module("norm", std::make_shared<RMSNorm>(64));
    head = register_module("head", std::make_shared<Linear>("Linear", wte->weight, Tensor()));
  }
  Tensor forward(const Tensor& ids) override { return head->forward(norm->forward(relu(fc->forward(wte->forward(ids))))); }
};

Tensor some_ids() { return from_vector(std::vector<int64_t>{1, 5, 39, 0, 7, 7}, {2, 3}); }

TEST(QuantizeInt8, TheModuleRunsAsItsDequantizedCopyToTheBit) {
  manual_seed(3);
  TinyLM model, copy;
  copy.load_state_dict(model.state_dict());
  EXPECT_EQ(quantize_int8_(model), 2);  // wte (= head) and fc
  EXPECT_EQ(model.wte->weight.dtype(), kInt8);
  EXPECT_TRUE(model.head->weight.is_same(model.wte->weight));
  EXPECT_EQ(model.head->weight_scale.raw_data(), model.wte->weight_scale.raw_data());  // one tensor's memory
  EXPECT_EQ(model.fc->weight_scale.sizes(), (Shape{64, 2}));
  EXPECT_EQ(model.fc->bias.dtype(), kFloat32);
  EXPECT_EQ(model.norm->weight.dtype(), kFloat32);
  EXPECT_FALSE(model.fc->weight.requires_grad());
  const NamedTensors buffers = model.named_buffers();
  ASSERT_EQ(buffers.size(), 3u);
  EXPECT_EQ(buffers[0].first, "wte.weight_scale");
  // the float32 copy with the dequantized weights
  {
    NoGradGuard no_grad;
    copy.wte->weight.copy_(dequantize_int8(model.wte->weight, model.wte->weight_scale));
    copy.fc->weight.copy_(dequantize_int8(model.fc->weight, model.fc->weight_scale));
  }
  EXPECT_TRUE(test::same_bytes(model.forward(some_ids()), copy.forward(some_ids())));
  EXPECT_EQ(quantize_int8_(model), 0);  // already int8: nothing to do
  EXPECT_TRUE(test::same_bytes(model.forward(some_ids()), copy.forward(some_ids())));
}

TEST(QuantizeInt8, ALoRALayerOverAQuantizedBase) {
  manual_seed(4);
  auto base = std::make_shared<Linear>(64, 32);
  const Tensor x = test::normal_tensor({3, 64}, 5, kFloat32);
  auto adapted = std::make_shared<LoRALinear>(*base, 4, 8.0);
  {
    NoGradGuard no_grad;
    adapted->lora->lora_B->weight.copy_(test::normal_tensor({32, 4}, 6, kFloat32));  // a trained update, not zero
  }
  Sequential holder({adapted});
  EXPECT_EQ(quantize_int8_(holder), 3);  // the base, A and B
  const Tensor expected = linear_int8(x, adapted->weight, adapted->weight_scale, adapted->bias) +
                          adapted->lora->forward(x);
  EXPECT_TRUE(test::same_bytes(adapted->forward(x), expected));
}

TEST(QuantizeInt8, ANonFiniteWeightIsAnErrorAndChangesNothing) {
  manual_seed(5);
  TinyLM model;
  {
    NoGradGuard no_grad;
    model.fc->weight.data_ptr<float>()[70] = INFINITY;
  }
  test::expect_error([&] { quantize_int8_(model); }, {"fc.weight", "non-finite", "inf", "[1, 6]", "cannot be quantized"});
  EXPECT_EQ(model.wte->weight.dtype(), kFloat32);  // checked before anything changed
  EXPECT_FALSE(model.wte->weight_scale.defined());
  test::expect_error([&] { TinyLM m; quantize_int8_(m, 0); }, {"group size", "at least 1"});
}

TEST(QuantizeInt8, AQuantizedModuleIsForInference) {
  manual_seed(6);
  TinyLM model;
  quantize_int8_(model);
  const test::TempFolder folder;
  test::expect_error([&] { save_safetensors(folder.path + "/m.safetensors", model.state_dict()); },
                     {"safetensors", "int8"});
  test::expect_error([&] { model.to(kFloat64); }, {"int8"});
}

}  // namespace
}  // namespace tg::nn
