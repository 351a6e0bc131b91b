// tg::save / tg::load (nn/serialize.h), and safetensors files both ways with PyTorch 1.13
// (tests/reference/make_safetensors_reference.py): torch's files load into tapegrad's modules
// bit-identically, and tapegrad saves the very bytes that PyTorch's side loaded and checked.
//
// The committed *_tapegrad.safetensors files are what this test writes when run with
// TG_WRITE_REFERENCE=1 (then the Python script checks them); a normal run compares against them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "nn/safetensors.h"
#include "nn/nn.h"
#include "test_util.h"

namespace tg {
namespace {

using test::error_of;
using test::read_bytes;
using test::same_bytes;
using test::TempFolder;
using test::write_bytes;

// The C++ twin of Mixed in make_safetensors_reference.py, built in the same order: every dtype
// tapegrad has, 0-dim and empty tensors, and a buffer that is not saved.
struct Mixed : nn::Module {
  Mixed() : Module("Mixed") {
    const double inf = std::numeric_limits<double>::infinity();
    linear = register_module("linear", std::make_shared<nn::Linear>(3, 2));
    scale = register_parameter("scale", randn({2, 3}, nullptr, kFloat64));
    register_buffer("step", full({}, 7, kInt64));
    register_buffer("ids", randint(-5, 5, {4}));
    register_buffer("extremes", from_vector(std::vector<int64_t>{INT64_MIN, INT64_MAX, (int64_t{1} << 53) + 1}, {3}));
    register_buffer("mask", rand({2, 3}).gt(0.5));
    register_buffer("empty", zeros({0, 3}));
    register_buffer("specials", from_vector(std::vector<double>{std::nan(""), -inf, -0.0, 1e-45}, {4}, kFloat32));
    scratch = register_buffer("scratch", zeros({2}), /*persistent=*/false);
  }
  std::shared_ptr<nn::Linear> linear;
  Tensor scale, scratch;
};

struct Model {
  std::string name;  // the files are <name>_torch.safetensors and <name>_tapegrad.safetensors
  uint64_t seed;
};
const Model kModels[] = {{"mha", 123}, {"mixed", 7}};

std::shared_ptr<nn::Module> build(const std::string& name, uint64_t seed) {
  manual_seed(seed);
  if (name == "mha") return std::make_shared<nn::MultiHeadAttention>(/*d_in=*/3, /*d_out=*/4, /*context_length=*/6,
                                                                     /*dropout=*/0.0, /*num_heads=*/2);
  return std::make_shared<Mixed>();
}

std::string reference(const std::string& file) { return std::string(TG_REFERENCE_DIR) + "/" + file; }

// Copies of every tensor of the state_dict, to compare with later.
NamedTensors snapshot(const nn::Module& m) {
  NamedTensors out;
  for (const auto& [name, t] : m.state_dict()) out.push_back({name, t.detach().clone()});
  return out;
}

// The module's state_dict has exactly these names, in this order, with these bytes.
::testing::AssertionResult has_state(const nn::Module& m, const NamedTensors& expected) {
  NamedTensors state = m.state_dict();
  if (state.size() != expected.size()) {
    return ::testing::AssertionFailure() << state.size() << " tensors, expected " << expected.size();
  }
  for (size_t i = 0; i < state.size(); ++i) {
    if (state[i].first != expected[i].first) {
      return ::testing::AssertionFailure() << "tensor " << i << " is '" << state[i].first << "', expected '"
                                           << expected[i].first << "'";
    }
    ::testing::AssertionResult same = same_bytes(state[i].second, expected[i].second);
    if (!same) return ::testing::AssertionFailure() << "'" << state[i].first << "': " << same.message();
  }
  return ::testing::AssertionSuccess();
}

// Where two byte strings first differ, for a readable failure.
::testing::AssertionResult same_file_bytes(const std::string& actual, const std::string& expected) {
  if (actual == expected) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < actual.size() && i < expected.size() && actual[i] == expected[i]) ++i;
  return ::testing::AssertionFailure() << "files differ from byte " << i << " (sizes " << actual.size() << " and "
                                       << expected.size() << ")";
}

TEST(Serialize, TorchsFilesLoadIntoTapegradModulesBitIdentically) {
  for (const Model& model : kModels) {
    SCOPED_TRACE(model.name);
    const NamedTensors expected = snapshot(*build(model.name, model.seed));
    std::shared_ptr<nn::Module> m = build(model.name, model.seed + 1000);
    ASSERT_FALSE(has_state(*m, expected));  // another seed, other weights
    const std::string path = reference(model.name + "_torch.safetensors");
    load(*m, path);
    EXPECT_TRUE(has_state(*m, expected));
    EXPECT_EQ(load_safetensors_metadata(path), (SafetensorsMetadata{{"format", "pt"}}));
  }
}

TEST(Serialize, TapegradSavesTheBytesPyTorchLoadedAndChecked) {
  for (const Model& model : kModels) {
    SCOPED_TRACE(model.name);
    std::shared_ptr<nn::Module> m = build(model.name, model.seed);
    const std::string committed = reference(model.name + "_tapegrad.safetensors");
    if (std::getenv("TG_WRITE_REFERENCE") != nullptr) save(*m, committed);
    TempFolder folder;
    save(*m, folder.file("model.safetensors"));
    const std::string bytes = read_bytes(folder.file("model.safetensors"));
    EXPECT_TRUE(same_file_bytes(bytes, read_bytes(committed)));
    // the script writes the same canonical layout, so torch's file has the same bytes as well
    EXPECT_TRUE(same_file_bytes(bytes, read_bytes(reference(model.name + "_torch.safetensors"))));
  }
}

TEST(Serialize, SaveThenLoadRestoresEveryTensorAndOnlyTheStateDict) {
  auto source = std::static_pointer_cast<Mixed>(build("mixed", 1));
  auto target = std::static_pointer_cast<Mixed>(build("mixed", 2));
  source->scratch.fill_(5.0);
  TempFolder folder;
  const std::string path = folder.file("mixed.safetensors");
  save(*source, path);
  load(*target, path);
  EXPECT_TRUE(has_state(*target, snapshot(*source)));
  EXPECT_EQ(target->scratch.tolist<float>(), (std::vector<float>{0, 0}));  // not persistent: not in the file
  EXPECT_TRUE(target->scale.requires_grad());
  EXPECT_TRUE(target->scale.is_leaf());
}

TEST(Serialize, LoadErrorsNameTheFileListEveryProblemAndChangeNothing) {
  const NamedTensors good = build("mha", 123)->state_dict();
  std::shared_ptr<nn::Module> m = build("mha", 5);
  const NamedTensors before = snapshot(*m);
  TempFolder folder;
  const std::string path = folder.file("model.safetensors");
  auto load_error = [&](const NamedTensors& dict) {
    save_safetensors(path, dict, {{"format", "pt"}});
    return error_of([&] { load(*m, path); });
  };
  auto with = [&](const std::string& name, const Tensor& t) {
    NamedTensors dict = good;
    for (auto& [n, value] : dict)
      if (n == name) value = t;
    return dict;
  };
  const std::string prefix = "load_state_dict: 1 problem loading " + path + " into MultiHeadAttention: ";
  const std::string unchanged = " (nothing was changed)";

  NamedTensors missing(good.begin(), good.end() - 1);
  EXPECT_EQ(load_error(missing), prefix + "missing key 'out_proj.bias'" + unchanged);
  EXPECT_TRUE(has_state(*m, before));

  NamedTensors unexpected = good;
  unexpected.push_back({"out_proj.scale", ones({4})});
  EXPECT_EQ(load_error(unexpected), prefix + "unexpected key 'out_proj.scale'" + unchanged);
  EXPECT_TRUE(has_state(*m, before));

  EXPECT_EQ(load_error(with("W_query.weight", zeros({3, 4}))),
            prefix + "'W_query.weight' has shape (3,4), expected (4,3)" + unchanged);
  EXPECT_TRUE(has_state(*m, before));

  EXPECT_EQ(load_error(with("mask", zeros({6, 6}, kFloat64))), prefix + "'mask' has dtype float64, expected float32" + unchanged);
  EXPECT_TRUE(has_state(*m, before));

  NamedTensors all = with("mask", zeros({6, 6}, kFloat64));
  all = NamedTensors(all.begin(), all.end() - 1);
  all[1].second = zeros({3, 4});
  all.push_back({"extra", ones({1})});
  EXPECT_EQ(load_error(all), "load_state_dict: 4 problems loading " + path +
                                 " into MultiHeadAttention: 'mask' has dtype float64, expected float32; "
                                 "'W_query.weight' has shape (3,4), expected (4,3); missing key 'out_proj.bias'; "
                                 "unexpected key 'extra'" + unchanged);
  EXPECT_TRUE(has_state(*m, before));

  write_bytes(path, "not a safetensors file");
  EXPECT_EQ(error_of([&] { load(*m, path); }),
            "load_safetensors: " + path + ": byte 0: header length 7021991845529153390 is larger than the limit of "
            "104857600 bytes");
  EXPECT_TRUE(has_state(*m, before));
  EXPECT_EQ(error_of([&] { load(*m, folder.file("none.safetensors")); }),
            "load_safetensors: " + folder.file("none.safetensors") + ": no such file");
  EXPECT_TRUE(has_state(*m, before));

  load(*m, reference("mha_torch.safetensors"));  // and a good file still loads
  EXPECT_TRUE(has_state(*m, good));
}

}  // namespace
}  // namespace tg
