# make_op_reference.py — PyTorch 1.13's forward values and gradients for every op in
# autograd/ops.h (dropout excepted: another file covers it), as test data for
# tests/autograd/test_ops_vs_torch.cpp.
#
# Run from the repository's folder with the Debian interpreter that has python3-torch 1.13
# (the first python3 on PATH has no torch):
#
#     /usr/bin/python3 tests/reference/make_op_reference.py
#
# It writes tests/reference/ops_torch.json (committed; the C++ tests never run Python). The
# inputs of each case come from torch.manual_seed(crc32(case id)), so adding a case leaves the
# others unchanged; the values are stored, so the C++ side never regenerates them.
#
# Format (later issues extend it: add cases, or new keys the reader may ignore):
#   {"generator": ..., "torch_version": ..., "cases": [case, ...]}
#   case = {
#     "id":       unique, [A-Za-z0-9_] (the C++ test is named after it)
#     "op":       the op's name in the C++ dispatch table (usually the tg:: function's name)
#     "args":     {name: number | bool | string | null | [ints]}: dims, flags, scalars; a
#                 scalar that JSON cannot hold is a string: "-inf", "inf", "nan"
#     "inputs":   [tensor + {"requires_grad": bool, "layout": ..., "strides": [...]}]
#                 layout "contiguous"; "transposed": stored as the contiguous transpose of its
#                 last two dims, viewed back (strides (..,1,n)); "sliced": every other element
#                 of a buffer twice as wide in the last dim (strides (..,2)). "strides" is
#                 torch's view strides, so the C++ side can check it rebuilt the same view.
#     "outputs":  [tensor, ...]: one, or (values, indices) for max/min along a dim
#     "grad_output": tensor | null   the upstream gradient (random normal) given to
#                 outputs[0].backward(); null when outputs[0] has no gradient
#     "grads":    [tensor | null per input]: the gradient of each input that requires grad
#                 (null for the others, and for inputs torch's backward never reached)
#   }
#   tensor = {"shape": [...], "dtype": "float32" | "float64" | "int64" | "bool",
#             "values": row-major; floating: the 16 hex digits of each value's float64 bit
#             pattern (float32 widened, exactly), so -inf and NaN survive; int64/bool: numbers}
import json
import os
import struct
import zlib

import torch
import torch.nn.functional as F

DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}
f32, f64 = torch.float32, torch.float64


def float_hex(value):
    return struct.pack(">d", value).hex()


def encode(t):
    t = t.detach()
    values = t.reshape(-1).tolist()
    if t.dtype.is_floating_point:
        values = [float_hex(v) for v in values]
    else:
        values = [int(v) for v in values]
    return {"shape": list(t.shape), "dtype": DTYPE_NAMES[t.dtype], "values": values}


# --- input specifications: how to draw each input -------------------------------------------------

class In:
    """One input: drawn after the case's seed is set. kind: randn | positive | away_from_zero |
    rounded (few distinct values, for comparisons) | given (values) | randint | mask."""

    def __init__(self, shape, kind="randn", dtype=f32, grad=True, layout="contiguous", values=None, high=None):
        self.shape, self.kind, self.dtype, self.grad = list(shape), kind, dtype, grad
        self.layout, self.values, self.high = layout, values, high

    def draw(self):
        if self.kind == "given":
            return torch.tensor(self.values, dtype=self.dtype).reshape(self.shape)
        if self.kind == "randint":
            return torch.randint(0, self.high, self.shape, dtype=torch.int64)
        if self.kind == "mask":
            return torch.rand(self.shape) < 0.4
        x = torch.randn(self.shape, dtype=f64)
        if self.kind == "positive":  # in [0.2, 2.2)
            x = torch.rand(self.shape, dtype=f64) * 2 + 0.2
        elif self.kind == "away_from_zero":  # |x| in [0.5, 2)
            x = (torch.rand(self.shape, dtype=f64) * 1.5 + 0.5) * torch.where(torch.rand(self.shape) < 0.5, -1.0, 1.0)
        elif self.kind == "rounded":  # multiples of 0.5 in [-1, 1]: equal values happen
            x = torch.randint(-2, 3, self.shape).to(f64) / 2
        return x.to(self.dtype)

    def make(self):
        x = self.draw()
        if self.layout == "transposed":
            x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
        elif self.layout == "sliced":
            wide = torch.zeros(self.shape[:-1] + [2 * self.shape[-1]], dtype=x.dtype)
            wide[..., ::2] = x
            x = wide[..., ::2]
        if self.grad:
            x.requires_grad_(True)
        return x


def describe_input(spec, x):
    d = encode(x)
    d["requires_grad"] = bool(spec.grad)
    d["layout"] = spec.layout
    d["strides"] = list(x.stride())
    return d


CASES = []


def case(case_id, op, fn, inputs, args=None):
    """fn(inputs, args) -> a tensor or a tuple of tensors (outputs[0] is differentiated)."""
    args = args or {}
    assert all(c["id"] != case_id for c in CASES), case_id
    torch.manual_seed(zlib.crc32(case_id.encode()))
    tensors = [spec.make() for spec in inputs]
    outputs = fn(tensors, args)
    if not isinstance(outputs, tuple):
        outputs = (outputs,)
    out = outputs[0]
    entry = {"id": case_id, "op": op, "args": args,
             "inputs": [describe_input(s, x) for s, x in zip(inputs, tensors)],
             "outputs": [encode(o) for o in outputs], "grad_output": None, "grads": [None] * len(tensors)}
    if out.requires_grad:
        g = torch.randn(out.shape, dtype=out.dtype)
        out.backward(g)
        entry["grad_output"] = encode(g)
        entry["grads"] = [encode(x.grad) if (s.grad and x.grad is not None) else None for s, x in zip(inputs, tensors)]
    CASES.append(entry)


def both_dtypes(case_id, op, fn, make_inputs, args=None):
    """A float32 case and a float64 one (same op and args)."""
    case(case_id + "_f32", op, fn, make_inputs(f32), args)
    case(case_id + "_f64", op, fn, make_inputs(f64), args)


# --- creation -----------------------------------------------------------------------------------------

