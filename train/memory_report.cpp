// train/memory_report.cpp — the memory split, as a line and as JSON.
#include "train/memory_report.h"

#include "io/json.h"
#include "autograd/tape.h"

namespace tg::train {

namespace {

// Bytes in MiB to 4 decimals (about 100 bytes): 474.6632, 0.0441.
double mib(double bytes) { return json::round_to(bytes / (1 << 20), 4); }

}  // namespace

std::string MemoryReport::str() const {
  auto bytes = [](int64_t n) { return human_bytes(static_cast<size_t>(n)); };
  return "tensors at a step's peak " + bytes(peak_tensors()) + " = parameters " + bytes(parameters) +
         " + gradients " + bytes(gradients) + " + optimizer state " + bytes(optimizer) + " + activations " +
         bytes(activations) + "; peak RSS " + bytes(static_cast<int64_t>(peak_rss_mb * (1 << 20)));
}

std::string MemoryReport::json() const {
  json::Writer w;
  w.field("parameters_mb", mib(static_cast<double>(parameters)))
      .field("gradients_mb", mib(static_cast<double>(gradients)))
      .field("optimizer_mb", mib(static_cast<double>(optimizer)))
      .field("activations_mb", mib(static_cast<double>(activations)))
      .field("peak_tensors_mb", mib(static_cast<double>(peak_tensors())))
      .field("peak_rss_mb", json::round_to(peak_rss_mb, 1));
  return w.str();
}

}  // namespace tg::train
