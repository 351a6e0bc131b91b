// nn/nn.h — everything in tg::nn: Module, the layers, attention, the GPT model, LoRA adapters,
// initialisation, gradcheck of a module; and tg::save / tg::load.
#pragma once
#include "nn/init.h"
#include "nn/attention.h"
#include "nn/generate.h"
#include "nn/gpt.h"
#include "nn/gpt_lora.h"
#include "nn/gradcheck.h"
#include "nn/layers.h"
#include "nn/lora.h"
#include "nn/module.h"
#include "nn/serialize.h"
