# make_multiple_choice_reference.py — choices' log-likelihoods from the PyTorch twin
# (examples/pytorch/tapegrad_twin/multiple_choice.py: loglikelihood, each context + continuation run whole, as
# lm-evaluation-harness runs it), as test data for tests/train/test_multiple_choice_torch.cpp.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_multiple_choice_reference.py
#
# Four small random models: the book's GPT (examples/pytorch/tapegrad_twin/gpt_model.py) from torch.manual_seed(11),
# which tapegrad's GPTModel makes bit for bit from the same seed, and the committed folders
# hf_gpt2/f32, hf_llama/llama/f32 and hf_llama/qwen3/f32. For each, a few items of token ids (from
# torch.randint after manual_seed(5)): a context and four continuations of 1 to 7 ids; the last
# item's context is longer than the model's context, so the harness's cut of its left is checked.
# And end to end, text to score: the twin's prompts, GPT-2 tokens and log-likelihoods of each
# sample file of examples/data/ on the small GPT-2 folder tests/reference/instruct (its own BPE
# vocabulary in GPT-2's files), with no shots and with --shots 2 and 3 (the twin's own mt19937_64
# draw, evaluate.py's Mt19937_64), for tests/examples/test_evaluate_program.cpp.
# Written to tests/reference/multiple_choice_torch.json: {"gpt_config", "models": {name:
# [{"context", "continuations", "loglikelihoods"}]}, "end_to_end": {name: {"task", "data", "shots", "seed",
# "loglikelihoods": [[per choice] per item]}}}, the log-likelihoods as Python's repr of the float64 (exact).
import json
import os

import torch

from tapegrad_twin.gpt_model import GPTModel
from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.hf_llama import LlamaForCausalLM
from tapegrad_twin.multiple_choice import encode_pair, item_context, load, loglikelihood, read_items

HERE = os.path.dirname(os.path.abspath(__file__))

SEED = 1234  # evaluate's default --seed, the shots' draw
GPT_CONFIG = dict(vocab_size=53, context_length=24, emb_dim=16, n_heads=2, n_layers=2, drop_rate=0.0, qkv_bias=False)


def items_for(vocab, max_length):
    torch.manual_seed(5)
    out = []
    for context_length in (1, 9, 14, max_length + 3):
        context = torch.randint(0, vocab, (context_length,)).tolist()
        continuations = [torch.randint(0, vocab, (n,)).tolist() for n in (1, 3, 5, 7)]
        out.append((context, continuations))
    return out


def main():
    torch.manual_seed(11)
    models = {"gpt": (GPTModel(GPT_CONFIG).eval(), GPT_CONFIG["vocab_size"], GPT_CONFIG["context_length"])}
    gpt2 = GPT2LMHeadModel.from_pretrained(os.path.join(HERE, "hf_gpt2", "f32"))
    models["hf_gpt2/f32"] = (gpt2, 97, 32)
    for kind in ("llama", "qwen3"):
        folder = os.path.join(HERE, "hf_llama", kind, "f32")
        config = json.load(open(os.path.join(folder, "config.json")))
        models[f"hf_llama/{kind}/f32"] = (LlamaForCausalLM.from_pretrained(folder), config["vocab_size"],
                                          config["max_position_embeddings"])
    out = {"gpt_config": GPT_CONFIG, "models": {}}
    for name, (model, vocab, max_length) in models.items():
        cases = []
        for context, continuations in items_for(vocab, max_length):
            lls = [loglikelihood(model, context, c, max_length) for c in continuations]
            cases.append({"context": context, "continuations": continuations, "loglikelihoods": lls})
        out["models"][name] = cases
    model, encode, bos, eos, max_length = load(os.path.join(HERE, "instruct"))
    out["end_to_end"] = {}
    for key, task, name, shots in (("hellaswag", "hellaswag", "hellaswag_sample.jsonl", 0),
                                   ("arc", "arc", "arc_sample.jsonl", 0),
                                   ("mmlu", "mmlu", "high_school_physics_test.csv", 0),
                                   ("choices", "choices", "choices_sample.jsonl", 0),
                                   ("mmlu --shots 2", "mmlu", "high_school_physics_test.csv", 2),
                                   ("arc --shots 3", "arc", "arc_sample.jsonl", 3)):
        data = os.path.join(HERE, "..", "..", "examples", "data", name)
        items = read_items(task, data)
        lls = [[loglikelihood(model, *encode_pair(encode, bos, eos, item_context(items, i, shots, SEED), " " + c),
                              max_length)
                for c in choices] for i, (_, _, choices, _) in enumerate(items)]
        out["end_to_end"][key] = {"task": task, "data": "examples/data/" + name, "shots": shots, "seed": SEED,
                                  "loglikelihoods": lls}
    with open(os.path.join(HERE, "multiple_choice_torch.json"), "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()