def creation_cases():
    dt = {"int64": torch.int64, "float32": f32, "float64": f64}
    arange = lambda x, a: torch.arange(a["start"], a["end"], a["step"], dtype=dt[a["dtype"]])
    case("arange_int64", "arange", arange, [], {"start": 0, "end": 7, "step": 2, "dtype": "int64"})
    case("arange_negative_step_int64", "arange", arange, [], {"start": 5, "end": -3, "step": -3, "dtype": "int64"})
    case("arange_float32", "arange", arange, [], {"start": -1.0, "end": 1.0, "step": 0.25, "dtype": "float32"})
    case("arange_float64_tenths", "arange", arange, [], {"start": 0.0, "end": 1.0, "step": 0.1, "dtype": "float64"})
    eye = lambda x, a: torch.eye(a["n"], dtype=dt[a["dtype"]])
    case("eye_3_float32", "eye", eye, [], {"n": 3, "dtype": "float32"})
    case("eye_4_float64", "eye", eye, [], {"n": 4, "dtype": "float64"})
    for name, f in (("tril", torch.tril), ("triu", torch.triu)):
        fn = lambda x, a, f=f: f(x[0], a["diagonal"])
        for d in (-1, 0, 2):
            tag = "m1" if d < 0 else str(d)
            case(f"{name}_diag_{tag}", name, fn, [In([4, 5])], {"diagonal": d})
        case(f"{name}_batched_diag_1", name, fn, [In([2, 3, 4])], {"diagonal": 1})
        case(f"{name}_transposed_input", name, fn, [In([4, 4], layout="transposed")], {"diagonal": 0})
    stack = lambda x, a: torch.stack(x, a["dim"])
    for d in (0, 1, -1):
        case(f"stack_dim_{d}".replace("-", "m"), "stack", stack, [In([2, 3]), In([2, 3]), In([2, 3])], {"dim": d})
    case("stack_one_without_grad", "stack", stack, [In([3]), In([3], grad=False)], {"dim": 0})
    cat = lambda x, a: torch.cat(x, a["dim"])
    case("cat_dim_0", "cat", cat, [In([2, 3]), In([1, 3]), In([3, 3])], {"dim": 0})
    case("cat_dim_1_strided", "cat", cat, [In([2, 3], layout="transposed"), In([2, 2], layout="sliced")], {"dim": 1})
    case("cat_dim_m1_3d_f64", "cat", cat, [In([2, 2, 1], dtype=f64), In([2, 2, 3], dtype=f64)], {"dim": -1})


# --- views -----------------------------------------------------------------------------------------------

def view_cases():
    case("view_3x4_to_2x6", "view", lambda x, a: x[0].view(a["shape"]), [In([3, 4])], {"shape": [2, 6]})
    case("view_infer_dim", "view", lambda x, a: x[0].view(a["shape"]), [In([2, 3, 4])], {"shape": [-1, 4]})
    case("view_sliced_compatible", "view", lambda x, a: x[0].view(a["shape"]), [In([2, 3, 4], layout="sliced")],
         {"shape": [6, 4]})
    case("reshape_contiguous", "reshape", lambda x, a: x[0].reshape(a["shape"]), [In([4, 3])], {"shape": [2, 2, 3]})
    case("reshape_transposed_copies", "reshape", lambda x, a: x[0].reshape(a["shape"]),
         [In([3, 4], layout="transposed")], {"shape": [12]})
    case("reshape_sliced_copies", "reshape", lambda x, a: x[0].reshape(a["shape"]),
         [In([2, 4], layout="sliced")], {"shape": [4, 2]})
    case("flatten_all", "flatten", lambda x, a: x[0].flatten(a["start"], a["end"]), [In([2, 3, 2])],
         {"start": 0, "end": -1})
    case("flatten_middle", "flatten", lambda x, a: x[0].flatten(a["start"], a["end"]), [In([2, 3, 2, 2])],
         {"start": 1, "end": 2})
    tr = lambda x, a: x[0].transpose(a["dim0"], a["dim1"])
    case("transpose_0_2", "transpose", tr, [In([2, 3, 4])], {"dim0": 0, "dim1": 2})
    case("transpose_of_transposed", "transpose", tr, [In([3, 4], layout="transposed")], {"dim0": 0, "dim1": 1})
    case("permute_2_0_1", "permute", lambda x, a: x[0].permute(a["dims"]), [In([2, 3, 4])], {"dims": [2, 0, 1]})
    case("permute_negative_dims", "permute", lambda x, a: x[0].permute(a["dims"]), [In([2, 3, 4])],
         {"dims": [-1, -3, -2]})
    case("t_2d", "t", lambda x, a: x[0].t(), [In([3, 2])])
    case("mT_3d", "mT", lambda x, a: x[0].mT, [In([2, 3, 4])])
    un = lambda x, a: x[0].unsqueeze(a["dim"])
    case("unsqueeze_0", "unsqueeze", un, [In([3, 2])], {"dim": 0})
    case("unsqueeze_m1", "unsqueeze", un, [In([3, 2])], {"dim": -1})
    case("unsqueeze_middle_transposed", "unsqueeze", un, [In([3, 2], layout="transposed")], {"dim": 1})
    case("squeeze_all", "squeeze", lambda x, a: x[0].squeeze(), [In([1, 3, 1, 2])])
    case("squeeze_dim", "squeeze_dim", lambda x, a: x[0].squeeze(a["dim"]), [In([3, 1, 2])], {"dim": 1})
    case("squeeze_dim_not_one", "squeeze_dim", lambda x, a: x[0].squeeze(a["dim"]), [In([3, 1, 2])], {"dim": 0})
    ex = lambda x, a: x[0].expand(a["shape"])
    case("expand_new_and_size1_dims", "expand", ex, [In([3, 1])], {"shape": [2, 3, 4]})
    case("expand_keep_with_m1", "expand", ex, [In([1, 4])], {"shape": [3, -1]})
    sel = lambda x, a: x[0].select(a["dim"], a["index"])
    case("select_dim1_last", "select", sel, [In([3, 4])], {"dim": 1, "index": -1})
    case("select_dim0_3d", "select", sel, [In([2, 3, 4])], {"dim": 0, "index": 1})
    case("select_sliced", "select", sel, [In([3, 4], layout="sliced")], {"dim": 1, "index": 2})
    nar = lambda x, a: x[0].narrow(a["dim"], a["start"], a["length"])
    case("narrow_dim0", "narrow", nar, [In([5, 3])], {"dim": 0, "start": 1, "length": 3})
    case("narrow_dim1_transposed", "narrow", nar, [In([3, 5], layout="transposed")], {"dim": 1, "start": 2, "length": 2})
    # slice: Python's x[start:end:step] along dim; end null means to the end
    def sl(x, a):
        index = [slice(None)] * x[0].dim()
        index[a["dim"]] = slice(a["start"], a["end"], a["step"])
        return x[0][tuple(index)]
    case("slice_step_2", "slice", sl, [In([3, 7])], {"dim": 1, "start": 1, "end": None, "step": 2})
    case("slice_step_3_dim0", "slice", sl, [In([8, 2])], {"dim": 0, "start": 0, "end": 7, "step": 3})
    case("slice_negative_start", "slice", sl, [In([3, 6])], {"dim": 1, "start": -4, "end": -1, "step": 1})
    case("slice_end_clamped", "slice", sl, [In([4, 3])], {"dim": 0, "start": 2, "end": 100, "step": 1})
    case("slice_of_sliced", "slice", sl, [In([3, 6], layout="sliced")], {"dim": 1, "start": 1, "end": None, "step": 2})
    case("contiguous_of_transposed", "contiguous", lambda x, a: x[0].contiguous(), [In([3, 4], layout="transposed")])
    case("clone_sliced", "clone", lambda x, a: x[0].clone(), [In([2, 3], layout="sliced")])
    case("to_float64", "to", lambda x, a: x[0].to(f64), [In([2, 3])], {"dtype": "float64"})
    case("to_float32", "to", lambda x, a: x[0].to(f32), [In([2, 3], dtype=f64)], {"dtype": "float32"})


