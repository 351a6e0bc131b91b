#!/usr/bin/python3
"""Make tests/reference/dropout_torch.json: F.dropout outputs and gradients straight from PyTorch.

Run from the repository root with Debian's interpreter (it has python3-torch 1.13):

    /usr/bin/python3 tests/reference/make_dropout_reference.py

The output is committed; tests/autograd/test_nn_functions.cpp reads it and never runs Python.

Each case seeds the default generator, makes x (float32 or float64 ones, optionally a transposed
view), and runs out = F.dropout(x, p, training=True) with x.requires_grad_(). Recorded:
  id, seed, dtype, shape        x's logical shape
  transposed                    x is torch.ones(shape[::-1]).t() (a non-contiguous view)
  p
  grad_fn                       out.grad_fn's name
  out                           out's values, row-major, as IEEE bit patterns in hex
  grad                          x.grad after out.backward(g) with g = arange(numel) + 1 in x's shape
  after                         torch.rand(4) right after the dropout (float32 bits): shows the
                                number of engine draws dropout made
"""
import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dropout_torch.json")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def bits(t):
    t = t.detach().contiguous().reshape(-1)
    if t.dtype == torch.float32:
        return ["0x%08x" % (int(v) & 0xFFFFFFFF) for v in t.view(torch.int32).tolist()]
    return ["0x%016x" % (int(v) & 0xFFFFFFFFFFFFFFFF) for v in t.view(torch.int64).tolist()]


def case(case_id, seed, p, shape, dtype="float32", transposed=False):
    torch.manual_seed(seed)
    dt = DTYPES[dtype]
    if transposed:
        x = torch.ones(shape[::-1], dtype=dt).t()
    else:
        x = torch.ones(shape, dtype=dt)
    x.requires_grad_()
    out = F.dropout(x, p=p, training=True)
    after = torch.rand(4)
    g = (torch.arange(out.numel(), dtype=dt) + 1).reshape(shape)
    out.backward(g)
    return {"id": case_id, "seed": seed, "dtype": dtype, "shape": list(shape), "transposed": transposed,
            "p": p, "grad_fn": type(out.grad_fn).__name__, "out": bits(out), "grad": bits(x.grad),
            "after": bits(after)}


def main():
    cases = [
        case("ones_p0.1_seed123", 123, 0.1, [7, 13]),
        case("ones_p0.15_seed42", 42, 0.15, [7, 13]),
        case("ones_p0.15_seed0_1d", 0, 0.15, [50]),
        case("ones_p0.1_seed7_transposed", 7, 0.1, [5, 6], transposed=True),
        case("ones_p0.15_seed5_float64", 5, 0.15, [4, 9], dtype="float64"),
    ]
    with open(OUT, "w") as f:
        f.write('{"description": "F.dropout(x, p, training=True) on ones from PyTorch %s; made by '
                'tests/reference/make_dropout_reference.py, see its docstring for the format",\n'
                % torch.__version__)
        f.write('"torch_version": "%s",\n"cases": [\n' % torch.__version__)
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
        f.write("\n]}\n")
    print("wrote %s (%d cases)" % (OUT, len(cases)))


if __name__ == "__main__":
    main()
