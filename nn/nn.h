// nn/nn.h — everything in tg::nn: Module, the layers, attention, the GPT model, LoRA adapters,
// initialisation, gradcheck of a module; and tg::save / tg::load.
#pragma once
#include "nn/init.h"
#include "nn/attention.h"
#include "models/generate.h"
#include "models/gpt.h"
#include "models/gpt_lora.h"
#include "nn/gradcheck.h"
#include "nn/layers.h"
#include "nn/lora.h"
#include "nn/module.h"
#include "nn/serialize.h"
