# test_hf_gpt2.py — a Hugging Face GPT-2 folder saved by tapegrad (models/hf/hf_gpt2.h) read by
# the PyTorch twin in HF's layout (examples/pytorch/tapegrad_twin/hf_gpt2.py), as a user of transformers would.
#
#   1. the test binary reads tests/reference/hf_gpt2/f16 (F16, no prefix, lm_head) and saves it
#      back into a temporary folder (HfGpt2.SavesTheF16FolderIntoTheFolderNamedByTgHfGpt2Out);
#   2. GPT2LMHeadModel.from_pretrained reads that folder: its logits equal the reference's (the
#      F16 folder's, read by PyTorch) within 1e-5 + 1e-5 * |ref|;
#   3. the twin's KV cache (past_key_values) gives those logits too, one position a step;
#   4. the twin reads the F16 folder and save_pretrained writes it (float32, no prefix): the same
#      bytes as tapegrad's model.safetensors and config.json.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/test_hf_gpt2.py [build/tests/tapegrad_tests]
import os
import subprocess
import sys
import tempfile

import torch

from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.run_folder import read_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

FIXTURES = os.path.join(ROOT, "tests", "reference", "hf_gpt2")
TEST = "HfGpt2.SavesTheF16FolderIntoTheFolderNamedByTgHfGpt2Out"


def fail(what):
    sys.exit(f"test_hf_gpt2: FAILED: {what}")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "tests", "tapegrad_tests")
    reference, _ = read_safetensors(os.path.join(FIXTURES, "logits.safetensors"))
    with tempfile.TemporaryDirectory() as work:
        saved, twin = os.path.join(work, "tapegrad"), os.path.join(work, "twin")
        os.makedirs(saved)
        run = subprocess.run([binary, f"--gtest_filter={TEST}"], env=dict(os.environ, TG_HF_GPT2_OUT=saved),
                             capture_output=True, text=True)
        if run.returncode != 0 or "[  PASSED  ] 1 test." not in run.stdout:
            fail(f"{binary} {TEST}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")

        with torch.no_grad():
            logits = GPT2LMHeadModel.from_pretrained(saved)(reference["ids"])
        want = reference["f16"]
        if not bool(((logits - want).abs() <= 1e-5 + 1e-5 * want.abs()).all()):
            fail(f"logits of tapegrad's folder differ from the reference by {(logits - want).abs().max().item()}")
        print("same: the logits of the folder tapegrad saved, read by the PyTorch twin")

        # the twin's KV cache (bench_generate_torch.py --init-from): the first half of the ids,
        # then one position a step with past_key_values, gives the whole forward's logits
        model, ids = GPT2LMHeadModel.from_pretrained(saved), reference["ids"]
        with torch.no_grad():
            half = ids.shape[1] // 2
            logits, past = model(ids[:, :half], use_cache=True)
            rows = [logits]
            for t in range(half, ids.shape[1]):
                logits, past = model(ids[:, t:t + 1], past_key_values=past, use_cache=True)
                rows.append(logits)
            cached = torch.cat(rows, dim=1)
        if not bool(((cached - want).abs() <= 1e-5 + 1e-5 * want.abs()).all()):
            fail(f"the twin's KV cache gives logits off by {(cached - want).abs().max().item()}")
        print(f"same: the twin's logits with its KV cache ({half} positions, then one a step) and without")

        GPT2LMHeadModel.from_pretrained(os.path.join(FIXTURES, "f16")).save_pretrained(twin, prefixed=False)
        for name in ("model.safetensors", "config.json"):
            with open(os.path.join(saved, name), "rb") as a, open(os.path.join(twin, name), "rb") as b:
                if a.read() != b.read():
                    fail(f"{name}: tapegrad's and the twin's save_pretrained differ")
            print(f"same bytes: {name} saved by tapegrad and by the twin's save_pretrained")


if __name__ == "__main__":
    main()
