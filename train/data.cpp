// train/data.cpp — the split and the batches.
#include "train/data.h"

#include "autograd/error.h"
#include "autograd/ops.h"

namespace tg::train {

int64_t train_count(int64_t n) { return static_cast<int64_t>(0.9 * static_cast<double>(n)); }

Split split_train_val(const std::vector<int64_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t n_train = train_count(n);
  Tensor all = from_vector(ids, {n});
  return {all.narrow(0, 0, n_train).contiguous(), all.narrow(0, n_train, n - n_train).contiguous()};
}

void check_split_length(const Tensor& data, int64_t context, const std::string& split_name) {
  const int64_t n = data.numel();
  if (n - context - 1 <= 0) {
    throw Error("the " + split_name + " split has " + std::to_string(n) + " tokens, too few for one window of " +
                std::to_string(context) + " + 2 tokens: use a longer text or a smaller --context");
  }
}

Batch get_batch(const Tensor& data, int64_t batch, int64_t context, Generator& gen, const std::string& split_name) {
  check_split_length(data, context, split_name);
  const int64_t n = data.numel();
  const Tensor ix = randint(0, n - context - 1, {batch}, &gen);  // (B)
  Tensor x = empty({batch, context}, kInt64), y = empty({batch, context}, kInt64);
  const int64_t* d = data.data_ptr<int64_t>();
  const int64_t* starts = ix.data_ptr<int64_t>();
  int64_t* px = x.data_ptr<int64_t>();
  int64_t* py = y.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < context; ++t) {
      px[b * context + t] = d[starts[b] + t];
      py[b * context + t] = d[starts[b] + t + 1];
    }
  }
  return {x, y};
}

}  // namespace tg::train