# --- arithmetic -------------------------------------------------------------------------------------------

def arithmetic_cases():
    add = lambda x, a: torch.add(x[0], x[1], alpha=a["alpha"])
    sub = lambda x, a: torch.sub(x[0], x[1], alpha=a["alpha"])
    mul = lambda x, a: x[0] * x[1]
    div = lambda x, a: x[0] / x[1]
    case("add_same_shape", "add", add, [In([3, 4]), In([3, 4])], {"alpha": 1.0})
    case("add_broadcast_row_alpha", "add", add, [In([3, 4]), In([4])], {"alpha": 2.0})
    case("add_broadcast_both", "add", add, [In([2, 1, 4]), In([3, 1])], {"alpha": -0.5})
    case("add_transposed_and_sliced", "add", add, [In([3, 4], layout="transposed"), In([3, 4], layout="sliced")],
         {"alpha": 1.0})
    case("add_scalar_tensor_0d", "add", add, [In([]), In([2, 3])], {"alpha": 1.0})
    case("sub_broadcast_alpha", "sub", sub, [In([2, 3]), In([2, 1])], {"alpha": 3.0})
    case("mul_broadcast", "mul", mul, [In([2, 3, 4]), In([3, 1])])
    case("mul_one_without_grad", "mul", mul, [In([3, 4]), In([4], grad=False)])
    case("div_broadcast", "div", div, [In([3, 4]), In([4], kind="away_from_zero")])
    case("div_transposed_denominator", "div", div, [In([3, 3]), In([3, 3], kind="away_from_zero", layout="transposed")])
    both_dtypes("add_broadcast", "add", add, lambda d: [In([3, 4], dtype=d), In([3, 1], dtype=d)], {"alpha": 1.5})
    both_dtypes("mul_broadcast_2", "mul", mul, lambda d: [In([4, 1], dtype=d), In([3], dtype=d)])
    both_dtypes("div_both_grads", "div", div,
                lambda d: [In([2, 3], dtype=d), In([2, 3], kind="away_from_zero", dtype=d)])

    case("add_scalar", "add_scalar", lambda x, a: x[0] + a["other"], [In([3, 4])], {"other": 2.5})
    case("sub_scalar", "sub_scalar", lambda x, a: x[0] - a["other"], [In([3, 4])], {"other": -1.25})
    case("mul_scalar", "mul_scalar", lambda x, a: x[0] * a["other"], [In([3, 4])], {"other": -3.0})
    case("div_scalar", "div_scalar", lambda x, a: x[0] / a["other"], [In([3, 4])], {"other": 7.0})
    case("rsub_scalar", "rsub", lambda x, a: a["other"] - x[0], [In([3, 4])], {"other": 1.5})
    case("rdiv_scalar", "rdiv", lambda x, a: a["other"] / x[0], [In([3, 4], kind="away_from_zero")], {"other": 2.0})
    case("rdiv_scalar_f64", "rdiv", lambda x, a: a["other"] / x[0], [In([5], kind="away_from_zero", dtype=f64)],
         {"other": -3.0})
    case("neg", "neg", lambda x, a: -x[0], [In([3, 4])])
    case("neg_sliced", "neg", lambda x, a: -x[0], [In([2, 3], layout="sliced")])

    pw = lambda x, a: torch.pow(x[0], a["exponent"])
    case("pow_square_negative_base", "pow_scalar", pw, [In([3, 4])], {"exponent": 2.0})
    case("pow_cube", "pow_scalar", pw, [In([3, 4])], {"exponent": 3.0})
    case("pow_half", "pow_scalar", pw, [In([3, 4], kind="positive")], {"exponent": 0.5})
    case("pow_minus_1_5", "pow_scalar", pw, [In([3, 4], kind="positive")], {"exponent": -1.5})
    case("pow_zero", "pow_scalar", pw, [In([2, 3])], {"exponent": 0.0})
    case("pow_one", "pow_scalar", pw, [In([2, 3])], {"exponent": 1.0})
    both_dtypes("pow_2_5", "pow_scalar", pw, lambda d: [In([2, 3], kind="positive", dtype=d)], {"exponent": 2.5})
    pt = lambda x, a: torch.pow(x[0], x[1])
    case("pow_tensor_broadcast", "pow_tensor", pt, [In([3, 4], kind="positive"), In([4])])
    case("pow_tensor_f64", "pow_tensor", pt, [In([2, 3], kind="positive", dtype=f64), In([2, 3], dtype=f64)])


