#!/usr/bin/python3
"""Make tests/reference/random_ops_torch.json: PyTorch's random ops on NON-CONTIGUOUS tensors.

rng_torch.json covers contiguous tensors; this adds the element order of §10 (element order, see autograd/random/random_kernels.h)
(a non-contiguous tensor is filled in increasing address order; a non-contiguous normal_ takes
the scalar path even for n >= 16) and the layouts empty_like keeps (rand_like, randn_like and
multinomial's noise follow a transposed input's strides). Run with Debian's interpreter:

    /usr/bin/python3 tests/reference/make_random_ops_reference.py

File format: {"vectors": [...]}, each {"id", "seed", "python", "kind", "values"[, "probs_bits"]}:
the C++ test (tests/autograd/test_random_ops.cpp) has one recipe per id doing the same calls
after tg::manual_seed(seed). kind "float32"/"float64": values are hex bit patterns; "int64":
integers. "values" is what `python` records, flattened in row-major order. probs_bits: the
float32 bits of a contiguous probability matrix, row-major, for the multinomial cases.
"""
import json
import os
import sys

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_ops_torch.json")
vectors = []


def bits(t):
    t = t.detach().contiguous().reshape(-1)
    if t.dtype == torch.float32:
        return ["0x%08x" % (v & 0xFFFFFFFF) for v in t.view(torch.int32).tolist()]
    if t.dtype == torch.float64:
        return ["0x%016x" % (v & 0xFFFFFFFFFFFFFFFF) for v in t.view(torch.int64).tolist()]
    return [int(v) for v in t.tolist()]


def add(vector_id, seed, python, make, extra=None):
    """make() runs after torch.manual_seed(seed) and returns the tensors to record, in order."""
    torch.manual_seed(seed)
    outs = make()
    kinds = {str(o.dtype).replace("torch.", "") for o in outs}
    assert len(kinds) == 1, vector_id
    vector = {"id": vector_id, "seed": seed, "python": python, "kind": kinds.pop(),
              "values": [b for o in outs for b in bits(o)]}
    vector.update(extra or {})
    vectors.append(vector)


def fill_base(shape, view, op, dtype=torch.float32):
    base = torch.empty(shape, dtype=dtype)
    op(view(base))
    return base


