# make_train_reference.py — PyTorch 1.13 trains the GPT with examples/pytorch/tapegrad_twin/training.py (the
# procedure of tapegrad's Trainer) on tests/reference/parity_corpus.txt; the loss of every step
# and the final evaluation are test data for tests/train/test_train_parity.cpp.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_train_reference.py
#
# parity_corpus.txt is tapegrad's built-in corpus, builtin_corpus(20000, 7) (a test checks that
# they are equal). Writes tests/reference/train_torch.json; losses are the 16 hex digits of each
# float32 loss widened to float64.
import json
import os
import struct

import torch

from tapegrad_twin.training import Run, options

HERE = os.path.dirname(os.path.abspath(__file__))

RUNS = []


def hexd(v):
    return struct.pack(">d", float(v)).hex()


def run(run_id, steps, **flags):
    argv = ["--data", "parity_corpus.txt"]
    for k, v in flags.items():
        argv += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
    o = options(argv + ["--steps", str(steps)])
    with open(os.path.join(HERE, "parity_corpus.txt"), encoding="utf-8") as f:
        text = f.read()
    r = Run(o, text)
    losses = [hexd(r.train_step()) for _ in range(steps)]
    e = r.evaluate()
    RUNS.append({"id": run_id, "steps": steps, "flags": flags, "losses": losses,
                 "eval": [hexd(e.train), hexd(e.val)]})


def main():
    torch.set_num_threads(1)
    small = dict(batch=4, context=16, emb_dim=16, heads=2, layers=2, eval_batches=2)
    run("cosine_clip", 100, **small, lr=3e-3, min_lr=3e-4, warmup=10, weight_decay=0.1, grad_clip=1.0)
    run("constant_no_clip", 100, **small, lr_schedule="constant", lr=1e-3, weight_decay=0.0, grad_clip=0.0, seed=7)
    run("dropout", 20, **small, dropout=0.2, lr=3e-3, warmup=5, seed=11)
    run("grad_accum", 30, **dict(small, batch=2), grad_accum=2, lr=3e-3, warmup=5, seed=5)
    run("tie_weights", 30, **small, tie_weights=True, lr=3e-3, warmup=5, seed=9)
    path = os.path.join(HERE, "train_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_train_reference.py", "torch_version": torch.__version__,
                   "runs": RUNS}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(RUNS)} runs to {path}")


main()
