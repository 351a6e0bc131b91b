# make_hf_gpt2_reference.py — a tiny random GPT-2 in Hugging Face's layout, as test data for
# models/hf/hf_gpt2.h (tests/models/test_hf_gpt2.cpp).
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_hf_gpt2_reference.py
#
# The model is examples/pytorch/tapegrad_twin/hf_gpt2.py's GPT2LMHeadModel: vocab 97, n_positions 32, n_embd 16,
# n_layer 2, n_head 4, layer_norm_epsilon 1e-4 (not the default), every weight, bias and LayerNorm
# parameter drawn at random from torch.manual_seed(2024) (so a mix-up of any two shows). n_embd is
# 16, not 48, to keep the three folders small (35 KB in F32). It writes, under tests/reference/hf_gpt2/:
#   f32/    config.json, model.safetensors: F32, names with "transformer.", each block's
#           attn.bias and attn.masked_bias buffers (as older HF versions saved them)
#   f16/    F16, names without the prefix, and lm_head.weight (as other tools' files have it)
#   bf16/   BF16, names without the prefix
#   logits.safetensors   "ids" (1, 12) int64 and, for each folder, its logits (1, 12, 97) in float32:
#           the folder read back by GPT2LMHeadModel.from_pretrained (16-bit weights widened to
#           float32) and run in float32
import os

import torch

from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.run_folder import safetensors_bytes

HERE = os.path.dirname(os.path.abspath(__file__))

OUT = os.path.join(HERE, "hf_gpt2")
CONFIG = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
          "bos_token_id": 96, "embd_pdrop": 0.1, "eos_token_id": 96, "initializer_range": 0.02,
          "layer_norm_epsilon": 1e-4, "model_type": "gpt2", "n_embd": 16, "n_head": 4, "n_inner": None,
          "n_layer": 2, "n_positions": 32, "resid_pdrop": 0.1, "vocab_size": 97}
IDS = [[5, 96, 0, 17, 42, 42, 3, 88, 61, 7, 29, 1]]
FOLDERS = {"f32": dict(dtype=torch.float32, prefixed=True, buffers=True),
           "f16": dict(dtype=torch.float16, prefixed=False, lm_head=True),
           "bf16": dict(dtype=torch.bfloat16, prefixed=False)}


def main():
    torch.manual_seed(2024)
    model = GPT2LMHeadModel(CONFIG)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))
    ids = torch.tensor(IDS)
    logits = {"ids": ids}
    for folder, options in FOLDERS.items():
        dtype = options.pop("dtype")
        path = os.path.join(OUT, folder)
        model.save_pretrained(path, dtype=dtype, prefixed=options["prefixed"])
        if options.get("buffers") or options.get("lm_head"):  # rewrite the weights with the extra tensors
            tensors = model.hf_tensors(dtype=dtype, **options)
            with open(os.path.join(path, "model.safetensors"), "wb") as f:
                f.write(safetensors_bytes(tensors, {"format": "pt"}))
        with torch.no_grad():
            logits[folder] = GPT2LMHeadModel.from_pretrained(path)(ids)
        print(f"wrote {path}: {', '.join(sorted(os.listdir(path)))}")
    with open(os.path.join(OUT, "logits.safetensors"), "wb") as f:
        f.write(safetensors_bytes(logits, {"format": "pt"}))
    print(f"wrote {OUT}/logits.safetensors")


if __name__ == "__main__":
    main()
