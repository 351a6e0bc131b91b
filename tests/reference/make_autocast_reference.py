# make_autocast_reference.py — matrix products under bf16 autocast, from PyTorch 1.13, as test data
# for tg::AutocastGuard (autograd/autocast.h).
#
#     /usr/bin/python3 tests/reference/make_autocast_reference.py
#
# It writes tests/reference/autocast_torch.json (committed; the C++ tests never run Python). For
# each case, float32 inputs a, b and an output gradient g (seeded), and two sets of results:
#   emulated   tapegrad's definition in PyTorch: out = bf16(a) @ bf16(b), summed in float32 and
#              kept float32; da = bf16(g) @ bf16(b)^T and db = bf16(a)^T @ bf16(g) likewise (a
#              torch.autograd.Function rounds the inputs, another rounds the incoming gradient)
#   autocast   torch.autocast("cpu", dtype=torch.bfloat16) itself: the same products, but the
#              result (and so each gradient) is rounded to bfloat16, which tapegrad does not do;
#              tapegrad's values rounded to bfloat16 agree with these to one bfloat16 step
# Each tensor is {"shape", "values"}: the 16 hex digits of each value's float64 bit pattern.
import json
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def encode(t):
    return {"shape": list(t.shape), "values": [struct.pack(">d", float(v)).hex() for v in t.detach().double().flatten().tolist()]}


class RoundInput(torch.autograd.Function):
    """x rounded to bfloat16 (and back to float32); the gradient passes unchanged."""

    @staticmethod
    def forward(ctx, x):
        return x.bfloat16().float()

    @staticmethod
    def backward(ctx, g):
        return g


class RoundGradient(torch.autograd.Function):
    """x unchanged; the gradient coming back through it rounded to bfloat16."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g.bfloat16().float()


def emulated(a, b, g):
    a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
    out = RoundGradient.apply(torch.matmul(RoundInput.apply(a), RoundInput.apply(b)))
    out.backward(g)
    return out, a.grad, b.grad


def autocast(a, b, g):
    a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.matmul(a, b)
    assert out.dtype == torch.bfloat16
    out.float().backward(g)
    return out.float(), a.grad, b.grad


def main():
    torch.manual_seed(2025)
    # (name, a's shape, b's shape, b stored transposed: b is then the .t() / .transpose(-2, -1) view)
    shapes = [("mm", [13, 40], [40, 21], False),
              ("linear", [2, 9, 48], [48, 30], True),          # x @ W^T with W (30, 48)
              ("bmm_heads", [2, 3, 17, 16], [2, 3, 16, 17], True),  # q @ k^T per head
              ("broadcast_batch", [4, 5, 33], [1, 33, 7], False),
              ("k_is_one", [6, 1], [1, 11], False),
              ("mv", [8, 70], [70], False),
              ("dot", [129], [129], False)]
    cases = []
    for name, sa, sb, transposed in shapes:
        a = torch.randn(sa)
        b = torch.randn(sb[:-2] + [sb[-1], sb[-2]]).transpose(-2, -1) if transposed else torch.randn(sb)
        out_shape = torch.matmul(a, b).shape
        g = torch.randn(out_shape)
        e, ea, eb = emulated(a, b, g)
        c, ca, cb = autocast(a, b, g)
        cases.append({"name": name, "a": encode(a), "b": encode(b), "b_transposed": transposed, "g": encode(g),
                      "emulated": {"out": encode(e), "da": encode(ea), "db": encode(eb)},
                      "autocast": {"out": encode(c), "da": encode(ca), "db": encode(cb)}})
    doc = {"torch": torch.__version__, "cases": cases}
    with open(os.path.join(HERE, "autocast_torch.json"), "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
