// graph_dot with a module's named_parameters(): the leaves carry their state_dict names.
#include <gtest/gtest.h>

#include <string>

#include "autograd/graph_dot.h"
#include "autograd/ops.h"
#include "nn/layers.h"

namespace tg::nn {
namespace {

TEST(GraphDot, LeavesAreNamedAsTheModuleNamesItsParameters) {
  manual_seed(123);
  Sequential net;
  net.push_back(std::make_shared<Linear>(3, 4));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<Linear>(4, 1));
  Tensor loss = net(rand({5, 3})).sum();
  const std::string dot = graph_dot(loss, net.named_parameters());
  for (const char* name : {"0.weight\\n(4,3)", "0.bias\\n(4)", "2.weight\\n(1,4)", "2.bias\\n(1)"})
    EXPECT_NE(dot.find(std::string("label=\"") + name + "\""), std::string::npos) << name << "\n" << dot;
  EXPECT_EQ(dot.find("label=\"leaf\\n"), std::string::npos) << dot;  // every leaf is a parameter here
}

}  // namespace
}  // namespace tg::nn
