# make_module_reference.py — PyTorch 1.13's nn modules from a seed: parameter values, state_dict
# names, outputs and gradients, and how the modules print, as test data for
# tests/nn/test_module.cpp.
#
#     /usr/bin/python3 tests/reference/make_module_reference.py
#
# Writes tests/reference/module_torch.json. Floating values are the 16 hex digits of each value's
# float64 bit pattern (float32 widened exactly).
import json
import os
import struct

import torch
import torch.nn as nn


def enc(t):
    return {"shape": list(t.shape), "values": [struct.pack(">d", float(v)).hex() for v in t.detach().double().flatten().tolist()]}


CASES = []


def case(case_id, seed, make, x_shape, x_seed=1000):
    torch.manual_seed(seed)
    m = make()
    torch.manual_seed(x_seed)
    x = torch.randn(x_shape) if x_shape is not None else None
    entry = {"id": case_id, "seed": seed, "repr": repr(m),
             "state_dict": [[k, enc(v)] for k, v in m.state_dict().items()],
             "num_parameters": sum(p.numel() for p in m.parameters())}
    if x is not None:
        x.requires_grad_(True)
        y = m(x)
        y.sum().backward()
        entry["x"] = enc(x)
        entry["y"] = enc(y)
        entry["grads"] = [[k, enc(p.grad)] for k, p in m.named_parameters()]
        entry["x_grad"] = enc(x.grad)
    CASES.append(entry)


def main():
    case("linear", 123, lambda: nn.Linear(3, 2), [4, 3])
    case("linear_no_bias", 789, lambda: nn.Linear(3, 2, bias=False), [2, 5, 3])
    case("sequential_mlp", 7, lambda: nn.Sequential(nn.Linear(4, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 2)), [3, 4])
    case("layer_norm", 1, lambda: nn.LayerNorm(5), [2, 5])
    case("sequential_norm_relu_softmax", 2,
         lambda: nn.Sequential(nn.LayerNorm(4, eps=1e-3), nn.ReLU(), nn.Linear(4, 4), nn.Softmax(dim=-1)), [3, 4])
    case("embedding", 3, lambda: nn.Embedding(6, 3), None)
    case("dropout_repr", 4, lambda: nn.Dropout(0.25), None)
    case("module_list", 5, lambda: nn.ModuleList([nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 3), nn.GELU())]), None)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "module_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_module_reference.py", "torch_version": torch.__version__,
                   "cases": CASES}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {path}")


main()
