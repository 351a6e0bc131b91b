# test_hf_llama.py — Llama, Qwen2 and Qwen3 folders saved by tapegrad (models/hf/hf_llama.h) read by
# the PyTorch twin in Hugging Face's layout (examples/pytorch/tapegrad_twin/hf_llama.py), as a user of
# transformers would.
#
#   1. the test binary reads each type's sharded BF16 folder of tests/reference/hf_llama and saves it
#      back, one model.safetensors in float32 (HfLlama.SavesEachBF16FolderIntoTheFolderNamedByTgHfLlamaOut);
#   2. LlamaForCausalLM.from_pretrained reads each: its logits equal the reference's (the BF16
#      folder read by the twin) within 1e-5 + 1e-5 * |ref|, and its greedy ids with the KV cache
#      are the reference's;
#   3. train_gpt --arch llama and --arch qwen3 (grouped-query, one tied) train a tiny run each; the
#      run's folder is read by from_pretrained as it is, and its logits and greedy ids are the ones
#      generate --ckpt RUN writes (--logits-out, --ids-out).
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/test_hf_llama.py [build/tests/tapegrad_tests]
import json
import os
import subprocess
import sys
import tempfile

import torch

from tapegrad_twin.hf_llama import LlamaForCausalLM, greedy
from tapegrad_twin.run_folder import read_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

FIXTURES = os.path.join(ROOT, "tests", "reference", "hf_llama")
TEST = "HfLlama.SavesEachBF16FolderIntoTheFolderNamedByTgHfLlamaOut"


def fail(what):
    sys.exit(f"test_hf_llama: FAILED: {what}")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tests", "tapegrad_tests")
    reference, _ = read_safetensors(os.path.join(FIXTURES, "logits.safetensors"))
    ids = reference["ids"]
    with tempfile.TemporaryDirectory() as saved:
        run = subprocess.run([binary, f"--gtest_filter={TEST}"], env=dict(os.environ, TG_HF_LLAMA_OUT=saved),
                             capture_output=True, text=True)
        if run.returncode != 0 or "[  PASSED  ] 1 test." not in run.stdout:
            fail(f"{binary} {TEST}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
        for model_type in ("llama", "qwen2", "qwen3"):
            model = LlamaForCausalLM.from_pretrained(os.path.join(saved, model_type))
            with torch.no_grad():
                logits = model(ids)
            want = reference[f"{model_type}_bf16"]
            if not bool(((logits - want).abs() <= 1e-5 + 1e-5 * want.abs()).all()):
                fail(f"{model_type}: logits of tapegrad's folder differ from the reference by "
                     f"{(logits - want).abs().max().item()}")
            want_ids = reference[f"{model_type}_bf16_greedy"]
            if not torch.equal(greedy(model, ids, want_ids.shape[1] - ids.shape[1]), want_ids):
                fail(f"{model_type}: greedy ids of tapegrad's folder differ from the reference's")
            print(f"same: {model_type}'s folder saved by tapegrad, read by the PyTorch twin: logits and greedy ids")
    examples = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))), "examples")
    for arch, extra in (("llama", ["--tie-weights"]), ("qwen3", [])):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            tiny = ["--arch", arch, "--kv-heads", "2", "--emb-dim", "32", "--heads", "4", "--layers", "2",
                    "--context", "32", "--batch", "4", "--steps", "20", "--eval-batches", "2", "--sample-tokens", "0"]
            subprocess.run([os.path.join(examples, "train_gpt"), *tiny, *extra, "--out", run_dir], check=True,
                           capture_output=True)
            prompt = [1, 5, 9, 2, 7]
            logits_path, ids_path = os.path.join(tmp, "logits.safetensors"), os.path.join(tmp, "ids.json")
            subprocess.run([os.path.join(examples, "generate"), "--ckpt", run_dir, "--prompt-ids",
                            ",".join(map(str, prompt)), "--tokens", "12", "--temperature", "0", "--ignore-eos",
                            "--logits-out", logits_path, "--ids-out", ids_path], check=True, capture_output=True)
            model = LlamaForCausalLM.from_pretrained(run_dir)
            x = torch.tensor([prompt])
            with torch.no_grad():
                logits = model(x)[0]
            want = next(iter(read_safetensors(logits_path)[0].values())).reshape(logits.shape)
            if not bool(((logits - want).abs() <= 1e-5 + 1e-5 * want.abs()).all()):
                fail(f"train_gpt --arch {arch}: the twin's logits of the run differ from generate's by "
                     f"{(logits - want).abs().max().item()}")
            with open(ids_path) as f:
                want_ids = torch.tensor([json.load(f)])
            if not torch.equal(greedy(model, x, 12)[:, len(prompt):], want_ids):  # --ids-out: the generated ones
                fail(f"train_gpt --arch {arch}: the twin's greedy ids of the run differ from generate's")
            print(f"same: a train_gpt --arch {arch} run, read by the PyTorch twin as a Hugging Face folder: logits "
                  f"(max diff {(logits - want).abs().max().item():.1e}) and greedy ids")


if __name__ == "__main__":
    main()
