# make_float16_reference.py — PyTorch 1.13's float16 -> float32 conversion of all 65536 half values,
# as test data for tg::float16_bits_to_float (autograd/float16.h).
#
#     /usr/bin/python3 tests/reference/make_float16_reference.py
#
# 65536 float32 results would be 256 KiB, so the file holds them compactly but still bit-exactly:
#   rows      64 hashes: row r covers the half patterns r*1024 .. r*1024+1023 (one sign and
#             exponent each), the FNV-1a 64-bit hash of their float32 bits as little-endian bytes,
#             in order, as 16 hex digits. A conversion differing in any bit changes its row's hash.
#   samples   [half bits (4 hex digits), float32 bits (8 hex digits)] for the cases worth reading
#             when a row differs: zeros, subnormals, the normal range's edges, inf, NaN payloads
#             (quiet and signalling, both signs).
# It writes tests/reference/float16_torch.json (committed; the C++ tests never run Python).
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def fnv1a64(data):
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    halves = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.float16)
    floats = halves.to(torch.float32)  # the conversion under test
    data = floats.numpy().tobytes()    # little-endian float32 bits
    rows = [f"{fnv1a64(data[r * 4096:(r + 1) * 4096]):016x}" for r in range(64)]
    bits = floats.view(torch.int32).tolist()
    picks = [0x0000, 0x8000, 0x0001, 0x0002, 0x0003, 0x01FF, 0x0200, 0x03FF, 0x8001, 0x83FF, 0x0400, 0x0401,
             0x3C00, 0x3C01, 0x3BFF, 0x3555, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7C01, 0x7D00, 0x7E00, 0x7E01,
             0x7FFF, 0xFC01, 0xFE00, 0xFFFF, 0x4248, 0xC000]
    samples = [[f"{h:04x}", f"{bits[h] & 0xFFFFFFFF:08x}"] for h in picks]
    out = {"about": "float16 -> float32 by torch " + torch.__version__ + "; see make_float16_reference.py",
           "rows": rows, "samples": samples}
    path = os.path.join(HERE, "float16_torch.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
