// nn/quantize.h — weight-only int8 for a model that writes or is scored, as llama.cpp's Q8_0
// (generate --quantize int8; evaluate too).
//
//   quantize_int8_(model)     every Linear's and Embedding's weight becomes int8, one float32
//                             scale per group of 32 elements of a row (autograd/ops/quantize.cpp)
//
// In place, at load time, with nothing new on disk: each layer's weight tensor takes the int8
// values (so a weight tied to another, an output head on its embedding, stays one tensor), its
// float storage is let go, and the layer registers the scales as the buffer "weight_scale". Its
// forward then reads the int8 weight (one visible branch in nn/layers.cpp). The activations, the
// norms and the biases stay float32.
//
// What it costs: 1 + 4/32 bytes a weight instead of 4 (float32) or 2 (bfloat16), and each
// weight moves by at most half its group's step (max |w| / 254). docs/llama-and-qwen.md measures
// the perplexity that moves, and the tokens a second it gains.
//
// A quantized model is for inference: its int8 weights take no gradient and cannot be saved
// (safetensors has no place for their scales here); load the model again to train it.
#pragma once
#include <cstdint>

#include "nn/module.h"

namespace tg::nn {

// Returns how many weights it quantized (a tied pair counts once). A weight already int8 is left
// as it is. group_size >= 1 (autograd/ops/quantize.cpp: int8_group_size). A weight with a
// non-finite value is an Error naming it ("model.layers.3.mlp.up_proj.weight has a non-finite
// value (nan) at index [5, 17]"), raised before any weight changes.
int64_t quantize_int8_(Module& model, int64_t group_size = 32);

}  // namespace tg::nn
