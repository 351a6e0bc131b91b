# test_classifier.py — classifier folders saved by train_gpt --task classify read by the PyTorch twin
# (examples/pytorch/tapegrad_twin/classifier.py): tapegrad's own GPT layout, a Qwen3 run from scratch, a run from
# the tests' tiny GPT-2 folder (GPT2ForSequenceClassification, names under "transformer.") and one
# from the tests' tiny Qwen3 folder, and LoRA runs from both folders (adapters and head in peft's
# files, the body the base folder's), and the Qwen3 run as transformers saves a classifier (without
# the body's untied lm_head.weight). For texts of examples/data/messages.tsv, the twin's class
# probabilities equal generate --classify's within 1e-6, and its classes are the same.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/test_classifier.py [build/examples]
import json
import os
import shutil
import subprocess
import sys
import tempfile

from tapegrad_twin.classifier import class_probabilities, load_classifier
from tapegrad_twin.run_folder import read_safetensors, safetensors_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

MESSAGES = os.path.join(ROOT, "examples", "data", "messages.tsv")
REFERENCE = os.path.join(ROOT, "tests", "reference")
DATA = ["--task", "classify", "--data", MESSAGES, "--columns", "label,text", "--balance", "--steps", "20",
        "--batch", "8", "--threads", "1"]
SHAPE = ["--emb-dim", "32", "--heads", "2", "--layers", "1", "--context", "48"]
RUNS = {"gpt": SHAPE, "qwen3": SHAPE + ["--arch", "qwen3", "--kv-heads", "1"],
        "gpt2_folder": ["--init-from", os.path.join(REFERENCE, "lora", "base")],
        "qwen3_folder": ["--init-from", os.path.join(REFERENCE, "lora", "qwen3_base")],
        "gpt2_lora": ["--init-from", os.path.join(REFERENCE, "lora", "base"), "--lora-rank", "4", "--lr", "1e-2"],
        "qwen3_lora": ["--init-from", os.path.join(REFERENCE, "lora", "qwen3_base"), "--lora-rank", "2",
                       "--lora-targets", "attn,mlp", "--lr", "1e-2"]}


def fail(what):
    sys.exit(f"test_classifier: FAILED: {what}")


def without_lm_head(run, folder):
    """run's model as transformers saves a classifier: config.json, tokenizer.json and the weights
    without lm_head.weight."""
    os.makedirs(folder)
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(os.path.join(run, name), folder)
    tensors, metadata = read_safetensors(os.path.join(run, "model.safetensors"))
    if "lm_head.weight" not in tensors:
        fail(f"{run}: no untied lm_head.weight to leave out")
    del tensors["lm_head.weight"]
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(tensors, metadata))


def main():
    examples = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "examples")
    texts = [line.split("\t", 1)[1] for line in open(MESSAGES, encoding="utf-8").read().splitlines()[:8]]
    texts.append("Claim your FREE prize now")
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in list(RUNS.items()) + [("qwen3_without_lm_head", None)]:
            run = os.path.join(tmp, name)
            if flags is None:
                without_lm_head(os.path.join(tmp, "qwen3"), run)
            else:
                subprocess.run([os.path.join(examples, "train_gpt")] + DATA + flags + ["--out", run], check=True,
                               stdout=subprocess.DEVNULL)
            model, classes, tokenizer, context = load_classifier(run)
            if classes != ["ham", "spam"]:
                fail(f"{name}: classes {classes}")
            worst = 0.0
            for text in texts:
                out = subprocess.run([os.path.join(examples, "generate"), "--ckpt", run, "--classify", text],
                                     check=True, capture_output=True, text=True).stdout
                theirs = json.loads(out.strip().split("\n")[-1])
                ours = class_probabilities(model, tokenizer.encode(text)[:context])
                for c, p in zip(classes, ours):
                    worst = max(worst, abs(p - theirs["probabilities"][c]))
                if classes[max(range(len(ours)), key=lambda k: ours[k])] != theirs["label"]:
                    fail(f"{name}: {text!r}: the twin's class differs from generate's ({theirs['label']})")
            if worst > 1e-6:
                fail(f"{name}: a class probability differs from generate --classify's by {worst:.2e}")
            print(f"test_classifier: {name}: {len(texts)} texts, the same classes, largest difference {worst:.1e}")


if __name__ == "__main__":
    main()