# --- elementwise math and activations ---------------------------------------------------------------------

def unary_cases():
    unary = {"exp": (torch.exp, "randn"), "log": (torch.log, "positive"), "sqrt": (torch.sqrt, "positive"),
             "abs": (torch.abs, "randn"), "tanh": (torch.tanh, "randn"), "sigmoid": (torch.sigmoid, "randn"),
             "relu": (torch.relu, "randn"), "silu": (F.silu, "randn")}
    for name, (f, kind) in unary.items():
        fn = lambda x, a, f=f: f(x[0])
        case(f"{name}_f32", name, fn, [In([3, 4], kind=kind)])
        case(f"{name}_transposed", name, fn, [In([3, 4], kind=kind, layout="transposed")])
        case(f"{name}_f64", name, fn, [In([2, 5], kind=kind, dtype=f64)])
    # the gradient at exactly 0: abs and relu give 0 there, as torch does
    case("abs_at_zero", "abs", lambda x, a: torch.abs(x[0]), [In([4], kind="given", values=[-1.5, 0.0, 0.0, 2.0])])
    case("relu_at_zero", "relu", lambda x, a: torch.relu(x[0]), [In([4], kind="given", values=[-1.5, 0.0, 0.0, 2.0])])
    case("exp_large_and_small", "exp", lambda x, a: torch.exp(x[0]),
         [In([4], kind="given", values=[-20.0, -1.0, 10.0, 20.0])])
    cl = lambda x, a: torch.clamp(x[0], a["min"], a["max"])
    case("clamp_both", "clamp", cl, [In([4, 5])], {"min": -0.5, "max": 0.5})
    case("clamp_min_only", "clamp", cl, [In([4, 5])], {"min": 0.1, "max": None})
    case("clamp_max_only", "clamp", cl, [In([4, 5])], {"min": None, "max": -0.2})
    case("clamp_f64_sliced", "clamp", cl, [In([3, 4], dtype=f64, layout="sliced")], {"min": -1.0, "max": 0.3})
    ge = lambda x, a: F.gelu(x[0], approximate=a["approximate"])
    for approx in ("none", "tanh"):
        case(f"gelu_{approx}_f32", "gelu", ge, [In([3, 5])], {"approximate": approx})
        case(f"gelu_{approx}_f64", "gelu", ge, [In([3, 5], dtype=f64)], {"approximate": approx})
        case(f"gelu_{approx}_wide_range", "gelu", ge,
             [In([6], kind="given", values=[-6.0, -3.0, -0.5, 0.0, 1.0, 5.0])], {"approximate": approx})


# --- comparisons, where, masked_fill ------------------------------------------------------------------------

def compare_cases():
    ops = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
    for name, f in ops.items():
        case(f"{name}_tensor_broadcast", name, lambda x, a, f=f: f(x[0], x[1]),
             [In([3, 4], kind="rounded", grad=False), In([4], kind="rounded", grad=False)])
        case(f"{name}_scalar", f"{name}_scalar", lambda x, a, f=f: f(x[0], a["other"]),
             [In([3, 4], kind="rounded", grad=False)], {"other": 0.5})
    case("logical_not", "logical_not", lambda x, a: torch.logical_not(x[0]), [In([2, 3], kind="mask", grad=False)])
    wh = lambda x, a: torch.where(x[0], x[1], x[2])
    case("where_broadcast", "where", wh, [In([3, 1], kind="mask", grad=False), In([3, 4]), In([4])])
    case("where_same_shape_f64", "where", wh, [In([2, 3], kind="mask", grad=False), In([2, 3], dtype=f64),
                                               In([2, 3], dtype=f64)])
    case("where_strided", "where", wh, [In([3, 3], kind="mask", grad=False), In([3, 3], layout="transposed"),
                                        In([3, 3], layout="sliced")])
    mf = lambda x, a: x[0].masked_fill(x[1], float(a["value"]))
    case("masked_fill_minus_inf", "masked_fill", mf, [In([3, 4]), In([3, 4], kind="mask", grad=False)],
         {"value": "-inf"})
    case("masked_fill_broadcast_mask", "masked_fill", mf, [In([2, 3, 4]), In([1, 4], kind="mask", grad=False)],
         {"value": 0.5})
    case("masked_fill_causal_f64", "masked_fill", mf,
         [In([4, 4], dtype=f64), In([4, 4], kind="given", dtype=torch.bool, grad=False,
                                    values=[[j > i for j in range(4)] for i in range(4)])],
         {"value": "-inf"})


# --- reductions -------------------------------------------------------------------------------------------------

