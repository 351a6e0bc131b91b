// main.cpp — a complete program using tapegrad: y = sum(x @ w), then dy/dx and dy/dw.
#include <iostream>
#include <vector>

#include "autograd/ops.h"
#include "autograd/tape.h"

int main() {
  tg::Tensor x = tg::tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();  // (2,2)
  tg::Tensor w = tg::tensor({{0.5}, {-1.0}}).requires_grad_();           // (2,1)

  tg::Tensor y = x.matmul(w).sum();  // 1*0.5 - 2 + 3*0.5 - 4 = -4
  y.backward();

  std::cout << "y = " << y << "\n";
  std::cout << "dy/dx = " << x.grad() << "\n";  // every row of x meets w: [[0.5, -1], [0.5, -1]]
  std::cout << "dy/dw = " << w.grad() << "\n";  // column sums of x: [[4], [6]]

  bool ok = x.grad().tolist<float>() == std::vector<float>{0.5f, -1.0f, 0.5f, -1.0f} &&
            w.grad().tolist<float>() == std::vector<float>{4.0f, 6.0f};
  std::cout << (ok ? "gradients match" : "WRONG gradients") << "\n";
  return ok ? 0 : 1;
}
