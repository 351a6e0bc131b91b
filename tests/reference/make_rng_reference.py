#!/usr/bin/python3
"""Make tests/reference/rng_torch.json: random numbers straight from PyTorch's CPU generator.

Run with Debian's interpreter, which has python3-torch 1.13 (the first python3 on PATH may have
no torch); the output goes next to this script, wherever it is run from:

    /usr/bin/python3 tests/reference/make_rng_reference.py

The output is committed; the C++ tests (tests/autograd/test_random_kernels.cpp) read it and
never run Python. Re-run only to add vectors, then commit the new JSON with the script.

The values must come from torch's AVX2 kernels (any x86-64 CPU with AVX2 + FMA; AVX-512 CPUs
use the same normal_ kernel). The script refuses to run on another CPU capability.

File format: {"vectors": [...]}, one vector per line. Each vector:
  id            unique name
  seed          what was given to torch.manual_seed (may be negative or >= 2^32)
  initial_seed  torch.initial_seed() afterwards (the seed as uint64)
  calls         the calls made in order, each {"op": ..., parameters..., "python": the torch code}
  kind          "float32" | "float64": values are IEEE bit patterns as hex strings
                "int64": values are integers
                "state": values is one hex string, the bytes of torch.get_rng_state()
  values        the outputs of all calls, concatenated, each in row-major order
Ops and their parameters:
  normal       dtype, shape, mean, std         torch.empty(shape).normal_(mean, std) / randn
  uniform      dtype, shape, low, high         torch.empty(shape).uniform_(low, high) / rand
  randint      low, high, shape                torch.randint(low, high, shape)
  randperm     n                               torch.randperm(n)
  bernoulli    dtype, shape, p                 torch.empty(shape).bernoulli_(p)
  dropout      input ("ones" | "randn"), shape, p   F.dropout(x, p, training=True); a "randn"
                                               input is drawn first (torch.randn(shape)) and only
                                               the dropout output is recorded
  exponential  dtype, shape, lambda            torch.empty(shape).exponential_(lambda)
  multinomial  dtype, probs_bits (rows of hex bit patterns), repeat
                                               repeat x torch.multinomial(probs, 1): one index
                                               per row per repeat
  linear       in, out, bias                   nn.Linear(in, out, bias): weight then bias
  embedding    num, dim                        nn.Embedding(num, dim).weight
  manual_seed  seed                            torch.manual_seed(seed) in the middle of a sequence
  draws        n                               torch.rand(n): n engine draws, values not recorded
  get_state                                    torch.get_rng_state(), the last call of a "state"
                                               vector (the outputs of earlier calls are dropped)
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rng_torch.json")


def check_capability():
    config = torch.__config__.show()
    if "CPU capability usage: AVX2" not in config and "CPU capability usage: AVX512" not in config:
        sys.exit("make_rng_reference.py: torch is not using its AVX2/AVX512 kernels; the "
                 "reference must come from the AVX2 variant")


def float_bits(t):
    t = t.detach().contiguous().reshape(-1)
    if t.dtype == torch.float32:
        return ["0x%08x" % (int(v) & 0xFFFFFFFF) for v in t.view(torch.int32).tolist()]
    if t.dtype == torch.float64:
        return ["0x%016x" % (int(v) & 0xFFFFFFFFFFFFFFFF) for v in t.view(torch.int64).tolist()]
    raise ValueError(t.dtype)


DTYPES = {"float32": torch.float32, "float64": torch.float64}
vectors = []


def run_call(call):
    """Make one call on the default generator; return its recorded output (a tensor or None)."""
    op = call["op"]
    if op == "normal":
        dtype = DTYPES[call["dtype"]]
        if call["mean"] == 0.0 and call["std"] == 1.0:
            call["python"] = "torch.randn(%s, dtype=%s)" % (call["shape"], dtype)
            return torch.randn(call["shape"], dtype=dtype)
        call["python"] = "torch.empty(%s, dtype=%s).normal_(%r, %r)" % (
            call["shape"], dtype, call["mean"], call["std"])
        return torch.empty(call["shape"], dtype=dtype).normal_(call["mean"], call["std"])
    if op == "uniform":
        dtype = DTYPES[call["dtype"]]
        if call["low"] == 0.0 and call["high"] == 1.0:
            call["python"] = "torch.rand(%s, dtype=%s)" % (call["shape"], dtype)
            return torch.rand(call["shape"], dtype=dtype)
        call["python"] = "torch.empty(%s, dtype=%s).uniform_(%r, %r)" % (
            call["shape"], dtype, call["low"], call["high"])
        return torch.empty(call["shape"], dtype=dtype).uniform_(call["low"], call["high"])
    if op == "randint":
        call["python"] = "torch.randint(%d, %d, %s)" % (call["low"], call["high"], call["shape"])
        return torch.randint(call["low"], call["high"], call["shape"])
    if op == "randperm":
        call["python"] = "torch.randperm(%d)" % call["n"]
        return torch.randperm(call["n"])
    if op == "bernoulli":
        dtype = DTYPES[call["dtype"]]
        call["python"] = "torch.empty(%s, dtype=%s).bernoulli_(%r)" % (call["shape"], dtype, call["p"])
        return torch.empty(call["shape"], dtype=dtype).bernoulli_(call["p"])
    if op == "dropout":
        if call["input"] == "ones":
            call["python"] = "F.dropout(torch.ones(%s), p=%r, training=True)" % (call["shape"], call["p"])
            x = torch.ones(call["shape"])
        else:
            call["python"] = "F.dropout(torch.randn(%s), p=%r, training=True)" % (call["shape"], call["p"])
            x = torch.randn(call["shape"])
        return F.dropout(x, p=call["p"], training=True)
    if op == "exponential":
        dtype = DTYPES[call["dtype"]]
        call["python"] = "torch.empty(%s, dtype=%s).exponential_(%r)" % (call["shape"], dtype, call["lambda"])
        return torch.empty(call["shape"], dtype=dtype).exponential_(call["lambda"])
    if op == "multinomial":
        dtype = DTYPES[call["dtype"]]
        probs = torch.tensor(call.pop("probs"), dtype=dtype)
        call["probs_bits"] = [float_bits(row) for row in probs.reshape(-1, probs.shape[-1])]
        call["python"] = "%d x torch.multinomial(probs, 1)" % call["repeat"]
        return torch.cat([torch.multinomial(probs, 1).reshape(-1) for _ in range(call["repeat"])])
    if op == "linear":
        call["python"] = "torch.nn.Linear(%d, %d, bias=%s)" % (call["in"], call["out"], call["bias"])
        layer = torch.nn.Linear(call["in"], call["out"], bias=call["bias"])
        parts = [layer.weight.reshape(-1)] + ([layer.bias] if call["bias"] else [])
        return torch.cat(parts).detach()
    if op == "embedding":
        call["python"] = "torch.nn.Embedding(%d, %d).weight" % (call["num"], call["dim"])
        return torch.nn.Embedding(call["num"], call["dim"]).weight.detach()
    if op == "manual_seed":
        call["python"] = "torch.manual_seed(%d)" % call["seed"]
        torch.manual_seed(call["seed"])
        return None
    if op == "draws":
        call["python"] = "torch.rand(%d)" % call["n"]
        torch.rand(call["n"])
        return None
    if op == "get_state":
        call["python"] = "torch.get_rng_state()"
        return torch.get_rng_state()
    raise ValueError(op)


def add(vector_id, seed, kind, calls):
    torch.manual_seed(seed)
    initial_seed = torch.initial_seed()
    outputs = [out for out in (run_call(call) for call in calls) if out is not None]
    if kind == "state":
        assert calls[-1]["op"] == "get_state", vector_id  # earlier outputs are not recorded
        values = [outputs[-1].numpy().tobytes().hex()]
    elif kind == "int64":
        values = [int(v) for out in outputs for v in out.reshape(-1).tolist()]
    else:
        assert all(out.dtype == DTYPES[kind] for out in outputs), vector_id
        values = [b for out in outputs for b in float_bits(out)]
    vectors.append({"id": vector_id, "seed": seed, "initial_seed": initial_seed, "calls": calls,
                    "kind": kind, "values": values})


def normal(dtype, n, mean=0.0, std=1.0):
    return {"op": "normal", "dtype": dtype, "shape": n if isinstance(n, list) else [n],
            "mean": mean, "std": std}


def uniform(dtype, n, low=0.0, high=1.0):
    return {"op": "uniform", "dtype": dtype, "shape": n if isinstance(n, list) else [n],
            "low": low, "high": high}


def seed_name(seed):
    return "m%d" % -seed if seed < 0 else str(seed)


def main():
    check_capability()
    torch.set_num_threads(1)
    seeds = [0, 42, 123, 2**32 + 7, -1]

    # randn, every size class (scalar path < 16, block path with and without a tail).
    for dtype in ["float32", "float64"]:
        for seed in seeds:
            for n in [1, 15, 16, 17, 100, 1000]:
                add("randn_%s_n%d_seed%s" % (dtype, n, seed_name(seed)), seed, dtype, [normal(dtype, n)])
    add("randn_f32_4x8x2_seed42", 42, "float32", [normal("float32", [4, 8, 2])])

    # The cached normal across calls, dtypes, block paths, mean/std and re-seeding.
    add("randn_seq_3_5_seed42", 42, "float32", [normal("float32", 3), normal("float32", 5)])
    add("randn_seq_3_100_1_seed123", 123, "float32",
        [normal("float32", 3), normal("float32", 100), normal("float32", 1)])
    add("randn_seq_f64_3_then_1000_then_2_seed0", 0, "float64",
        [normal("float64", 3), normal("float64", 1000), normal("float64", 2)])
    add("randn_seq_1_2_17_1_seed7", 7, "float32",
        [normal("float32", [1]), normal("float32", 2), normal("float32", 17), normal("float32", 1)])
    add("normal_seq_cache_scaled_by_next_call_seed5", 5, "float32",
        [normal("float32", 3, 2.0, 3.0), normal("float32", 1, -1.0, 0.5)])
    add("randn_manual_seed_clears_cache_seed11", 11, "float32",
        [normal("float32", 1), {"op": "manual_seed", "seed": 11}, normal("float32", 1)])

    # normal_(mean, std) with non-trivial values.
    add("normal_f32_n7_0.3_2.5_seed31", 31, "float32", [normal("float32", 7, 0.3, 2.5)])
    add("normal_f32_n20_0.3_2.5_seed31", 31, "float32", [normal("float32", 20, 0.3, 2.5)])
    add("normal_f32_n1000_m1.5_0.01_seed2", 2, "float32", [normal("float32", 1000, -1.5, 0.01)])
    add("normal_f64_n33_m1.5_0.01_seed2", 2, "float64", [normal("float64", 33, -1.5, 0.01)])
    add("normal_f64_n5_100_7_seed2", 2, "float64", [normal("float64", 5, 100.0, 7.0)])

    # rand / uniform_.
    add("rand_f32_3x2_x3_seed123", 123, "float32", [uniform("float32", [3, 2])] * 3)
    add("rand_f32_n1000_seed42", 42, "float32", [uniform("float32", 1000)])
    add("rand_f64_n100_seed42", 42, "float64", [uniform("float64", 100)])
    add("uniform_f32_m0.1_0.35_seed7", 7, "float32", [uniform("float32", 1000, -0.1, 0.35)])
    add("uniform_f32_m0.1_0.35_seed4294967303", 2**32 + 7, "float32", [uniform("float32", 200, -0.1, 0.35)])
    add("uniform_f64_m2_3_seed7", 7, "float64", [uniform("float64", 200, -2.0, 3.0)])

    # randint: small ranges, negative low, ranges at and above 2^32.
    for low, high in [(0, 10), (-5, 7), (0, 50257), (0, 2**32 - 1), (0, 2**32), (-2**40, 2**40),
                      (-2**62, 2**62), (-1000, -990)]:
        add("randint_%d_%d_seed0" % (low, high), 0, "int64",
            [{"op": "randint", "low": low, "high": high, "shape": [40]}])
    add("randint_0_10_seed-1", -1, "int64", [{"op": "randint", "low": 0, "high": 10, "shape": [40]}])

    # randperm.
    for n in [1, 2, 5, 17, 100]:
        add("randperm_%d_seed0" % n, 0, "int64", [{"op": "randperm", "n": n}])
    add("randperm_1_then_rand_seed42", 42, "int64",
        [{"op": "randperm", "n": 1}, {"op": "randint", "low": 0, "high": 1000, "shape": [4]}])

    # bernoulli_ and dropout.
    add("bernoulli_f32_p0.3_seed8", 8, "float32",
        [{"op": "bernoulli", "dtype": "float32", "shape": [100], "p": 0.3}])
    add("bernoulli_f64_p0.5_seed8", 8, "float64",
        [{"op": "bernoulli", "dtype": "float64", "shape": [20], "p": 0.5}])
    for p in [0.1, 0.15, 0.5]:
        add("dropout_ones_p%s_seed9" % p, 9, "float32",
            [{"op": "dropout", "input": "ones", "shape": [50], "p": p}])
    add("dropout_randn20_p0.1_seed9", 9, "float32",
        [{"op": "dropout", "input": "randn", "shape": [20], "p": 0.1}])
    add("dropout_randn10_p0.15_seed9", 9, "float32",
        [{"op": "dropout", "input": "randn", "shape": [10], "p": 0.15}])

    # multinomial(probs, 1).
    def multinomial(probs, repeat, dtype="float32"):
        return {"op": "multinomial", "dtype": dtype, "probs": probs, "repeat": repeat}
    add("multinomial_0.1_0.2_0.3_0.4_x30_seed0", 0, "int64", [multinomial([0.1, 0.2, 0.3, 0.4], 30)])
    add("multinomial_zeros_x10_seed1", 1, "int64", [multinomial([0.0, 0.5, 0.0, 0.5, 0.0], 10)])
    add("multinomial_unnormalised_x10_seed2", 2, "int64", [multinomial([1.0, 2.0, 3.0, 10.0], 10)])
    add("multinomial_f64_x10_seed3", 3, "int64", [multinomial([0.25, 0.05, 0.7], 10, "float64")])
    torch.manual_seed(99)
    rows = torch.softmax(torch.randn(3, 6), dim=1).tolist()
    add("multinomial_3x6_rows_x4_seed4", 4, "int64", [multinomial(rows, 4)])
    torch.manual_seed(100)
    vocab = torch.softmax(2.0 * torch.randn(500), dim=0).tolist()
    add("multinomial_vocab500_x5_seed5", 5, "int64", [multinomial(vocab, 5)])

    # exponential_.
    add("exponential_f32_rate1_seed0", 0, "float32",
        [{"op": "exponential", "dtype": "float32", "shape": [50], "lambda": 1.0}])
    add("exponential_f32_rate2.5_seed42", 42, "float32",
        [{"op": "exponential", "dtype": "float32", "shape": [50], "lambda": 2.5}])
    add("exponential_f64_rate2.5_seed42", 42, "float64",
        [{"op": "exponential", "dtype": "float64", "shape": [20], "lambda": 2.5}])

    # Module initialisation.
    add("linear_4_3_seed0", 0, "float32", [{"op": "linear", "in": 4, "out": 3, "bias": True}])
    add("linear_10_7_nobias_seed0", 0, "float32", [{"op": "linear", "in": 10, "out": 7, "bias": False}])
    add("linear_3_2_then_5_16_seed42", 42, "float32",
        [{"op": "linear", "in": 3, "out": 2, "bias": True}, {"op": "linear", "in": 5, "out": 16, "bias": True}])
    add("linear_37_13_seed123", 123, "float32", [{"op": "linear", "in": 37, "out": 13, "bias": True}])
    add("embedding_10_4_seed0", 0, "float32", [{"op": "embedding", "num": 10, "dim": 4}])
    add("embedding_3_5_seed0", 0, "float32", [{"op": "embedding", "num": 3, "dim": 5}])

    # The raw engine: torch.get_rng_state() bytes after a number of draws.
    for draws in [0, 1, 623, 624, 625, 5000]:
        calls = ([{"op": "draws", "n": draws}] if draws else []) + [{"op": "get_state"}]
        add("state_after_%d_draws_seed7" % draws, 7, "state", calls)
    add("state_with_cached_normal_seed7", 7, "state", [normal("float32", 1), {"op": "get_state"}])
    add("state_seed4294967303_3_draws", 2**32 + 7, "state", [{"op": "draws", "n": 3}, {"op": "get_state"}])
    add("state_seed_m1", -1, "state", [{"op": "get_state"}])

    ids = [v["id"] for v in vectors]
    assert len(ids) == len(set(ids)), "duplicate ids"
    with open(OUT, "w") as f:
        f.write('{"description": "PyTorch %s CPU generator outputs (AVX2 kernels) for tapegrad\'s '
                'bit-exact tests; made by tests/reference/make_rng_reference.py, see its docstring '
                'for the format",\n' % torch.__version__)
        f.write('"torch_version": %s,\n"vectors": [\n' % json.dumps(torch.__version__))
        f.write(",\n".join(json.dumps(v, separators=(",", ":")) for v in vectors))
        f.write("\n]}\n")
    print("wrote %s: %d vectors, %d bytes" % (OUT, len(vectors), os.path.getsize(OUT)))


if __name__ == "__main__":
    main()
