// Hugging Face GPT-2 folders (models/hf/hf_gpt2.h) against the PyTorch twin in HF's layout
// (tests/reference/make_hf_gpt2_reference.py, examples/pytorch/tapegrad_twin/hf_gpt2.py): the logits of the F32,
// F16 and BF16 folders, saving back (the same tensors and config.json), load -> save -> load,
// and each kind of bad folder an error naming what is wrong.
#include "models/hf/hf_gpt2.h"

#include <gtest/gtest.h>


#include <cstdlib>
#include <filesystem>

#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

const std::string kFixtures = std::string(TG_REFERENCE_DIR) + "/hf_gpt2";

Tensor reference(const std::string& name) {
  for (auto& [n, t] : load_safetensors(kFixtures + "/logits.safetensors"))
    if (n == name) return t;
  throw Error("no " + name + " in logits.safetensors");
}

Tensor logits_of(models::GPTModel& model) {
  NoGradGuard no_grad;
  return model.forward(reference("ids"));
}

TEST(HfGpt2, LogitsOfTheF32F16AndBF16FoldersMatchPyTorch) {
  for (const std::string folder : {"f32", "f16", "bf16"}) {
    SCOPED_TRACE(folder);
    models::HfGpt2 hf = models::load_hf_gpt2(kFixtures + "/" + folder);
    EXPECT_EQ(hf.config.layer_norm_eps, 1e-4);
    EXPECT_EQ(hf.config.emb_dim, 16);
    EXPECT_EQ(hf.config.drop_rate, 0.1);
    EXPECT_TRUE(test::all_close(logits_of(*hf.model), reference(folder), 1e-5, 1e-5));
  }
}

// Every weight comes from the file, so none is drawn first: the default generator is where it was
// (and reading GPT-2 124M does not spend seconds drawing 124M numbers it then overwrites).
TEST(HfGpt2, ReadingAFolderDrawsNothingFromTheDefaultGenerator) {
  manual_seed(7);
  const Tensor expected = randn({4});
  manual_seed(7);
  models::HfGpt2 hf = models::load_hf_gpt2(kFixtures + "/f32");
  EXPECT_TRUE(test::all_close(randn({4}), expected, 0.0, 0.0));
  EXPECT_TRUE(test::all_close(logits_of(*hf.model), reference("f32"), 1e-5, 1e-5));  // and every weight was read
}

TEST(HfGpt2, InfoSaysThePrefixTheLmHeadAndTheConvertedDtypes) {
  const models::HfGpt2Info f32 = models::load_hf_gpt2(kFixtures + "/f32").info, f16 = models::load_hf_gpt2(kFixtures + "/f16").info,
                   bf16 = models::load_hf_gpt2(kFixtures + "/bf16").info;
  EXPECT_TRUE(f32.prefixed);
  EXPECT_FALSE(f16.prefixed);
  EXPECT_TRUE(f16.had_lm_head);
  EXPECT_FALSE(bf16.had_lm_head);
  EXPECT_TRUE(f32.converted_dtypes.empty());
  EXPECT_EQ(f16.converted_dtypes, std::vector<std::string>{"F16"});
  EXPECT_EQ(bf16.converted_dtypes, std::vector<std::string>{"BF16"});
  EXPECT_TRUE(models::is_hf_gpt2_folder(kFixtures + "/bf16"));
  EXPECT_FALSE(models::is_hf_gpt2_folder(kFixtures));
}

TEST(HfGpt2, SavingTheF32FolderBackGivesItsTensorsAndItsConfigJson) {
  const models::HfGpt2 hf = models::load_hf_gpt2(kFixtures + "/f32");
  test::TempFolder out;
  models::save_hf_gpt2(*hf.model, out.path, hf.info);
  EXPECT_EQ(test::read_bytes(out.file("config.json")), test::read_bytes(kFixtures + "/f32/config.json"));
  NamedTensors original;
  for (auto& [name, t] : load_safetensors(kFixtures + "/f32/model.safetensors"))
    if (name.find(".attn.bias") == std::string::npos && name.find(".attn.masked_bias") == std::string::npos)
      original.push_back({name, t});
  const NamedTensors saved = load_safetensors(out.file("model.safetensors"));
  ASSERT_EQ(saved.size(), original.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(saved[i].first, original[i].first);
    EXPECT_TRUE(test::same_bytes(saved[i].second, original[i].second)) << saved[i].first;
  }
  EXPECT_EQ(load_safetensors_metadata(out.file("model.safetensors")), (SafetensorsMetadata{{"format", "pt"}}));
}

