# make_inputs_reference.py — what PyTorch 1.13's repr() prints for large tensors (summarised with
# "..."), as test data for printing without gathering every element (tests/autograd/test_bad_inputs.cpp).
#
#     /usr/bin/python3 tests/reference/make_inputs_reference.py
#
# writes tests/reference/inputs_torch.json: {"cases": [{"name", "repr"}]}. Each name matches a
# tensor the C++ test builds the same way (see the comment next to each case).
import json
import os

import torch


def cases():
    # zeros({1}).expand({1LL << 40})
    yield "expand_2pow40", torch.zeros(1).expand(2**40)
    # arange(0.0, 2000.0, 1.0)
    yield "arange_2000_float", torch.arange(2000.0)
    # arange(0.0, 1 << 20, 1.0).expand({1 << 20, 1 << 20})
    yield "expand_rows_2pow20", torch.arange(float(2**20)).expand(2**20, 2**20)
    # div(arange(0.0, 1e6, 1.0).reshape({1000, 1000}), 7.0).narrow(1, 250, 500)
    yield "narrow_1000x500", (torch.arange(1e6).reshape(1000, 1000) / 7.0).narrow(1, 250, 500)
    # arange(24000).reshape({20, 30, 40})
    yield "int64_20x30x40", torch.arange(24000).reshape(20, 30, 40)
    # tensor({true, false, true, false, true}).expand({3000, 5})
    yield "bool_expand_3000x5", torch.tensor([True, False, True, False, True]).expand(3000, 5)
    # mul(arange(0.0, 3000.0, 1.0, kFloat64).reshape({60, 50}), 0.001).t()
    yield "float64_transposed_60x50", (torch.arange(3000.0, dtype=torch.float64).reshape(60, 50) * 0.001).t()
    # arange(0.0, 7.0, 1.0).reshape({7, 1, 1, 1}).expand({7, 8, 9, 10})
    yield "expand_4d", torch.arange(7.0).reshape(7, 1, 1, 1).expand(7, 8, 9, 10)
    # mul(ones({2000}).requires_grad_(), 2.0)
    yield "grad_fn_2000", torch.ones(2000, requires_grad=True) * 2.0
    # mul(arange(0.0, 1001.0, 1.0), 1e-5): scientific format chosen from the shown elements only
    yield "scientific_1001", torch.arange(1001.0) * 1e-5


def main():
    out = {"cases": [{"name": name, "repr": repr(t)} for name, t in cases()]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inputs_torch.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", path, len(out["cases"]), "cases")


if __name__ == "__main__":
    main()