def reduce_cases():
    case("sum_all", "sum", lambda x, a: x[0].sum(), [In([3, 4])])
    case("sum_all_transposed", "sum", lambda x, a: x[0].sum(), [In([3, 4], layout="transposed")])
    sd = lambda x, a: x[0].sum(a["dim"], keepdim=a["keepdim"])
    case("sum_dim1", "sum_dim", sd, [In([3, 4])], {"dim": 1, "keepdim": False})
    case("sum_dim_m1_keepdim", "sum_dim", sd, [In([2, 3, 4])], {"dim": -1, "keepdim": True})
    case("sum_dim0_sliced", "sum_dim", sd, [In([3, 4], layout="sliced")], {"dim": 0, "keepdim": False})
    both_dtypes("sum_dim1_3d", "sum_dim", sd, lambda d: [In([2, 3, 4], dtype=d)], {"dim": 1, "keepdim": False})
    case("mean_all", "mean", lambda x, a: x[0].mean(), [In([3, 4])])
    case("mean_all_f64", "mean", lambda x, a: x[0].mean(), [In([5, 2], dtype=f64)])
    md = lambda x, a: x[0].mean(a["dim"], keepdim=a["keepdim"])
    case("mean_dim0_keepdim", "mean_dim", md, [In([3, 4])], {"dim": 0, "keepdim": True})
    case("mean_dim_m1_transposed", "mean_dim", md, [In([3, 4], layout="transposed")], {"dim": -1, "keepdim": False})
    vd = lambda x, a: torch.var(x[0], a["dim"], unbiased=a["unbiased"], keepdim=a["keepdim"])
    case("var_dim1_unbiased", "var_dim", vd, [In([3, 5])], {"dim": 1, "unbiased": True, "keepdim": False})
    case("var_dim0_biased_keepdim", "var_dim", vd, [In([4, 3])], {"dim": 0, "unbiased": False, "keepdim": True})
    case("var_dim_m1_3d_sliced", "var_dim", vd, [In([2, 3, 4], layout="sliced")],
         {"dim": -1, "unbiased": True, "keepdim": True})
    both_dtypes("var_dim1", "var_dim", vd, lambda d: [In([3, 6], dtype=d)], {"dim": 1, "unbiased": True, "keepdim": False})
    va = lambda x, a: torch.var(x[0], unbiased=a["unbiased"])
    case("var_all_unbiased", "var", va, [In([3, 4])], {"unbiased": True})
    case("var_all_biased_f64", "var", va, [In([3, 4], dtype=f64)], {"unbiased": False})
    case("max_all", "max", lambda x, a: x[0].max(), [In([3, 4])])
    case("min_all", "min", lambda x, a: x[0].min(), [In([3, 4])])
    # ties: torch (since 1.7) splits the gradient evenly among the tied elements
    case("max_all_ties", "max", lambda x, a: x[0].max(), [In([5], kind="given", values=[1.0, 3.0, -2.0, 3.0, 0.5])])
    case("min_all_ties_f64", "min", lambda x, a: x[0].min(),
         [In([2, 3], kind="given", dtype=f64, values=[[0.5, -1.0, 2.0], [-1.0, -1.0, 4.0]])])
    mxd = lambda x, a: tuple(torch.max(x[0], a["dim"], keepdim=a["keepdim"]))
    mnd = lambda x, a: tuple(torch.min(x[0], a["dim"], keepdim=a["keepdim"]))
    case("max_dim1", "max_dim", mxd, [In([3, 5])], {"dim": 1, "keepdim": False})
    case("max_dim0_keepdim", "max_dim", mxd, [In([4, 3])], {"dim": 0, "keepdim": True})
    case("max_dim_m1_transposed_3d", "max_dim", mxd, [In([2, 3, 4], layout="transposed")], {"dim": -1, "keepdim": False})
    case("min_dim1", "min_dim", mnd, [In([3, 5])], {"dim": 1, "keepdim": False})
    case("min_dim0_keepdim_f64", "min_dim", mnd, [In([4, 3], dtype=f64)], {"dim": 0, "keepdim": True})
    case("argmax_all", "argmax", lambda x, a: torch.argmax(x[0]), [In([3, 4], grad=False)])
    case("argmax_dim1", "argmax_dim", lambda x, a: torch.argmax(x[0], a["dim"], keepdim=a["keepdim"]),
         [In([3, 5], grad=False)], {"dim": 1, "keepdim": False})
    case("argmax_dim0_keepdim", "argmax_dim", lambda x, a: torch.argmax(x[0], a["dim"], keepdim=a["keepdim"]),
         [In([4, 3], grad=False)], {"dim": 0, "keepdim": True})
    st = lambda x, a: x[0].sum_to_size(a["shape"])
    case("sum_to_leading", "sum_to", st, [In([2, 4, 3])], {"shape": [4, 3]})
    case("sum_to_size1_dims", "sum_to", st, [In([2, 3, 4])], {"shape": [3, 1]})


# --- matmul ------------------------------------------------------------------------------------------------------

def matmul_cases():
    mm = lambda x, a: torch.matmul(x[0], x[1])
    shapes = [("dot_1d_1d", [4], [4]), ("vec_mat_1d_2d", [3], [3, 5]), ("mat_vec_2d_1d", [4, 3], [3]),
              ("mat_mat", [3, 4], [4, 5]), ("batched_3d_2d", [2, 3, 4], [4, 5]), ("batched_2d_3d", [3, 4], [2, 4, 2]),
              ("batched_broadcast_4d_3d", [2, 1, 3, 4], [3, 4, 2]), ("vec_batched_1d_3d", [4], [2, 4, 3]),
              ("batched_vec_3d_1d", [2, 3, 4], [4])]
    for name, sa, sb in shapes:
        case(f"matmul_{name}", "matmul", mm, [In(sa), In(sb)])
    case("matmul_transposed_operands", "matmul", mm, [In([3, 4], layout="transposed"), In([4, 5], layout="transposed")])
    case("matmul_sliced_operand", "matmul", mm, [In([3, 4], layout="sliced"), In([4, 2])])
    case("matmul_batched_transposed", "matmul", mm, [In([2, 3, 4]), In([2, 4, 3], layout="transposed")])
    case("matmul_one_without_grad", "matmul", mm, [In([3, 4], grad=False), In([4, 2])])
    for name, sa, sb in (("mat_mat", [3, 4], [4, 5]), ("batched_broadcast", [2, 1, 3, 4], [3, 4, 2]),
                         ("dot", [6], [6])):
        case(f"matmul_{name}_f64", "matmul", mm, [In(sa, dtype=f64), In(sb, dtype=f64)])


# --- neural-network functions ------------------------------------------------------------------------------------

