// tg::graph_dot: the DOT text of the graph backward walks — one box per entry with its node
// name, shapes and the bytes tape_str says it keeps, leaves with their names, edges along the
// data flow — and drawing it changes nothing.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/graph_dot.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using test::expect_error;

// The label of DOT node `id`, with DOT's "\n" turned back into newlines.
std::string label_of(const std::string& dot, const std::string& id) {
  const std::string start = "  " + id + " [label=\"";
  const size_t at = dot.find(start);
  if (at == std::string::npos) return "(no node " + id + ")";
  const size_t from = at + start.size(), to = dot.find("\", ", from);
  return std::regex_replace(dot.substr(from, to - from), std::regex(R"(\\n)"), "\n");
}

std::vector<std::string> edges_of(const std::string& dot) {
  std::vector<std::string> out;
  std::istringstream in(dot);
  for (std::string line; std::getline(in, line);)
    if (line.find(" -> ") != std::string::npos) out.push_back(line.substr(2, line.size() - 3));  // no ";"
  return out;
}

TEST(GraphDot, SmallGraphHasOneNodePerEntryWithNamesShapesAndEdges) {
  Tensor x = tensor({{0.43, 0.15, 0.89}, {0.55, 0.87, 0.66}}).requires_grad_();  // (2,3)
  Tensor w = tensor({{0.1, 0.2}, {0.3, 0.4}, {0.5, 0.6}}).requires_grad_();      // (3,2)
  Tensor probs = x.matmul(w).softmax(-1);
  Tensor loss = probs.sum();
  const std::string dot = graph_dot(loss, {{"x", x}, {"w", w}, {"probs", probs}, {"loss", loss}});
  EXPECT_EQ(dot.rfind("digraph tapegrad {\n", 0), 0u);
  EXPECT_EQ(label_of(dot, "leaf0"), "x\n(2,3)");
  EXPECT_EQ(label_of(dot, "leaf1"), "w\n(3,2)");
  EXPECT_EQ(label_of(dot, "op0"), "MmBackward0\nin (2,3) (3,2)\nout (2,2)\nkeeps 48 B");  // x and w, 24 B each
  EXPECT_EQ(label_of(dot, "op1"), "SoftmaxBackward0\n= probs\nin (2,2)\nout (2,2)\nkeeps 16 B");  // its output
  EXPECT_EQ(label_of(dot, "op2"), "SumBackward0\nin (2,2)\nout ()\nkeeps 0 B");  // the root: named on its box
  EXPECT_EQ(label_of(dot, "output"), "loss\n()");
  EXPECT_EQ(label_of(dot, "op3"), "(no node op3)");
  EXPECT_EQ(edges_of(dot),
            (std::vector<std::string>{"leaf0 -> op0", "leaf1 -> op0", "op0 -> op1", "op1 -> op2", "op2 -> output"}));
  EXPECT_NE(dot.find("label=\"total kept for backward: 64 B\""), std::string::npos) << dot;
}

