# make_safetensors_reference.py — safetensors files both ways between PyTorch 1.13 and tapegrad,
# as test data for tests/nn/test_serialize.cpp.
#
#     /usr/bin/python3 tests/reference/make_safetensors_reference.py
#
# 1. Builds two models from seeds and writes their state_dicts:
#      mha_torch.safetensors     MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0,
#                                num_heads=2) from torch.manual_seed(123)
#      mixed_torch.safetensors   Mixed (below) from torch.manual_seed(7): float32, float64, int64
#                                and bool tensors, 0-dim and empty ones, NaN, -0.0, a denormal
# 2. Reads the files tapegrad wrote (mha_tapegrad.safetensors, mixed_tapegrad.safetensors, made by
#      TG_WRITE_REFERENCE=1 ./build/tests/tapegrad_tests --gtest_filter='Serialize.*'),
#    loads each into a model built from another seed with load_state_dict(strict=True), and checks
#    that every tensor is bit-identical to torch's own and that the file has the same bytes as
#    torch's file.
#
# Debian has no safetensors package for Python, so the format is read and written by hand below,
# in tapegrad's canonical layout (nn/safetensors.h): "__metadata__" first, then the tensors
# in state_dict order with their data back to back in that order, JSON without spaces, the header
# padded with spaces to a multiple of 8 bytes. Any safetensors reader reads these files.
import collections
import json
import os
import struct
import sys

import torch
import torch.nn as nn

from make_module_reference import MultiHeadAttention

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.bool: "BOOL"}
TORCH_DTYPES = {name: dtype for dtype, name in DTYPES.items()}


def save_safetensors(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        data = t.detach().contiguous().numpy().tobytes()  # row-major, little-endian on x86
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate keys in {keys}"
    return collections.OrderedDict(pairs)


def load_safetensors(path):
    """(tensors in header order, metadata), checking that the data ranges tile the data."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates)
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, covered = collections.OrderedDict(), 0
    for name, info in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        begin, end = info["data_offsets"]
        assert begin == covered and end <= len(data), f"{path}: {name}: data_offsets {begin, end}"
        dtype = TORCH_DTYPES[info["dtype"]]
        t = torch.empty(info["shape"], dtype=dtype)
        if end > begin:
            t = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype).reshape(info["shape"])
        assert t.numel() * t.element_size() == end - begin
        tensors[name] = t
        covered = end
    assert covered == len(data), f"{path}: {len(data) - covered} bytes after the last tensor"
    return collections.OrderedDict((name, tensors[name]) for name in header), metadata


class Mixed(nn.Module):
    """Every dtype tapegrad has, as parameters and buffers; its C++ twin is in test_serialize.cpp."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.scale = nn.Parameter(torch.randn(2, 3, dtype=torch.float64))
        self.register_buffer("step", torch.tensor(7))
        self.register_buffer("ids", torch.randint(-5, 5, (4,)))
        self.register_buffer("extremes", torch.tensor([-2**63, 2**63 - 1, 2**53 + 1]))
        self.register_buffer("mask", torch.rand(2, 3) > 0.5)
        self.register_buffer("empty", torch.zeros(0, 3))
        self.register_buffer("specials", torch.tensor([float("nan"), float("-inf"), -0.0, 1e-45]))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)


MODELS = {
    "mha": (123, lambda: MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=2)),
    "mixed": (7, Mixed),
}


def bits(t):
    return (t.dtype, tuple(t.shape), t.detach().contiguous().numpy().tobytes())


def main():
    for name, (seed, make) in MODELS.items():
        torch.manual_seed(seed)
        model = make()
        torch_path = os.path.join(HERE, f"{name}_torch.safetensors")
        save_safetensors(torch_path, model.state_dict(), {"format": "pt"})
        print(f"wrote {torch_path}: {', '.join(model.state_dict())}")

        tapegrad_path = os.path.join(HERE, f"{name}_tapegrad.safetensors")
        if not os.path.exists(tapegrad_path):
            print(f"  {tapegrad_path} is missing: run the C++ tests with TG_WRITE_REFERENCE=1", file=sys.stderr)
            continue
        tensors, metadata = load_safetensors(tapegrad_path)
        torch.manual_seed(seed + 1000)
        other = make()
        other.load_state_dict(tensors, strict=True)
        assert list(tensors) == list(model.state_dict()), f"{tapegrad_path}: names or order differ"
        for key, value in model.state_dict().items():
            assert bits(other.state_dict()[key]) == bits(value), f"{tapegrad_path}: {key} differs"
        assert metadata == {"format": "pt"}, metadata
        with open(tapegrad_path, "rb") as a, open(torch_path, "rb") as b:
            assert a.read() == b.read(), f"{tapegrad_path} and {torch_path} differ"
        print(f"  {tapegrad_path}: loaded with strict=True, every tensor bit-identical, same bytes as torch's file")


if __name__ == "__main__":
    main()
