// Runs examples/gradcheck_layers (its path comes from tests/CMakeLists.txt when the examples are
// built): every layer passes its float64 gradient check and no mask leaks, with the fast kernels
// on and off (TG_FAST_KERNELS=0: the notebook's steps and the reference code); and the leakage
// check does fail on an attention whose causal mask is off.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace tg {
namespace {

struct ProgramRun {
  bool built = false;  // false: the examples are not built, there is nothing to run
  int exit_code = -1;
  std::string output;
};

// environment: "NAME=value " set for the program only, or "" (it inherits the test's).
ProgramRun run_gradcheck_layers(const std::string& arguments, const std::string& environment = "") {
  ProgramRun run;
#ifdef TG_GRADCHECK_LAYERS
  run.built = true;
  const std::string command =
      environment + test::program_launcher() + "\"" + TG_GRADCHECK_LAYERS + "\" " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
#endif
  (void)arguments;
  (void)environment;
  return run;
}

// The table line of `layer`, or "" when it is missing.
std::string row_of(const std::string& output, const std::string& layer) {
  size_t at = 0;
  while ((at = output.find(layer, at)) != std::string::npos) {
    if (at == 0 || output[at - 1] == '\n') return output.substr(at, output.find('\n', at) - at);
    ++at;
  }
  return "";
}

void expect_every_layer_passes(const ProgramRun& run) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const size_t split = run.output.find("Mask leakage");
  ASSERT_NE(split, std::string::npos) << run.output;
  const std::string gradients = run.output.substr(0, split), leakage = run.output.substr(split);
  const std::vector<std::string> checked = {
      "Linear(4, 3) ", "Linear(4, 3, bias=false)", "Embedding(6, 3)", "LayerNorm(5)", "Dropout(0.3), eval",
      "Dropout(0.3), training", "GELU() ", "GELU('tanh')", "ReLU()", "Softmax(-1)", "Sequential(",
      "SelfAttention_v1", "SelfAttention_v2", "CausalAttention(3, 2, 6) ", "CausalAttention, dropout",
      "MultiHeadAttentionWrapper(", "MultiHeadAttention(4, 4, 6, 2 heads)", "MultiHeadAttention, not causal",
      "MultiHeadAttention, cross, causal + padding", "MultiHeadAttention, cross + padding, dropout", "GPT block",
      "RMSNorm(5)", "SiLU()", "SwiGLU feed-forward", "Grouped-query attention, RoPE, qkv biases",
      "Qwen3 attention, QK-norm, head_dim 6", "Qwen3 decoder layer"};
  const std::vector<std::string> masked = {
      "CausalAttention ", "MultiHeadAttentionWrapper ", "MultiHeadAttention ", "MultiHeadAttention, causal + padding",
      "MultiHeadAttention, cross, causal + padding", "MultiHeadAttention, cross, padding", "GPT block",
      "Grouped-query attention (RoPE, QK-norm)", "Grouped-query attention, causal + padding", "Llama decoder layer"};
  const std::vector<std::pair<std::string, std::vector<std::string>>> tables = {{gradients, checked},
                                                                               {leakage, masked}};
  for (const auto& [table, layers] : tables) {
    for (const std::string& layer : layers) {
      const std::string row = row_of(table, layer);
      EXPECT_FALSE(row.empty()) << "no row for '" << layer << "' in\n" << table;
      EXPECT_TRUE(test::has_part(row, "PASS")) << row;
    }
  }
  EXPECT_EQ(run.output.find("FAIL"), std::string::npos) << run.output;
}

TEST(GradcheckLayers, EveryLayerPassesInFloat64AndNoMaskLeaks) {
  const ProgramRun run = run_gradcheck_layers("");
  if (!run.built) GTEST_SKIP() << "examples/gradcheck_layers is not built (TG_BUILD_EXAMPLES=OFF)";
  expect_every_layer_passes(run);
}

TEST(GradcheckLayers, EveryLayerPassesWithTheFastKernelsOff) {
  const ProgramRun run = run_gradcheck_layers("", "TG_FAST_KERNELS=0 ");
  if (!run.built) GTEST_SKIP() << "examples/gradcheck_layers is not built (TG_BUILD_EXAMPLES=OFF)";
  EXPECT_TRUE(test::has_part(run.output, "fast kernels: off")) << run.output;
  expect_every_layer_passes(run);
}

TEST(GradcheckLayers, TheLeakageCheckCatchesAnAttentionWithoutItsCausalMask) {
  const ProgramRun run = run_gradcheck_layers("--leaky-demo");
  if (!run.built) GTEST_SKIP() << "examples/gradcheck_layers is not built (TG_BUILD_EXAMPLES=OFF)";
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(test::has_part(row_of(run.output, "MultiHeadAttention, causal off (demo)"), "FAIL")) << run.output;
}

}  // namespace
}  // namespace tg
