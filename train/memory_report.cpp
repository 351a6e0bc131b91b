// train/memory_report.cpp — the memory split, as a line and as JSON.
#include "train/memory_report.h"

#include <cstdio>

#include "autograd/tape.h"

namespace tg::train {

namespace {

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", bytes / (1 << 20));  // 474.7, 3290, 0.01234
  return buf;
}

}  // namespace

std::string MemoryReport::str() const {
  auto bytes = [](int64_t n) { return human_bytes(static_cast<size_t>(n)); };
  return "tensors at a step's peak " + bytes(peak_tensors()) + " = parameters " + bytes(parameters) +
         " + gradients " + bytes(gradients) + " + optimizer state " + bytes(optimizer) + " + activations " +
         bytes(activations) + "; peak RSS " + bytes(static_cast<int64_t>(peak_rss_mb * (1 << 20)));
}

std::string MemoryReport::json() const {
  return "{\"parameters_mb\": " + mib(static_cast<double>(parameters)) + ", \"gradients_mb\": " +
         mib(static_cast<double>(gradients)) + ", \"optimizer_mb\": " + mib(static_cast<double>(optimizer)) +
         ", \"activations_mb\": " + mib(static_cast<double>(activations)) + ", \"peak_tensors_mb\": " +
         mib(static_cast<double>(peak_tensors())) + ", \"peak_rss_mb\": " + mib(peak_rss_mb * (1 << 20)) + "}";
}

}  // namespace tg::train
