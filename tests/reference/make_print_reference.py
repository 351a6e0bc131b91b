# make_print_reference.py — what PyTorch 1.13's repr() prints for many tensors, as test data for
# tg::print::format_repr (autograd/print_format.h).
#
# Run from the repository's folder with the Debian interpreter that has python3-torch 1.13:
#
#     /usr/bin/python3 tests/reference/make_print_reference.py
#
# It writes tests/reference/print_torch.json (committed; the C++ tests never run Python).
# Each case holds:
#   name      what the case is about
#   sizes     the shape ([] for a 0-d scalar)
#   kind      "Floating", "Integer" or "Bool"
#   floats    for Floating: the row-major values as the 16 hex digits of each float64 bit pattern
#             (float32 values are widened to float64 first, which is exact)
#   ints      for Integer and Bool: the row-major values as numbers (Bool as 0 / 1)
#   suffixes  the suffixes a caller passes to format_repr, already formatted, in torch's order
#             (dtype=..., grad_fn=<...> or requires_grad=True). The "size=(...)" suffix torch adds
#             to empty tensors is NOT listed: format_repr derives it from the shape itself.
#   repr      exactly what repr(tensor) prints in PyTorch 1.13 with the default print options
import json
import math
import os
import struct

import torch

DEFAULT_DTYPE = torch.float32
# dtypes whose name torch leaves out of a non-empty tensor's repr
# (_tensor_str.py: has_default_dtype)
DTYPES_SHOWN_ONLY_WHEN_EMPTY = (torch.float32, torch.int64, torch.bool)


def caller_suffixes(t):
    """The suffixes torch prints after the data, except size=(...) (see header)."""
    suffixes = []
    if t.numel() == 0:
        # An empty tensor has no values to hint at the dtype, so torch names any non-default one.
        if t.dtype != DEFAULT_DTYPE:
            suffixes.append("dtype=" + str(t.dtype))
    elif t.dtype not in DTYPES_SHOWN_ONLY_WHEN_EMPTY:
        suffixes.append("dtype=" + str(t.dtype))
    if t.grad_fn is not None:
        suffixes.append("grad_fn=<{}>".format(type(t.grad_fn).__name__))
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return suffixes


def float_hex(value):
    return struct.pack(">d", value).hex()


def make_case(name, t):
    flat = t.detach().reshape(-1).tolist()
    case = {"name": name, "sizes": list(t.shape)}
    if t.dtype.is_floating_point:
        case["kind"] = "Floating"
        case["floats"] = [float_hex(v) for v in flat]
    elif t.dtype == torch.bool:
        case["kind"] = "Bool"
        case["ints"] = [int(v) for v in flat]
    else:
        case["kind"] = "Integer"
        case["ints"] = [int(v) for v in flat]
    case["suffixes"] = caller_suffixes(t)
    case["repr"] = repr(t)
    return case


