// train/memory_report.h — what a training step's memory is made of, so a user can see
// which option would save the most (train_gpt prints it at the end; bench_gpt puts it in its JSON).
//
//   parameters    every parameter's bytes (frozen ones too; a tied weight once)
//   gradients     the .grad of every parameter that gets one (a frozen one gets none)
//   optimizer     the optimizer's state: AdamW keeps two moments per trained parameter (2x its
//                 bytes) and a step count
//   activations   the step's peak of tensor memory above what lives between steps, less the
//                 gradients: what the forward keeps for backward (--checkpoint-activations cuts
//                 it) and the largest temporaries of forward and backward (the head's (B*T, V)
//                 logits and their gradient among them)
//
// The four add up to the tensor memory at the step's peak. The process's peak RSS is more: the
// allocator's cache of freed buffers, BLIS's packing buffers, the text and its token ids, the
// program itself.
#pragma once
#include <cstdint>
#include <string>

namespace tg::train {

struct MemoryReport {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t activations = 0;
  double peak_rss_mb = 0;
  int64_t peak_tensors() const { return parameters + gradients + optimizer + activations; }
  // "tensors at a step's peak 3.2 GiB = parameters 474.7 MiB + gradients ... ; peak RSS 3.6 GiB"
  std::string str() const;
  // {"parameters_mb": ..., "gradients_mb": ..., "optimizer_mb": ..., "activations_mb": ...,
  //  "peak_tensors_mb": ..., "peak_rss_mb": ...} (MiB: tensors to 4 decimals, RSS to 1)
  std::string json() const;
};

}  // namespace tg::train
