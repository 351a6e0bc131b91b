# evaluate.py — the PyTorch twin of examples/evaluate.cpp: the same multiple-choice data sets, the
# same prompts and the same log-likelihoods, computed the way lm-evaluation-harness computes them:
# each (context, continuation) pair run whole through the model, one forward per choice
# (tapegrad_twin/multiple_choice.py).
#
#     /usr/bin/python3 examples/pytorch/evaluate.py --ckpt gpt2 --task hellaswag --data hellaswag_val.jsonl --out items.jsonl
#
# It reads a tapegrad run (tapegrad_twin/resume.py), a GPT-2 folder (tapegrad_twin/hf_gpt2.py with
# gpt2_tokenizer.py) or a Llama / Qwen folder (tapegrad_twin/hf_llama.py; its tokenizer.json needs the
# `tokenizers` package, which Debian does not have: without it, such a folder is scored by ids through
# loglikelihood() alone, as tests/reference/make_multiple_choice_reference.py does). Its prompts are
# written there from the harness's task definitions, independently of train/task_formats.cpp, and
# its last line is the same JSON object as evaluate's; --out writes the same JSON lines. --shots
# draws the same solved items as evaluate's (C++'s std::mt19937_64), from the whole file whatever
# --limit.
import argparse
import json
import math

import torch

from tapegrad_twin.multiple_choice import encode_pair, item_context, load, loglikelihood, read_items


def stderr(values):
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1) / len(values))


def main():
    p = argparse.ArgumentParser(description="Scores a model on a multiple-choice data set, each pair whole.")
    p.add_argument("--ckpt", required=True)
    p.add_argument("--task", required=True, choices=["hellaswag", "arc", "mmlu", "choices"])
    p.add_argument("--data", required=True)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--shots", type=int, default=0)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--out", default="")
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    items = read_items(a.task, a.data)  # all of them: the shots are drawn from the whole file
    scored = items[:a.limit] if a.limit else items
    model, encode, bos, eos, max_length = load(a.ckpt)
    if encode is None:
        raise SystemExit(f"evaluate.py: {a.ckpt}: reading its tokenizer.json needs the `tokenizers` package")
    lines, acc, acc_norm = [], [], []
    for index, (_, _, choices, label) in enumerate(scored):
        context = item_context(items, index, a.shots, a.seed)
        lls = []
        for choice in choices:
            context_ids, continuation_ids = encode_pair(encode, bos, eos, context, " " + choice)
            lls.append(loglikelihood(model, context_ids, continuation_ids, max_length))
        lengths = [len(c) for c in choices]
        pred = max(range(len(lls)), key=lambda i: (lls[i], -i))
        pred_norm = max(range(len(lls)), key=lambda i: (lls[i] / lengths[i], -i))
        acc.append(float(pred == label))
        acc_norm.append(float(pred_norm == label))
        lines.append(json.dumps({"index": index, "loglikelihoods": lls, "lengths": lengths, "pred": pred,
                                 "pred_norm": pred_norm, "label": label}))
    if a.out:
        with open(a.out, "w") as f:
            f.write("".join(line + "\n" for line in lines))
    print(json.dumps({"task": a.task, "items": len(scored), "acc": sum(acc) / len(acc), "acc_stderr": stderr(acc),
                      "acc_norm": sum(acc_norm) / len(acc_norm), "acc_norm_stderr": stderr(acc_norm)}))


if __name__ == "__main__":
    main()
