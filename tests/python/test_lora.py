# test_lora.py — LoRA runs of train_gpt (their adapters in peft's files, models/lora/lora_adapters.h)
# read by the PyTorch twin (examples/pytorch/tapegrad_twin/lora.py on hf_gpt2.py and hf_llama.py), as a peft
# user would, for a GPT-2 base and a Qwen3 base (tests/reference/lora/base, qwen3_base):
#
#   1. train_gpt --init-from BASE --lora-rank 4 --lora-targets attn,mlp, 3 steps;
#   2. the twin: from_pretrained(base), apply_lora with adapter_config.json's r, lora_alpha and
#      target_modules, load_adapters(adapters.safetensors): its logits equal generate --ckpt RUN
#      --logits-out's within 1e-5 + 1e-5 * |ref| (so the names, shapes and orientation are peft's);
#   3. train_gpt --resume RUN --merge-lora OUT: from_pretrained(OUT) gives the same logits, and so
#      does the twin's own merge_and_unload;
#   4. tapegrad_run.py refuses the LoRA run in one line.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/test_lora.py [build/examples]
import json
import os
import subprocess
import sys
import tempfile

import torch

from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.hf_llama import LlamaForCausalLM
from tapegrad_twin.lora import apply_lora, load_adapters, merge_and_unload
from tapegrad_twin.run_folder import read_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

BASES = {"GPT-2": (os.path.join(ROOT, "tests", "reference", "lora", "base"), GPT2LMHeadModel),
         "Qwen3": (os.path.join(ROOT, "tests", "reference", "lora", "qwen3_base"), LlamaForCausalLM)}
TEXT = os.path.join(ROOT, "tests", "reference", "lora", "text.txt")
IDS = [3, 17, 256, 40, 9, 270, 12, 5, 88, 1]
TARGETS = {("attn.c_proj", "c_attn"): ["attn"], ("c_fc", "mlp.c_proj"): ["mlp"],
           ("attn.c_proj", "c_attn", "c_fc", "mlp.c_proj"): ["attn", "mlp"],
           ("k_proj", "o_proj", "q_proj", "v_proj"): ["attn"], ("down_proj", "gate_proj", "up_proj"): ["mlp"],
           ("down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"): ["attn", "mlp"]}


def fail(what):
    sys.exit(f"test_lora: FAILED: {what}")


def run(*args):
    done = subprocess.run(list(args), capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        fail(f"{' '.join(args)}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def expect_close(got, want, what):
    worst = (got - want).abs().max().item()
    if not bool(((got - want).abs() <= 1e-5 + 1e-5 * want.abs()).all()):
        fail(f"{what}: differ by up to {worst}")
    print(f"same: {what} (within {worst:.1e})")


def main():
    programs = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "examples")
    train_gpt, generate = os.path.join(programs, "train_gpt"), os.path.join(programs, "generate")
    for name, (base, model_class) in BASES.items():
        print(f"{name}:")
        check_run(train_gpt, generate, base, model_class)


def check_run(train_gpt, generate, base, model_class):
    with tempfile.TemporaryDirectory() as work:
        folder, merged, logits_path = (os.path.join(work, n) for n in ("run", "merged", "logits.safetensors"))
        run(train_gpt, "--init-from", base, "--data", TEXT, "--lora-rank", "4", "--lora-alpha", "8", "--lora-targets",
            "attn,mlp", "--steps", "3", "--batch", "2", "--context", "16", "--lr", "2e-2", "--warmup", "1",
            "--eval-batches", "1", "--sample-tokens", "1", "--threads", "1", "--out", folder)
        run(generate, "--ckpt", folder, "--prompt-ids", ",".join(map(str, IDS)), "--tokens", "0", "--logits-out",
            logits_path)
        want = read_safetensors(logits_path)[0]["logits"]

        with open(os.path.join(folder, "adapter_config.json")) as f:
            config = json.load(f)
        twin = model_class.from_pretrained(config["base_model_name_or_path"])
        apply_lora(twin, config["r"], config["lora_alpha"], TARGETS[tuple(sorted(config["target_modules"]))])
        load_adapters(twin, read_safetensors(os.path.join(folder, "adapters.safetensors"))[0])
        with torch.no_grad():
            expect_close(twin.eval()(torch.tensor([IDS]))[0], want,
                         "the twin with the run's adapters.safetensors against generate --ckpt RUN")
            run(train_gpt, "--resume", folder, "--merge-lora", merged)
            expect_close(model_class.from_pretrained(merged)(torch.tensor([IDS]))[0], want,
                         "from_pretrained of --merge-lora's folder")
            expect_close(merge_and_unload(twin)(torch.tensor([IDS]))[0], want, "the twin's merge_and_unload")

        refused = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "pytorch", "tapegrad_run.py"), "train",
                                  folder, "--steps", "1", "--out", os.path.join(work, "x")], capture_output=True, text=True)
        lines = refused.stderr.strip().splitlines()
        if refused.returncode == 0 or len(lines) != 1 or "a LoRA run" not in lines[0]:
            fail(f"tapegrad_run.py train on a LoRA run: exit {refused.returncode}, {refused.stderr!r}")
        print(f"refused: {lines[0]}")


if __name__ == "__main__":
    main()
