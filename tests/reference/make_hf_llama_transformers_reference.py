# make_hf_llama_transformers_reference.py — Hugging Face transformers itself on the Llama / Qwen
# test folders: a check of examples/pytorch/tapegrad_twin/hf_llama.py (the twin tapegrad's tests
# compare with), and folders that transformers writes, for tapegrad to read.
#
#     PYTHONPATH=examples/pytorch python3 tests/reference/make_hf_llama_transformers_reference.py OUT
#
# Needs pip's torch 2.x and transformers (not Debian packages: this script is not part of CI; its
# output, tests/reference/hf_llama/transformers/, is committed, as every reference is).
#   1. Each folder of tests/reference/hf_llama/<type>/{f32,bf16} (written by the twin) is read by
#      AutoModelForCausalLM.from_pretrained and run in float32 on the ids of logits.safetensors;
#      its logits and its greedy ids (KV cache, past_key_values) are compared with the twin's.
#      OUT/report.json holds the worst relative logit difference and whether the ids are equal.
#   2. For each type, transformers' own model of make_hf_llama_reference.py's config, its weights
#      drawn at random (torch.manual_seed(31); weights 0.3 randn, norm weights 1 + 0.2 randn), is
#      saved by save_pretrained into OUT/<type>/ (its config.json as this transformers version
#      writes it), with OUT/logits.safetensors: "<type>" logits (2, 10, V) float32 and
#      "<type>_greedy" ids (2, 18), and "ids".
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModelForCausalLM

from make_hf_llama_reference import CONFIGS, IDS, NEW_TOKENS  # beside this script

HERE = os.path.dirname(os.path.abspath(__file__))

FIXTURES = os.path.join(HERE, "hf_llama")


def load(path):
    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    except TypeError:  # transformers 4 names it torch_dtype
        return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()


def greedy(model, ids, new_tokens):
    """The prompt once, then one position a step through past_key_values."""
    with torch.no_grad():
        out = model(ids, use_cache=True)
        result = ids
        for _ in range(new_tokens):
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            result = torch.cat((result, nxt), dim=1)
            out = model(nxt, past_key_values=out.past_key_values, use_cache=True)
        return result


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    ids = torch.tensor(IDS)
    twin = load_file(os.path.join(FIXTURES, "logits.safetensors"))
    report = {"torch": torch.__version__, "transformers": transformers.__version__, "twin_folders": {}}
    for model_type in CONFIGS:
        for folder in ("f32", "bf16"):
            model = load(os.path.join(FIXTURES, model_type, folder))
            with torch.no_grad():
                logits = model(ids).logits
            want = twin[f"{model_type}_{folder}"]
            report["twin_folders"][f"{model_type}/{folder}"] = {
                "max_abs_diff": float((logits - want).abs().max()),
                "max_rel_diff": float((logits - want).abs().max() / want.abs().max()),
                "greedy_equal": bool(torch.equal(greedy(model, ids, NEW_TOKENS), twin[f"{model_type}_{folder}_greedy"])),
            }
            print(model_type, folder, report["twin_folders"][f"{model_type}/{folder}"], flush=True)

    torch.manual_seed(31)
    tensors = {"ids": ids}
    for model_type, config in CONFIGS.items():
        fields = {k: v for k, v in config.items() if k not in ("model_type", "architectures")}
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **fields)).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(1.0 + 0.2 * torch.randn_like(p) if name.endswith("norm.weight") else 0.3 * torch.randn_like(p))
        path = os.path.join(out_dir, model_type)
        model.save_pretrained(path)
        with torch.no_grad():
            tensors[model_type] = model(ids).logits.contiguous()
        tensors[f"{model_type}_greedy"] = greedy(model, ids, NEW_TOKENS)
        print("wrote", path, sorted(os.listdir(path)), flush=True)
    save_file(tensors, os.path.join(out_dir, "logits.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
