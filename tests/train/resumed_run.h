// tests/train/resumed_run.h — the check every kind of run gets: 2N steps straight equal N steps,
// a save, a resume and N steps more, bit for bit (train/run_folder.h).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "train/run_folder.h"
#include "test_util.h"

namespace tg::test {

// start() makes the run (each call the same fresh one). It trains 2 * half steps straight; a second
// one trains half steps and is saved into dir, the default generator moves on (resuming must put it
// back), and the run resumed from dir trains half steps more. Their losses, weights and AdamW's
// state must be the same bits. Returns the resumed run, for the caller's own checks.
inline std::unique_ptr<train::Trainer> expect_resumed_run_equals_straight(
    const std::function<std::unique_ptr<train::Trainer>()>& start, const std::string& text, int half,
    const std::string& dir) {
  const std::unique_ptr<train::Trainer> straight = start();
  std::vector<double> want, got;
  for (int i = 0; i < 2 * half; ++i) want.push_back(straight->train_step().loss);
  {
    const std::unique_ptr<train::Trainer> first = start();
    for (int i = 0; i < half; ++i) got.push_back(first->train_step().loss);
    train::save_run(*first, dir);
  }
  randn({100});
  std::unique_ptr<train::Trainer> second = train::resume_trainer(dir, train::saved_options(dir), text);
  EXPECT_EQ(second->step(), half);
  for (int i = 0; i < half; ++i) got.push_back(second->train_step().loss);
  EXPECT_EQ(got, want);  // exact, not close
  for (const auto& [a, b] : {std::pair(straight->model().state_dict(), second->model().state_dict()),
                             std::pair(straight->optimizer().state_dict(), second->optimizer().state_dict())}) {
    EXPECT_EQ(a.size(), b.size());
    for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) EXPECT_TRUE(same_bytes(b[k].second, a[k].second)) << a[k].first;
  }
  return second;
}

}  // namespace tg::test