def nn_cases():
    NEG_INF = float("-inf")
    for name, f in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
        fn = lambda x, a, f=f: f(x[0], a["dim"])
        case(f"{name}_last_dim", name, fn, [In([3, 5])], {"dim": -1})
        case(f"{name}_dim0", name, fn, [In([4, 3])], {"dim": 0})
        case(f"{name}_3d_dim1", name, fn, [In([2, 3, 4])], {"dim": 1})
        case(f"{name}_transposed", name, fn, [In([3, 4], layout="transposed")], {"dim": -1})
        case(f"{name}_large_logits", name, fn, [In([2, 3], kind="given", values=[[100.0, 101.0, 99.0],
                                                                                  [-50.0, 0.0, 50.0]])], {"dim": 1})
        # rows with some -inf (masked positions): probability 0 there, no gradient there
        case(f"{name}_masked_minus_inf", name, fn,
             [In([3, 4], kind="given", values=[[0.5, NEG_INF, 1.0, -0.3], [NEG_INF, NEG_INF, 2.0, 0.0],
                                               [0.1, 0.2, 0.3, 0.4]])], {"dim": -1})
        # a row that is all -inf: torch gives NaN for that row (0/0), in value and gradient
        case(f"{name}_all_minus_inf_row", name, fn,
             [In([2, 3], kind="given", values=[[NEG_INF, NEG_INF, NEG_INF], [1.0, 2.0, 3.0]])], {"dim": -1})
        both_dtypes(f"{name}_rows", name, fn, lambda d: [In([4, 6], dtype=d)], {"dim": 1})
    ce = lambda x, a: F.cross_entropy(x[0], x[1])
    case("cross_entropy_batch", "cross_entropy", ce, [In([4, 5]), In([4], kind="randint", high=5, grad=False)])
    case("cross_entropy_single_0d_target", "cross_entropy", ce,
         [In([5]), In([], kind="given", dtype=torch.int64, values=3, grad=False)])
    case("cross_entropy_transposed_logits", "cross_entropy", ce,
         [In([3, 4], layout="transposed"), In([3], kind="randint", high=4, grad=False)])
    case("cross_entropy_large_logits", "cross_entropy", ce,
         [In([2, 3], kind="given", values=[[100.0, -100.0, 50.0], [0.0, 80.0, 81.0]]),
          In([2], kind="given", dtype=torch.int64, values=[1, 2], grad=False)])
    case("cross_entropy_f64", "cross_entropy", ce, [In([6, 4], dtype=f64), In([6], kind="randint", high=4, grad=False)])
    emb = lambda x, a: F.embedding(x[1], x[0])
    case("embedding_repeated_indices", "embedding", emb,
         [In([6, 3]), In([5], kind="given", dtype=torch.int64, values=[1, 3, 1, 0, 3], grad=False)])
    case("embedding_2d_indices", "embedding", emb,
         [In([5, 4]), In([2, 3], kind="given", dtype=torch.int64, values=[[4, 0, 4], [2, 4, 1]], grad=False)])
    case("embedding_0d_index_f64", "embedding", emb,
         [In([4, 2], dtype=f64), In([], kind="given", dtype=torch.int64, values=2, grad=False)])
    ln = lambda x, a: F.layer_norm(x[0], a["normalized_shape"], x[1] if len(x) > 1 else None,
                                   x[2] if len(x) > 2 else None, a["eps"])
    case("layer_norm_weight_bias", "layer_norm", ln, [In([2, 3, 4]), In([4]), In([4])],
         {"normalized_shape": [4], "eps": 1e-5})
    case("layer_norm_no_affine", "layer_norm", ln, [In([3, 5])], {"normalized_shape": [5], "eps": 1e-5})
    case("layer_norm_two_dims", "layer_norm", ln, [In([2, 3, 4]), In([3, 4]), In([3, 4])],
         {"normalized_shape": [3, 4], "eps": 1e-5})
    case("layer_norm_transposed_input", "layer_norm", ln, [In([4, 3], layout="transposed"), In([3]), In([3])],
         {"normalized_shape": [3], "eps": 1e-5})
    case("layer_norm_big_eps", "layer_norm", ln, [In([2, 6]), In([6]), In([6])], {"normalized_shape": [6], "eps": 0.1})
    both_dtypes("layer_norm_affine", "layer_norm", ln, lambda d: [In([4, 8], dtype=d), In([8], dtype=d), In([8], dtype=d)],
                {"normalized_shape": [8], "eps": 1e-5})
    # RMSNorm, which torch 1.13 does not have: Hugging Face's LlamaRMSNorm written out (the mean of
    # x^2, rsqrt, times the weight) in x's dtype; eps None is the dtype's machine epsilon, as F.rms_norm
    def rms(x, a):
        eps = a["eps"] if a["eps"] is not None else torch.finfo(x[0].dtype).eps
        dims = list(range(-len(a["normalized_shape"]), 0))
        y = x[0] * torch.rsqrt(x[0].pow(2).mean(dims, keepdim=True) + eps)
        return y * x[1] if len(x) > 1 else y
    case("rms_norm_weight", "rms_norm", rms, [In([2, 3, 8]), In([8])], {"normalized_shape": [8], "eps": 1e-6})
    case("rms_norm_no_weight", "rms_norm", rms, [In([3, 5])], {"normalized_shape": [5], "eps": 1e-5})
    case("rms_norm_two_dims", "rms_norm", rms, [In([2, 3, 4]), In([3, 4])], {"normalized_shape": [3, 4], "eps": 1e-6})
    case("rms_norm_transposed_input", "rms_norm", rms, [In([4, 6], layout="transposed"), In([6])],
         {"normalized_shape": [6], "eps": 1e-6})
    case("rms_norm_default_eps", "rms_norm", rms, [In([3, 4]), In([4])], {"normalized_shape": [4], "eps": None})
    case("rms_norm_big_eps", "rms_norm", rms, [In([2, 6]), In([6])], {"normalized_shape": [6], "eps": 0.5})
    both_dtypes("rms_norm_head_dim", "rms_norm", rms, lambda d: [In([2, 4, 3, 16], dtype=d), In([16], dtype=d)],
                {"normalized_shape": [16], "eps": 1e-6})
    # RoPE, rotate-half, as Hugging Face's apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, with
    # cos and sin (T, hs) as constants (random here, so that every index of both halves shows)
    def rope(x, a):
        half = x[0].shape[-1] // 2
        rotated = torch.cat((-x[0][..., half:], x[0][..., :half]), dim=-1)
        return x[0] * x[1] + rotated * x[2]
    table = lambda shape, d=f32: In(shape, dtype=d, grad=False)
    case("rope_heads", "apply_rotary_pos_emb", rope, [In([2, 3, 5, 8]), table([5, 8]), table([5, 8])])
    case("rope_one_row", "apply_rotary_pos_emb", rope, [In([1, 2]), table([1, 2]), table([1, 2])])
    case("rope_transposed_input", "apply_rotary_pos_emb", rope,
         [In([6, 4], layout="transposed"), table([6, 4]), table([6, 4])])
    both_dtypes("rope_head_dim", "apply_rotary_pos_emb", rope,
                lambda d: [In([2, 4, 3, 16], dtype=d), table([3, 16], d), table([3, 16], d)])
    # SwiGLU's product, the gate of Llama's and Qwen's feed-forward: F.silu(gate) * up
    both_dtypes("swiglu", "swiglu", lambda x, a: F.silu(x[0]) * x[1],
                lambda d: [In([3, 7], dtype=d), In([3, 7], dtype=d)])
    case("swiglu_transposed_gate", "swiglu", lambda x, a: F.silu(x[0]) * x[1],
         [In([5, 4], layout="transposed"), In([5, 4])])