def main():
    config = torch.__config__.show()
    if "CPU capability usage: AVX2" not in config and "CPU capability usage: AVX512" not in config:
        sys.exit("make_random_ops_reference.py: torch is not using its AVX2/AVX512 kernels")
    torch.set_num_threads(1)
    f64 = torch.float64

    # uniform_ on a transpose fills the storage 0..23 in order; on a strided slice, row-major.
    add("uniform_t_4x6", 0, "b = empty(4,6); b.t().uniform_(); record b",
        lambda: [fill_base((4, 6), lambda b: b.t(), lambda v: v.uniform_())])
    add("uniform_t_4x6_f64_m2_3", 1, "b = empty(4,6, f64); b.t().uniform_(-2, 3); record b",
        lambda: [fill_base((4, 6), lambda b: b.t(), lambda v: v.uniform_(-2.0, 3.0), f64)])
    add("uniform_slice_4x6_step2", 2, "v = empty(4,6)[:, ::2]; v.uniform_(); record v",
        lambda: [torch.empty(4, 6)[:, ::2].uniform_()])
    add("uniform_permute_2x3x4", 3, "b = empty(2,3,4); b.permute(2,0,1).uniform_(); record b",
        lambda: [fill_base((2, 3, 4), lambda b: b.permute(2, 0, 1), lambda v: v.uniform_())])

    # normal_ on non-contiguous views of n >= 16: the scalar path, memory order.
    add("normal_t_6x8", 4, "b = empty(6,8); b.t().normal_(); record b",
        lambda: [fill_base((6, 8), lambda b: b.t(), lambda v: v.normal_())])
    add("normal_slice_8x8_step2", 5, "v = empty(8,8)[:, ::2]; v.normal_(); record v",
        lambda: [torch.empty(8, 8)[:, ::2].normal_()])
    add("normal_t_6x8_f64_0.5_2", 6, "b = empty(6,8, f64); b.t().normal_(0.5, 2.0); record b",
        lambda: [fill_base((6, 8), lambda b: b.t(), lambda v: v.normal_(0.5, 2.0), f64)])
    add("normal_permute_2x3x4", 7, "b = empty(2,3,4); b.permute(2,0,1).normal_(); record b",
        lambda: [fill_base((2, 3, 4), lambda b: b.permute(2, 0, 1), lambda v: v.normal_())])
    # Contiguous views take the block path: a row range, and a (20,1) transpose of (1,20).
    add("normal_narrow_10x8_rows2to6", 8, "v = empty(10,8)[2:6]; v.normal_(); record v",
        lambda: [torch.empty(10, 8)[2:6].normal_()])
    add("normal_t_1x20", 9, "v = empty(1,20).t(); v.normal_(); record v",
        lambda: [torch.empty(1, 20).t().normal_()])
    # The cached normal carries into a non-contiguous fill.
    add("normal_cache_then_t_4x5", 10, "a = randn(1); b = empty(4,5); b.t().normal_(); record a, b",
        lambda: [torch.randn(1), fill_base((4, 5), lambda b: b.t(), lambda v: v.normal_())])

    # bernoulli_, exponential_, random_ on a transpose: memory order.
    add("bernoulli_t_5x4_p0.3", 11, "b = empty(5,4); b.t().bernoulli_(0.3); record b",
        lambda: [fill_base((5, 4), lambda b: b.t(), lambda v: v.bernoulli_(0.3))])
    add("exponential_t_5x4_rate2", 12, "b = empty(5,4); b.t().exponential_(2.0); record b",
        lambda: [fill_base((5, 4), lambda b: b.t(), lambda v: v.exponential_(2.0))])
    add("random_t_5x4_int64_m5_100", 13, "b = empty(5,4, int64); b.t().random_(-5, 100); record b",
        lambda: [fill_base((5, 4), lambda b: b.t(), lambda v: v.random_(-5, 100), torch.int64)])
    add("random_f32_n10_0_1000", 13, "empty(10).random_(0, 1000)",
        lambda: [torch.empty(10).random_(0, 1000)])

    # rand_like / randn_like keep a transpose's strides (empty_like), so randn_like of a
    # transposed (6,4) is non-contiguous: scalar path, memory order. A strided slice is not
    # dense: the result is contiguous (block path for n >= 16).
    add("rand_like_t_4x6", 14, "y = rand_like(empty(4,6).t()); record y",
        lambda: [torch.rand_like(torch.empty(4, 6).t())])
    add("randn_like_t_4x6", 15, "y = randn_like(empty(4,6).t()); record y",
        lambda: [torch.randn_like(torch.empty(4, 6).t())])
    add("randn_like_slice_8x8_step2", 16, "y = randn_like(empty(8,8)[:, ::2]); record y",
        lambda: [torch.randn_like(torch.empty(8, 8)[:, ::2])])

    # multinomial draws its noise into empty_like(probs): a transposed probs gets its noise in
    # memory (column) order; a strided slice gets contiguous noise.
    torch.manual_seed(99)
    base = torch.softmax(torch.randn(5, 3), dim=0)  # (5,3); its transpose (3,5) has rows summing to 1
    add("multinomial_t_3x5_x4", 17, "p = base(5,3).t(); 4 x multinomial(p, 1)",
        lambda: [torch.multinomial(base.t(), 1) for _ in range(4)],
        {"probs_shape": [5, 3], "probs_bits": bits(base)})
    torch.manual_seed(98)
    wide = torch.softmax(torch.randn(3, 10), dim=1)
    add("multinomial_slice_3x10_step2_x4", 18, "p = base(3,10)[:, ::2]; 4 x multinomial(p, 1)",
        lambda: [torch.multinomial(wide[:, ::2], 1) for _ in range(4)],
        {"probs_shape": [3, 10], "probs_bits": bits(wide)})

    ids = [v["id"] for v in vectors]
    assert len(ids) == len(set(ids)), "duplicate ids"
    with open(OUT, "w") as f:
        f.write('{"description": "PyTorch %s random ops on non-contiguous tensors; made by '
                'tests/reference/make_random_ops_reference.py",\n"vectors": [\n' % torch.__version__)
        f.write(",\n".join(json.dumps(v, separators=(",", ":")) for v in vectors))
        f.write("\n]}\n")
    print("wrote %s: %d vectors" % (OUT, len(vectors)))


if __name__ == "__main__":
    main()
