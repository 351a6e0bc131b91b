// nn/nn.h — everything in tg::nn: Module, the layers, attention, LoRA adapters, initialisation,
// gradcheck of a module; and tg::save / tg::load. The models built of them are in models/
// (models/gpt.h, models/llama.h), a floor above.
#pragma once
#include "nn/init.h"
#include "nn/attention.h"
#include "nn/gradcheck.h"
#include "nn/layers.h"
#include "nn/lora.h"
#include "nn/module.h"
#include "nn/serialize.h"
