# make_multinomial_reference.py — torch.multinomial(probs, k) without replacement, k > 1, from
# PyTorch 1.13's CPU generator, as test data for tests/autograd/test_multinomial.cpp.
#
#     /usr/bin/python3 tests/reference/make_multinomial_reference.py
#
# Writes tests/reference/multinomial_torch.json: per case the seed, probs (float64 bit patterns
# in hex, with their dtype and layout), k, torch's indices, and torch.rand(3) drawn right after
# (so the test also proves the number of draws). Cases with and without replacement.
import json
import os
import struct

import torch


def hexes(t):
    return [struct.pack(">d", float(v)).hex() for v in t.double().flatten().tolist()]


CASES = []


def case(case_id, seed, probs, k, transposed=False, replacement=False):
    torch.manual_seed(seed)
    if transposed:
        probs = probs.t().contiguous().t()
    out = torch.multinomial(probs, k, replacement=replacement)
    after = torch.rand(3)
    CASES.append({"id": case_id, "seed": seed, "k": k, "dtype": str(probs.dtype).replace("torch.", ""),
                  "shape": list(probs.shape), "transposed": transposed, "replacement": replacement,
                  "probs": hexes(probs.contiguous()), "indices": out.flatten().tolist(), "rand_after": hexes(after)})


def main():
    torch.manual_seed(0)
    case("row_k5", 1, torch.softmax(torch.randn(50), 0), 5)
    case("rows_k3_f64", 2, torch.rand(4, 10, dtype=torch.float64), 3)
    case("unnormalised_with_zeros", 3, torch.tensor([0.0, 2.0, 0.0, 5.0, 1.0, 0.5]), 4)
    case("all_categories", 4, torch.tensor([[0.1, 0.2, 0.3, 0.4], [1.0, 1.0, 1.0, 1.0]]), 4)
    case("vocab_65_k10", 5, torch.softmax(torch.randn(2, 65) * 3, 1), 10)
    case("transposed_rows", 6, torch.rand(5, 3), 2, transposed=True)
    case("replacement_k20", 7, torch.softmax(torch.randn(12), 0), 20, replacement=True)
    case("replacement_one_sample_rows_f64", 8, torch.rand(3, 7, dtype=torch.float64), 1, replacement=True)
    case("replacement_unnormalised_zeros", 9, torch.tensor([[0.0, 3.0, 1.0, 0.0], [5.0, 0.0, 0.0, 1.0]]), 6,
         replacement=True)
    case("replacement_vocab_65", 10, torch.softmax(torch.randn(65) * 2, 0), 50, replacement=True)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "multinomial_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_multinomial_reference.py", "torch_version": torch.__version__,
                   "cases": CASES}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {path}")


main()
