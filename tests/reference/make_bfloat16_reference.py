# make_bfloat16_reference.py — PyTorch 1.13's bfloat16, as test data for tg::kBFloat16
# (autograd/dtype.h): conversions from float32, float64 and int64 (ties, NaN, inf, denormals,
# the largest values), back to float32 and int64, elementwise ops computed in float32 and
# stored as bfloat16, and how repr() prints bfloat16 tensors.
#
#     /usr/bin/python3 tests/reference/make_bfloat16_reference.py
#
# It writes tests/reference/bfloat16_torch.json (committed; the C++ tests never run Python):
#   from_float32   [float32 bits as 8 hex digits, bfloat16 bits as 4 hex digits]
#   from_float64   [float64 bits as 16 hex digits, bfloat16 bits]
#   from_int64     [the integer as a decimal string, bfloat16 bits]
#   to_int64       [bfloat16 bits, the integer torch gives as a decimal string]
#   ops            {op, a, b (bfloat16 bits; b absent for a unary op), out (bfloat16 bits, or 0/1
#                  for a comparison)}
#   repr           {bits (row-major), sizes, repr}
import json
import os
import random
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_of_bits(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def bf16_bits(t):
    """A bfloat16 tensor's elements as 16-bit patterns."""
    return [b & 0xFFFF for b in t.contiguous().view(torch.int16).reshape(-1).tolist()]


def from_bits(bits):
    return torch.tensor([b - 65536 if b >= 32768 else b for b in bits], dtype=torch.int16).view(torch.bfloat16)


def main():
    rng = random.Random(2024)
    # float32 patterns: exact bf16 values, ties (low half 0x8000) with even and odd kept bits,
    # just below and above ties, NaNs with payloads and signs, inf, zero, denormals, the largest
    # floats (which round up to inf), and random patterns.
    f32 = [0x00000000, 0x80000000, 0x3F800000, 0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0xBF808000,
           0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFF812345, 0x7FFFFFFF,
           0x7F7FFFFF, 0x7F7F7FFF, 0x7F7F8000, 0xFF7F8000, 0x7F7EFFFF, 0x00000001, 0x00008000, 0x00018000,
           0x007FFFFF, 0x00800000, 0x807F8000, 0x00FF8000, 0x3EAAAAAB, 0x40490FDB, 0x4B800001, 0x33800000]
    f32 += [rng.getrandbits(32) for _ in range(200)]
    x = torch.tensor([f32_of_bits(b) for b in f32], dtype=torch.float32)
    # keep the exact input bits (a NaN's payload survives torch.tensor? make sure via a view)
    x = torch.tensor([b - (1 << 32) if b >= (1 << 31) else b for b in f32], dtype=torch.int32).view(torch.float32)
    from_float32 = [[f"{a:08x}", f"{b:04x}"] for a, b in zip(f32, bf16_bits(x.to(torch.bfloat16)))]

    f64 = [1.0 + 2.0 ** -8, 1.0 + 2.0 ** -8 + 2.0 ** -30, 1.0 + 2.0 ** -8 + 2.0 ** -20, 3.4e38, 3.39e38, 1e-40,
           1e-45, -2.5, 65504.0, 1e300, -1e300, float("inf"), float("nan"), 0.1, 1.0 / 3.0, 123456789.0]
    f64 += [rng.uniform(-1e6, 1e6) for _ in range(40)]
    d = torch.tensor(f64, dtype=torch.float64)
    from_float64 = [[struct.pack(">d", a).hex(), f"{b:04x}"] for a, b in zip(f64, bf16_bits(d.to(torch.bfloat16)))]

    i64 = [0, 1, -1, 255, 256, 257, 16777217, 2 ** 53 + 1, -(2 ** 62) - 1, 2 ** 63 - 1, -(2 ** 63), 1000003]
    from_int64 = [[str(a), f"{b:04x}"] for a, b in
                  zip(i64, bf16_bits(torch.tensor(i64, dtype=torch.int64).to(torch.bfloat16)))]

    finite = [0x3F80, 0xBF80, 0x4049, 0xC2F7, 0x4B00, 0x5EFF, 0xDEFF, 0x0001, 0x3F00, 0xBEFF, 0x4479]
    to_int64 = [[f"{b:04x}", str(v)] for b, v in zip(finite, from_bits(finite).to(torch.int64).tolist())]

    # elementwise: random finite bf16 values of moderate size, and a few specials
    def values(n, lo, hi):
        return bf16_bits(torch.tensor([rng.uniform(lo, hi) for _ in range(n)]).to(torch.bfloat16))

    a_bits, b_bits = values(64, -8, 8), values(64, -8, 8)
    a_bits += [0x7F80, 0xFF80, 0x7FC0, 0x0000, 0x8000, 0x7F7F]
    b_bits += [0x3F80, 0x7F80, 0x3F80, 0x0000, 0x4000, 0x7F7F]
    a, b = from_bits(a_bits), from_bits(b_bits)
    ops = []
    for name, out in [("add", a + b), ("sub", a - b), ("mul", a * b), ("div", a / b), ("maximum", torch.maximum(a, b)),
                      ("neg", -a), ("abs", a.abs()), ("exp", a.exp()), ("tanh", a.tanh()), ("sqrt", b.abs().sqrt()),
                      ("relu", torch.relu(a)), ("lt", a < b), ("eq", a == b)]:
        unary = name in ("neg", "abs", "exp", "tanh", "relu", "sqrt")
        src = b.abs() if name == "sqrt" else a
        ops.append({"op": name, "a": [f"{v:04x}" for v in bf16_bits(src)],
                    "b": None if unary else [f"{v:04x}" for v in bf16_bits(b)],
                    "out": out.to(torch.int64).tolist() if out.dtype == torch.bool else [f"{v:04x}" for v in bf16_bits(out)]})

    reprs = []
    for vals, sizes in [([1.5, 2.25, -3.0], [3]), ([0.1, 100.0, 1e-5, 3.0e5], [2, 2]), ([1e10, -2.0], [2]),
                        ([float("nan"), float("inf"), -float("inf"), 1.0], [4]), ([7.0], []), ([], [0]),
                        ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])]:
        t = torch.tensor(vals, dtype=torch.bfloat16).reshape(sizes)
        reprs.append({"bits": [f"{v:04x}" for v in bf16_bits(t)], "sizes": sizes, "repr": repr(t)})

    out = {"generator": "tests/reference/make_bfloat16_reference.py", "torch_version": torch.__version__,
           "from_float32": from_float32, "from_float64": from_float64, "from_int64": from_int64,
           "to_int64": to_int64, "ops": ops, "repr": reprs}
    path = os.path.join(HERE, "bfloat16_torch.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=0)
        f.write("\n")
    print(f"wrote {path}: {len(from_float32)} float32, {len(from_float64)} float64, {len(ops)} ops, "
          f"{len(reprs)} reprs")


main()