TEST(HfGpt2, LoadSaveLoadKeepsTheLogitsAndTheNames) {
  models::HfGpt2 first = models::load_hf_gpt2(kFixtures + "/bf16");
  test::TempFolder out;
  models::save_hf_gpt2(*first.model, out.path, first.info);
  models::HfGpt2 second = models::load_hf_gpt2(out.path);
  EXPECT_FALSE(second.info.prefixed);
  EXPECT_TRUE(second.info.converted_dtypes.empty());  // saved as float32
  EXPECT_TRUE(test::same_bytes(logits_of(*second.model), logits_of(*first.model)));
  EXPECT_EQ(load_safetensors(out.file("model.safetensors"))[0].first, "wte.weight");
}

// For tests/python/test_hf_gpt2.py, which reads the folder with the PyTorch twin: the F16 folder
// read and saved back (as float32) into $TG_HF_GPT2_OUT. Skipped without it.
TEST(HfGpt2, SavesTheF16FolderIntoTheFolderNamedByTgHfGpt2Out) {
  const char* out = std::getenv("TG_HF_GPT2_OUT");
  if (out == nullptr) GTEST_SKIP() << "TG_HF_GPT2_OUT is not set (tests/python/test_hf_gpt2.py sets it)";
  const models::HfGpt2 hf = models::load_hf_gpt2(kFixtures + "/f16");
  models::save_hf_gpt2(*hf.model, out, hf.info);
}

TEST(HfGpt2, AModelOfTapegradsOwnGetsAFullGpt2ConfigJson) {
  models::GPTModel model({.vocab_size = 11, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 1,
                      .drop_rate = 0.0, .qkv_bias = true, .tie_weights = true, .layer_norm_eps = 1e-6});
  test::TempFolder out;
  save_hf_gpt2(model, out.path);
  const models::HfGpt2 back = models::load_hf_gpt2(out.path);
  EXPECT_EQ(back.config.layer_norm_eps, 1e-6);
  EXPECT_EQ(back.config.context_length, 8);
  EXPECT_EQ(back.config.drop_rate, 0.0);
  EXPECT_TRUE(test::has_part(test::read_bytes(out.file("config.json")), "\"architectures\": [\n    \"GPT2LMHeadModel\"\n  ]"));
  models::GPTModel untied({.vocab_size = 11, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 1, .qkv_bias = true});
  EXPECT_TRUE(test::has_part(test::error_of([&] { hf_gpt2_tensors(untied, false); }), "tie_weights=false"));
}

// A copy of the F32 folder, with its tensors or its config.json changed.
struct BadFolder {
  test::TempFolder dir;
  BadFolder() {
    for (const char* f : {"config.json", "model.safetensors"})
      std::filesystem::copy_file(kFixtures + "/f32/" + f, dir.file(f));
  }
  NamedTensors tensors() const { return load_safetensors(dir.file("model.safetensors")); }
  void save(const NamedTensors& t) const { save_safetensors(dir.file("model.safetensors"), t); }
  void replace_in_config(const std::string& from, const std::string& to) const {
    std::string text = test::read_bytes(dir.file("config.json"));
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    test::write_bytes(dir.file("config.json"), text.replace(at, from.size(), to));
  }
  std::string error() const {
    return test::error_of([&] { models::load_hf_gpt2(dir.path); });
  }
};