# --- ops added for sampling and losses: scans, sorting, indexing, elementwise extremes ----------

def added_cases():
    i64 = torch.int64
    u = lambda f: (lambda x, a: f(x[0]))
    case("sin", "sin", u(torch.sin), [In([3, 4])])
    case("cos_transposed", "cos", u(torch.cos), [In([3, 4], layout="transposed")])
    both_dtypes("sin_cos_chain", "sin", u(torch.sin), lambda d: [In([5], dtype=d)])
    nan, inf = float("nan"), float("inf")
    special = [[1.0, nan, inf], [-inf, 0.0, -2.5]]
    case("isnan", "isnan", u(torch.isnan), [In([2, 3], kind="given", values=special, grad=False)])
    case("isfinite", "isfinite", u(torch.isfinite), [In([2, 3], kind="given", values=special, grad=False)])
    case("isfinite_int64", "isfinite", u(torch.isfinite),
         [In([3], kind="given", dtype=i64, values=[1, -5, 0], grad=False)])
    lg = lambda f: (lambda x, a: f(x[0], x[1]))
    case("logical_and_bool", "logical_and", lg(torch.logical_and), [In([3, 4], kind="mask", grad=False),
                                                                   In([4], kind="mask", grad=False)])
    case("logical_or_float_int", "logical_or", lg(torch.logical_or),
         [In([2, 3], kind="rounded", grad=False), In([2, 1], kind="given", dtype=i64, values=[[0], [3]], grad=False)])
    case("maximum_broadcast", "maximum", lg(torch.maximum), [In([3, 4]), In([4])])
    case("minimum_broadcast", "minimum", lg(torch.minimum), [In([2, 1, 3]), In([4, 1])])
    # ties share the gradient; NaN wins and both sides get it
    case("maximum_ties_nan", "maximum", lg(torch.maximum),
         [In([4], kind="given", values=[1.0, 2.0, nan, 0.5]), In([4], kind="given", values=[1.0, 3.0, 1.0, nan])])
    case("minimum_ties_f64", "minimum", lg(torch.minimum),
         [In([2, 3], kind="rounded", dtype=f64), In([2, 3], kind="rounded", dtype=f64)])
    case("argmin_all", "argmin", lambda x, a: torch.argmin(x[0]), [In([3, 4], grad=False)])
    case("argmin_dim1", "argmin_dim", lambda x, a: torch.argmin(x[0], a["dim"], keepdim=a["keepdim"]),
         [In([3, 5], grad=False)], {"dim": 1, "keepdim": False})
    cs = lambda x, a: torch.cumsum(x[0], a["dim"])
    case("cumsum_dim1", "cumsum", cs, [In([3, 5])], {"dim": 1})
    case("cumsum_dim0_transposed", "cumsum", cs, [In([4, 3], layout="transposed")], {"dim": 0})
    case("cumsum_long_row", "cumsum", cs, [In([2, 300])], {"dim": -1})
    both_dtypes("cumsum_3d", "cumsum", cs, lambda d: [In([2, 3, 4], dtype=d)], {"dim": 1})
    case("cumsum_int64", "cumsum", cs, [In([5], kind="randint", high=9, grad=False)], {"dim": 0})
    case("cumsum_bool", "cumsum", cs, [In([6], kind="mask", grad=False)], {"dim": 0})
    so = lambda x, a: tuple(torch.sort(x[0], dim=a["dim"], descending=a["descending"], stable=True))
    case("sort_last_dim", "sort", so, [In([3, 6])], {"dim": -1, "descending": False})
    case("sort_dim0_descending", "sort", so, [In([5, 3])], {"dim": 0, "descending": True})
    case("sort_ties_stable", "sort", so, [In([2, 8], kind="rounded")], {"dim": 1, "descending": False})
    case("sort_ties_descending_f64", "sort", so, [In([2, 8], kind="rounded", dtype=f64)], {"dim": 1, "descending": True})
    case("sort_nan", "sort", so, [In([6], kind="given", values=[0.5, nan, -1.0, nan, 2.0, 0.0])],
         {"dim": 0, "descending": False})
    case("sort_nan_descending", "sort", so, [In([6], kind="given", values=[0.5, nan, -1.0, inf, 2.0, -inf])],
         {"dim": 0, "descending": True})
    case("sort_transposed_3d", "sort", so, [In([2, 4, 3], layout="transposed")], {"dim": 1, "descending": False})
    case("argsort", "argsort", lambda x, a: torch.argsort(x[0], a["dim"], descending=a["descending"]),
         [In([4, 5], grad=False)], {"dim": 1, "descending": True})
    tk = lambda x, a: tuple(torch.topk(x[0], a["k"], a["dim"], largest=a["largest"]))
    case("topk_last_dim", "topk", tk, [In([3, 10])], {"k": 3, "dim": -1, "largest": True})
    case("topk_smallest_dim0", "topk", tk, [In([6, 4])], {"k": 2, "dim": 0, "largest": False})
    case("topk_all_f64", "topk", tk, [In([2, 5], dtype=f64)], {"k": 5, "dim": 1, "largest": True})
    case("topk_nan_largest", "topk", tk, [In([5], kind="given", values=[0.5, nan, 3.0, -1.0, 2.0])],
         {"k": 2, "dim": 0, "largest": True})
    case("topk_vocab_row", "topk", tk, [In([2, 65])], {"k": 5, "dim": -1, "largest": True})
    ga = lambda x, a: torch.gather(x[0], a["dim"], x[1])
    case("gather_dim1", "gather", ga, [In([3, 5]), In([3, 4], kind="randint", high=5, grad=False)], {"dim": 1})
    case("gather_dim0_repeats", "gather", ga,
         [In([4, 3]), In([2, 3], kind="given", dtype=i64, values=[[0, 3, 3], [3, 3, 1]], grad=False)], {"dim": 0})
    case("gather_smaller_index_f64", "gather", ga,
         [In([3, 4, 2], dtype=f64), In([2, 2, 1], kind="randint", high=4, grad=False)], {"dim": 1})
    sa = lambda x, a: torch.scatter_add(x[0], a["dim"], x[1], x[2])
    case("scatter_add_dim1", "scatter_add", sa,
         [In([3, 5]), In([3, 4], kind="randint", high=5, grad=False), In([3, 4])], {"dim": 1})
    isel = lambda x, a: torch.index_select(x[0], a["dim"], x[1])
    case("index_select_dim0", "index_select", isel,
         [In([5, 3]), In([4], kind="given", dtype=i64, values=[4, 0, 4, 2], grad=False)], {"dim": 0})
    case("index_select_dim1_transposed", "index_select", isel,
         [In([3, 4], layout="transposed"), In([2], kind="given", dtype=i64, values=[3, 1], grad=False)], {"dim": 1})
    # integer inputs: exp, log, ... promote to float32; abs, relu, clamp, pow by an integer stay int64
    ints = lambda: [In([6], kind="given", dtype=i64, values=[-3, -1, 0, 1, 2, 7], grad=False)]
    positive_ints = lambda: [In([4], kind="given", dtype=i64, values=[1, 2, 5, 9], grad=False)]
    for name, f in (("exp", torch.exp), ("sin", torch.sin), ("cos", torch.cos), ("tanh", torch.tanh),
                    ("sigmoid", torch.sigmoid), ("abs", torch.abs), ("relu", torch.relu)):
        case(f"{name}_int64", name, u(f), ints())
    for name, f in (("log", torch.log), ("sqrt", torch.sqrt)):
        case(f"{name}_int64", name, u(f), positive_ints())
    case("clamp_int64", "clamp", lambda x, a: torch.clamp(x[0], a["min"], a["max"]), ints(), {"min": -1, "max": 2})
    case("pow_int64_int", "pow_scalar", lambda x, a: x[0] ** a["exponent"], ints(), {"exponent": 3})
    case("pow_int64_float", "pow_scalar", lambda x, a: x[0] ** a["exponent"], positive_ints(), {"exponent": 0.5})
    case("matmul_int64", "matmul", lambda x, a: x[0] @ x[1], [In([2, 3], kind="randint", high=50, grad=False),
                                                               In([3, 4], kind="randint", high=50, grad=False)])
    # cross_entropy with its options
    ceo = lambda x, a: F.cross_entropy(x[0], x[1], reduction=a["reduction"], ignore_index=a["ignore_index"],
                                       label_smoothing=a["label_smoothing"])
    opts = lambda r, ii=-100, ls=0.0: {"reduction": r, "ignore_index": ii, "label_smoothing": ls}
    case("ce_sum", "cross_entropy_opts", ceo, [In([4, 5]), In([4], kind="randint", high=5, grad=False)], opts("sum"))
    case("ce_none", "cross_entropy_opts", ceo, [In([4, 5]), In([4], kind="randint", high=5, grad=False)], opts("none"))
    case("ce_ignore_index", "cross_entropy_opts", ceo,
         [In([5, 3]), In([5], kind="given", dtype=i64, values=[2, -1, 0, -1, 1], grad=False)], opts("mean", -1))
    case("ce_ignore_none", "cross_entropy_opts", ceo,
         [In([4, 3]), In([4], kind="given", dtype=i64, values=[2, 7, 0, 7], grad=False)], opts("none", 7))
    case("ce_all_ignored", "cross_entropy_opts", ceo,
         [In([2, 3]), In([2], kind="given", dtype=i64, values=[-100, -100], grad=False)], opts("mean"))
    case("ce_label_smoothing", "cross_entropy_opts", ceo, [In([6, 4]), In([6], kind="randint", high=4, grad=False)],
         opts("mean", -100, 0.1))
    case("ce_smoothing_ignore_sum_f64", "cross_entropy_opts", ceo,
         [In([5, 4], dtype=f64), In([5], kind="given", dtype=i64, values=[3, -100, 1, 0, -100], grad=False)],
         opts("sum", -100, 0.25))
    case("ce_bct_logits", "cross_entropy_opts", ceo, [In([2, 5, 3]), In([2, 3], kind="randint", high=5, grad=False)],
         opts("mean"))
    case("ce_bct_none_smoothing", "cross_entropy_opts", ceo,
         [In([2, 4, 3, 2]), In([2, 3, 2], kind="randint", high=4, grad=False)], opts("none", -100, 0.2))
    case("ce_single_row_none", "cross_entropy_opts", ceo,
         [In([5]), In([], kind="given", dtype=i64, values=3, grad=False)], opts("none"))
    # the pieces, each times its position + 1, joined again: each piece's gradient is its own
    weighted = lambda parts, dim: torch.cat([p * (i + 1) for i, p in enumerate(parts)], dim)
    case("split_size_uneven", "split", lambda x, a: weighted(torch.split(x[0], a["size"], a["dim"]), a["dim"]),
         [In([7, 3])], {"size": 3, "dim": 0})
    case("split_sizes", "split_sizes", lambda x, a: weighted(torch.split(x[0], a["sizes"], a["dim"]), a["dim"]),
         [In([2, 6])], {"sizes": [1, 3, 2], "dim": 1})
    case("chunk_fewer", "chunk", lambda x, a: weighted(torch.chunk(x[0], a["chunks"], a["dim"]), a["dim"]),
         [In([5, 2])], {"chunks": 4, "dim": 0})


def main():
    creation_cases()
    view_cases()
    arithmetic_cases()
    unary_cases()
    compare_cases()
    reduce_cases()
    matmul_cases()
    nn_cases()
    added_cases()
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "ops_torch.json")
    doc = {"generator": "tests/reference/make_op_reference.py", "torch_version": torch.__version__, "cases": CASES}
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print(f"wrote {len(CASES)} cases ({os.path.getsize(path)} bytes) to {path}")


if __name__ == "__main__":
    main()