// Every entry's "keeps" is what tape_str prints for it, and so is the total.
TEST(GraphDot, SavedBytesAreWhatTapeStrReports) {
  Tensor inputs = test::leaf(test::normal_tensor({6, 3}, 3, kFloat32));
  Tensor scores = inputs.matmul(inputs.t());
  Tensor mask = triu(ones({6, 6}), 1) == 1;
  Tensor weights = scores.masked_fill(mask, -kInf).softmax(-1);
  Tensor loss = weights.matmul(inputs).pow(2).mean();
  const std::string dot = graph_dot(loss);
  const std::string tape = tape_str();

  std::vector<std::string> from_tape, from_dot;
  std::istringstream in(tape);
  const std::regex entry(R"(^  #\d+\s+(\S+)\s.* keeps (.*)$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, m, entry)) from_tape.push_back(m[1].str() + " keeps " + m[2].str());
  for (size_t i = 0;; ++i) {
    const std::string label = label_of(dot, "op" + std::to_string(i));
    if (label.rfind("(no node", 0) == 0) break;
    from_dot.push_back(label.substr(0, label.find('\n')) + " keeps " + label.substr(label.rfind("keeps ") + 6));
  }
  EXPECT_EQ(from_dot.size(), 7u);  // t, mm, masked_fill, softmax, mm, pow, mean
  EXPECT_EQ(from_dot, from_tape) << tape << dot;
  const std::string total = tape.substr(tape.find("total kept for backward: "));
  EXPECT_NE(dot.find(total.substr(0, total.size() - 1)), std::string::npos) << total << dot;
}

TEST(GraphDot, DrawingChangesNothingAndBackwardStillWorks) {
  auto build = [](Tensor& a, Tensor& b) {
    a = test::leaf(test::normal_tensor({4, 3}, 11, kFloat64));
    b = test::leaf(test::normal_tensor({3, 5}, 12, kFloat64));
    return (a.matmul(b).tanh() * a.matmul(b)).sum();
  };
  Tensor a1, b1, a2, b2;
  Tensor loss1 = build(a1, b1);
  const std::string tape_before = tape_str();
  const std::string dot = graph_dot(loss1, {{"a", a1}, {"b", b1}});
  EXPECT_EQ(tape_str(), tape_before);
  loss1.backward();
  Tensor loss2 = build(a2, b2);  // the same computation, never drawn
  loss2.backward();
  EXPECT_TRUE(test::all_close(a1.grad(), a2.grad(), 0, 0));
  EXPECT_TRUE(test::all_close(b1.grad(), b2.grad(), 0, 0));
  EXPECT_EQ(tape_size(), 0u);
}

TEST(GraphDot, SameComputationGivesTheSameText) {
  auto draw = [] {
    Tensor x = test::leaf(test::normal_tensor({2, 3}, 5, kFloat32));
    Tensor h = relu(x * 2.0 + 1.0);
    return graph_dot(h.sum(), {{"x", x}});
  };
  const std::string first = draw();
  (void)(test::leaf(ones({3})) * 3.0).sum();  // other work in between moves the tape's counter
  EXPECT_EQ(draw(), first);
}

TEST(GraphDot, ReleasedEntriesLeavesAloneAndNamesNeedingEscapes) {
  Tensor x = test::leaf(ones({2, 2}));
  Tensor y = (x * x).sum();
  y.backward();
  const std::string after = graph_dot(y);
  EXPECT_NE(label_of(after, "op0").find("keeps 0 B (released by backward)"), std::string::npos) << after;
  EXPECT_EQ(label_of(after, "leaf0"), "leaf\n(2,2)");              // no name given
  EXPECT_EQ(edges_of(after)[0], "leaf0 -> op0");                     // x * x: two edges from x
  EXPECT_EQ(edges_of(after)[1], "leaf0 -> op0");
  const std::string alone = graph_dot(x, {{"say \"hi\"\\", x}});
  EXPECT_EQ(label_of(alone, "output"), "say \\\"hi\\\"\\\\\n(2,2)");  // a leaf: the graph is itself
  EXPECT_EQ(edges_of(alone).size(), 0u);
  const std::string f64 = graph_dot(test::leaf(ones({3}, kFloat64)).exp());
  EXPECT_EQ(label_of(f64, "leaf0"), "leaf\n(3) float64");
}

TEST(GraphDot, NothingToDrawIsAClearError) {
  expect_error([] { graph_dot(ones({2})); }, {"graph_dot: the tensor does not require grad"});
  expect_error([] { graph_dot(Tensor()); }, {"graph_dot: the tensor does not require grad"});
  Tensor x = test::leaf(ones({2}));
  NoGradGuard no_grad;
  expect_error([&] { graph_dot(x * 2.0); }, {"graph_dot: the tensor does not require grad", "NoGradGuard"});
}

}  // namespace
}  // namespace tg