TEST(HfGpt2, BadWeightsAreErrorsNamingTheTensorAndTheFile) {
  {
    BadFolder bad;
    NamedTensors t = bad.tensors();
    t.push_back({"transformer.h.0.attn.extra", zeros({2})});
    bad.save(t);
    EXPECT_TRUE(test::has_part(bad.error(), bad.dir.file("model.safetensors") + ": unknown tensor \"transformer.h.0.attn.extra\""));
  }
  {
    BadFolder bad;
    NamedTensors t = bad.tensors();
    t.push_back({"ln_f.bias", zeros({16})});  // one name without the prefix the others have
    bad.save(t);
    EXPECT_TRUE(test::has_part(bad.error(), "unknown tensor \"ln_f.bias\" (not a GPT-2 weight of this config.json, or its "
                                            "\"transformer.\" prefix differs from the other names')"));
  }
  {
    BadFolder bad;
    NamedTensors t = bad.tensors();
    t.pop_back();  // transformer.ln_f.bias
    bad.save(t);
    EXPECT_TRUE(test::has_part(bad.error(), ": tensor \"transformer.ln_f.bias\" is missing"));
  }
  {
    BadFolder bad;
    NamedTensors t = bad.tensors();
    t[1].second = zeros({31, 16});  // transformer.wpe.weight
    bad.save(t);
    EXPECT_TRUE(test::has_part(bad.error(), "tensor \"transformer.wpe.weight\" has shape (31,16), expected (32,16)"));
  }
  {
    BadFolder bad;
    NamedTensors t = bad.tensors();
    t.push_back({"lm_head.weight", zeros({97, 16})});
    bad.save(t);
    EXPECT_TRUE(test::has_part(bad.error(), "tensor \"lm_head.weight\" differs from wte.weight"));
  }
  {
    BadFolder bad;
    NamedTensors t = bad.tensors();
    t[0].second = t[0].second.to(kFloat64);
    bad.save(t);
    EXPECT_TRUE(test::has_part(bad.error(), "tensor \"transformer.wte.weight\" has dtype float64"));
  }
}

TEST(HfGpt2, UnsupportedConfigFieldsAreErrorsNamingTheFieldAndTheFile) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"gelu_new\"", "\"relu\""}, {"\"n_inner\": null", "\"n_inner\": 10"}, {"\"model_type\": \"gpt2\"", "\"model_type\": \"llama\""},
      {"\"n_layer\": 2", "\"reorder_and_upcast_attn\": true, \"n_layer\": 2"},
      {"\"n_layer\": 2", "\"scale_attn_by_inverse_layer_idx\": true, \"n_layer\": 2"},
      {"\"n_layer\": 2", "\"n_layer\": \"two\""}, {"0.0001", "0"}};
  const std::vector<std::string> messages = {
      "\"activation_function\" is \"relu\": tapegrad's GPT has the tanh GELU",
      "\"n_inner\" is 10: tapegrad's GPT has 4 * n_embd = 64 (or null)",
      "\"model_type\" is \"llama\": this reader takes \"gpt2\"",
      "\"reorder_and_upcast_attn\" is true: unsupported by tapegrad",
      "\"scale_attn_by_inverse_layer_idx\" is true: unsupported by tapegrad",
      "\"n_layer\" must be an integer, got a string",
      "layer_norm_eps must be positive, got 0.0"};
  for (size_t i = 0; i < cases.size(); ++i) {
    BadFolder bad;
    bad.replace_in_config(cases[i].first, cases[i].second);
    const std::string error = bad.error();
    EXPECT_TRUE(test::has_part(error, bad.dir.file("config.json") + ": ")) << error;
    EXPECT_TRUE(test::has_part(error, messages[i]));
  }
  test::TempFolder empty;
  EXPECT_TRUE(test::has_part(test::error_of([&] { models::load_hf_gpt2(empty.path); }),
                             "not a Hugging Face GPT-2 folder (config.json is missing)"));
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// A name claiming block 10^9 does not stand in for 10^9 blocks: n_layer is bounded by the tensors
// the file holds, before the layout of n_layer blocks is built.
TEST(HfGpt2, AHugeBlockNumberInANameDoesNotLetAHugeNLayerThrough) {
  BadFolder bad;
  NamedTensors t = bad.tensors();
  t.push_back({"transformer.h.999999999.ln_1.weight", zeros({16})});
  bad.save(t);
  bad.replace_in_config("\"n_layer\": 2", "\"n_layer\": 1000000000");
  EXPECT_TRUE(test::has_part(bad.error(), "(config.json's n_layer is 1000000000; the file has ")) << bad.error();
}

}  // namespace
}  // namespace tg