def build_cases():
    cases = []

    def add(name, t):
        cases.append(make_case(name, t))

    nan, inf = math.nan, math.inf

    # --- the running example: six token embeddings, their scores, softmax, causal mask
    x = torch.tensor(
        [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
         [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
    add("embeddings", x)
    add("embeddings_row_1d", x[1])
    add("embeddings_element_0d", x[0, 0])
    scores = x @ x.T
    add("scores", scores)
    add("softmax_of_scores", torch.softmax(scores, dim=-1))
    causal = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    add("causal_mask_bool", causal)
    masked = scores.masked_fill(causal, -inf)
    add("scores_masked_with_minus_inf", masked)
    add("softmax_of_masked_scores", torch.softmax(masked, dim=-1))
    xg = x.clone().requires_grad_(True)
    add("embeddings_requires_grad", xg)
    sg = xg @ xg.T
    add("scores_grad_fn_mm", sg)
    mg = sg.masked_fill(causal, -inf)
    add("masked_grad_fn", mg)
    wg = torch.softmax(mg, dim=-1)
    add("attention_weights_grad_fn_softmax", wg)
    add("context_grad_fn_mm", wg @ xg)
    add("loss_0d_grad_fn_sum", (wg @ xg).sum())
    add("mean_0d_grad_fn_mean", (wg @ xg).mean())
    add("tril_ones_int_mode", torch.tril(torch.ones(6, 6)))

    # --- 3-d and higher: blank lines between blocks (one per extra dim)
    add("arange_2x3x4_int_mode", torch.arange(24.0).reshape(2, 3, 4))
    torch.manual_seed(0)
    add("randn_2x3x4", torch.randn(2, 3, 4))
    add("randn_2x2x2x3_4d", torch.randn(2, 2, 2, 3))
    add("arange_1x2x1x2x2_5d", torch.arange(8.0).reshape(1, 2, 1, 2, 2))
    add("randn_2x1x1x1x1x2_6d", torch.randn(2, 1, 1, 1, 1, 2))
    add("batch_of_embeddings_3d", torch.stack([x, x.flip(0)]))

    # --- integer-valued floats ("2." mode)
    add("int_mode_small", torch.tensor([1.0, 2.0, -3.0, 100.0]))
    add("int_mode_2d_widths", torch.tensor([[1.0, -20.0], [300.0, 4.0]]))
    add("all_zeros", torch.zeros(2, 3))
    add("negative_zero_and_zero", torch.tensor([-0.0, 0.0]))
    add("negative_zero_with_fraction", torch.tensor([-0.0, 0.5, -0.25]))
    add("negative_zero_with_integer", torch.tensor([-0.0, 3.0]))
    add("int_mode_large_below_1e8", torch.tensor([12345678.0, 1.0e4]))
    add("int_mode_ratio_over_1000_goes_sci", torch.tensor([1.0, 2000.0]))
    add("int_mode_ratio_exactly_1000_stays", torch.tensor([1.0, 1000.0]))
    add("int_mode_above_1e8_goes_sci", torch.tensor([2.0e8, 3.0e8]))
    add("int_mode_float64", torch.tensor([1.0, 2.0], dtype=torch.float64))

    # --- fixed 4 decimals, aligned widths
    add("fixed_mixed_widths", torch.tensor([[1.5, -22.25], [333.125, 0.001]]))
    add("fixed_rounding", torch.tensor([0.12345, 0.99995, 2.00005, -0.00015]))
    add("fixed_ratio_exactly_1000", torch.tensor([0.5, 500.0], dtype=torch.float64))
    add("fixed_min_exactly_1e_4", torch.tensor([1.0e-4, 0.05], dtype=torch.float64))

    # --- scientific notation
    add("sci_tiny_value", torch.tensor([1.0e-5, 1.0]))
    add("sci_huge_value", torch.tensor([1.5e9, 1.0]))
    add("sci_ratio_over_1000", torch.tensor([0.001, 1.5]))
    add("sci_huge_and_tiny_2d", torch.tensor([[1.0e-8, 2.5e8], [-3.25, 0.0]]))
    add("sci_with_nan_inf", torch.tensor([1.0e-6, nan, inf, -inf, 0.5]))
    add("sci_float64_big_exponent", torch.tensor([1.0e-300, 1.0e300], dtype=torch.float64))
    add("sci_0d", torch.tensor(1.0e-7))
    add("sci_0d_int_valued", torch.tensor(1.0e10))

    # --- nan / inf
    add("nan_inf_fixed", torch.tensor([nan, inf, -inf, 1.5]))
    add("nan_inf_int_mode", torch.tensor([nan, 1.0, -inf, 20.0]))
    add("only_nonfinite", torch.tensor([nan, inf, -inf]))
    add("negative_nan", -torch.tensor([nan, 1.0]))
    add("nan_0d", torch.tensor(nan))
    add("minus_inf_0d", torch.tensor(-inf))

    # --- int64 and bool
    add("token_ids", torch.tensor([[5, 12, 0], [7, 3, 1000]]))
    add("token_ids_negative", torch.tensor([-1, 2, -300, 4]))
    add("int64_extremes", torch.tensor([-(2**63), 2**63 - 1]))
    add("int64_0d", torch.tensor(7))
    add("int32_dtype_suffix", torch.tensor([1, 2, 3], dtype=torch.int32))
    add("int64_arange_100_wraps", torch.arange(100))
    add("bool_pair", torch.tensor([True, False]))
    add("bool_all_true", torch.tensor([True, True]))
    add("bool_0d", torch.tensor(False))
    add("bool_3d", torch.tensor([[[True, False], [False, False]], [[True, True], [False, True]]]))

    # --- 0-d scalars
    add("scalar_int_valued", torch.tensor(3.0))
    add("scalar_fraction", torch.tensor(0.4306))
    add("scalar_zero", torch.tensor(0.0))
    add("scalar_negative_zero", torch.tensor(-0.0))
    add("scalar_negative", torch.tensor(-12.5))
    add("scalar_float64", torch.tensor(0.1, dtype=torch.float64))
    add("scalar_requires_grad", torch.tensor(2.5, requires_grad=True))

    # --- empty tensors
    add("empty_1d", torch.tensor([]))
    add("empty_0x3", torch.zeros(0, 3))
    add("empty_2x0x3", torch.zeros(2, 0, 3))
    add("empty_int64", torch.zeros(0, dtype=torch.int64))
    add("empty_bool_2d", torch.zeros(3, 0, dtype=torch.bool))
    add("empty_float64", torch.zeros(0, dtype=torch.float64))
    add("empty_requires_grad", torch.zeros(0, 2, requires_grad=True))

    # --- summarisation (> 1000 elements)
    add("arange_2000_1d", torch.arange(2000.0))
    add("arange_1001_1d", torch.arange(1001.0))
    add("arange_1000_1d_not_summarised", torch.arange(1000.0))
    add("randn_40x50", torch.randn(40, 50))
    add("randn_2x1000_rows_summarised", torch.randn(2, 1000))
    add("randn_1000x2_only_rows_cut", torch.randn(1000, 2))
    add("randn_10x10x20_3d", torch.randn(10, 10, 20))
    add("int64_arange_2000", torch.arange(2000))
    # Only the shown values choose the format: the hidden 1e-6 would force scientific notation.
    add("summary_format_from_shown_values_only",
        torch.cat([torch.full((3,), 0.5), torch.full((1000,), 1.0e-6), torch.full((3,), 0.25)]))
    add("summary_hidden_fraction_keeps_int_mode",
        torch.cat([torch.arange(3.0), torch.full((497,), 0.5), torch.arange(3.0, 6.0)])
        .repeat(2, 1))
    add("summary_bool", torch.arange(1200) % 3 == 0)
    add("summary_requires_grad_float64",
        torch.randn(30, 40, dtype=torch.float64, requires_grad=True))

    # --- line wrapping of long rows
    add("randn_30_wraps", torch.randn(30))
    add("randn_3x25_rows_wrap", torch.randn(3, 25))
    add("randn_2x2x20_wrap_deeper", torch.randn(2, 2, 20))
    add("sci_row_wraps", torch.randn(20) * 1.0e-6)
    add("float64_row_wraps_dtype_suffix", torch.randn(15, dtype=torch.float64))
    add("arange_30_int_mode_wraps", torch.arange(30.0) * 1000.0 + 1000.0)

    # --- suffix placement: same line, or new line indented under the data
    add("float64_dtype_suffix", torch.tensor([[0.43, 0.15], [0.55, 0.87]], dtype=torch.float64))
    add("float64_requires_grad_two_suffixes",
        torch.tensor([[0.43, 0.15], [0.55, 0.87]], dtype=torch.float64, requires_grad=True))
    add("suffix_fits_on_line", torch.randn(5, dtype=torch.float64))
    add("suffix_moves_down_62_chars", torch.randn(6, dtype=torch.float64))
    add("suffix_pushed_to_new_line", torch.tensor(
        [-1.25, 2.5, -3.75, 4.125, -5.5, 6.25, -7.0625, 8.5], dtype=torch.float64))
    add("second_suffix_pushed_to_new_line", torch.tensor(
        [-1.25, 2.5, -3.75, 4.125, -5.5], dtype=torch.float64, requires_grad=True))
    y = torch.tensor([-1.25, 2.5, -3.75, 4.125, -5.5, 6.25, 7.5], requires_grad=True)
    add("grad_fn_pushed_to_new_line", (y * 2.0).tanh())
    add("long_grad_fn_pushed", torch.log_softmax(y * 3.0, dim=0))
    add("float16_dtype", torch.tensor([0.1, 2.0, 3.5], dtype=torch.float16))
    # A 1-d row of k integers of w digits is 7 + k*(w+2) characters long on one line. torch
    # counts the last line 2 characters longer than it is and asks for room for ", " + suffix,
    # so it moves the suffix down once line + suffix > 76, even when ", " + suffix + ")" would
    # still have ended at column 80 (the int8 case).
    for dtype, digits, count in [(torch.int32, 1, 17), (torch.int32, 2, 13), (torch.int8, 1, 18),
                                 (torch.int16, 1, 18), (torch.int32, 4, 9)]:
        first = 10 ** (digits - 1)
        values = [first + i % 9 for i in range(count)]
        add("suffix_edge_{}_{}x{}_digits".format(str(dtype)[6:], count, digits),
            torch.tensor(values, dtype=dtype))
    return cases


def main():
    torch.set_printoptions(profile="default")
    cases = build_cases()
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    out = {
        "about": "repr() of tensors in PyTorch " + torch.__version__
                 + "; made by tests/reference/make_print_reference.py",
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "print_torch.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote {} cases to {}".format(len(cases), path))


if __name__ == "__main__":
    main()
