# make_gpt_reference.py — PyTorch 1.13's GPT (examples/pytorch/gpt_model.py) from a seed: the
# state_dict, the logits and cross-entropy loss on given token ids, and every parameter's
# gradient, as test data for tests/nn/test_gpt.cpp.
#
#     /usr/bin/python3 tests/reference/make_gpt_reference.py
#
# Writes tests/reference/gpt_torch.json. Floating values are the 16 hex digits of each value's
# float64 bit pattern (float32 widened exactly). Token ids come from torch.randint after
# manual_seed(ids_seed); dropout inside forward draws after manual_seed(ids_seed + 1).
import json
import os
import struct
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "pytorch"))
from gpt_model import GPTModel  # noqa: E402


def enc(t):
    return {"shape": list(t.shape), "values": [struct.pack(">d", float(v)).hex() for v in t.detach().double().flatten().tolist()]}


CASES = []


def case(case_id, seed, cfg, batch, num_tokens, ids_seed=1000, train=True):
    torch.manual_seed(seed)
    model = GPTModel(cfg)
    model.train(train)
    torch.manual_seed(ids_seed)
    idx = torch.randint(0, cfg["vocab_size"], (batch, num_tokens + 1))
    x, y = idx[:, :-1], idx[:, 1:]
    torch.manual_seed(ids_seed + 1)
    logits = model(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    loss.backward()
    CASES.append({"id": case_id, "seed": seed, "config": cfg, "train": train, "ids_seed": ids_seed,
                  "x": x.flatten().tolist(), "y": y.flatten().tolist(), "batch": batch, "num_tokens": num_tokens,
                  "repr": repr(model),
                  "state_dict": [[k, enc(v)] for k, v in model.state_dict().items()],
                  "num_parameters": sum(p.numel() for p in model.parameters()),
                  "logits": enc(logits), "loss": enc(loss),
                  "grads": [[k, enc(p.grad)] for k, p in model.named_parameters()]})


def main():
    tiny = dict(vocab_size=11, context_length=8, emb_dim=8, n_heads=2, n_layers=2, drop_rate=0.0, qkv_bias=False)
    case("tiny", 123, tiny, batch=2, num_tokens=8)
    case("tiny_short_input_eval", 7, tiny, batch=3, num_tokens=5, train=False)
    case("dropout_qkv_bias", 42, dict(tiny, drop_rate=0.1, qkv_bias=True, n_layers=1, n_heads=4), batch=2, num_tokens=6)
    case("wider", 1337, dict(vocab_size=17, context_length=16, emb_dim=16, n_heads=4, n_layers=3, drop_rate=0.0,
                             qkv_bias=False), batch=2, num_tokens=16)
    path = os.path.join(HERE, "gpt_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_gpt_reference.py", "torch_version": torch.__version__,
                   "cases": CASES}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {path}")


main()
