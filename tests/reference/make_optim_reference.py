# make_optim_reference.py — torch 1.13's optimizers (single-tensor, for-loop implementation),
# clip_grad_norm_ and LambdaLR schedules, as test data for tests/optim/test_optim.cpp.
#
#     /usr/bin/python3 tests/reference/make_optim_reference.py
#
# Writes tests/reference/optim_torch.json: the starting parameters and the gradients of every
# step (shared by all optimizer cases), then for each case its settings and the parameters after
# each step and the optimizer's final state by name. Floating values are the 16 hex digits of
# each value's float64 bit pattern (float32 widened exactly).
import json
import math
import os
import struct

import torch

STEPS = 10
SHAPES = {"w": [3, 4], "b": [4], "s": [], "m": [5, 7], "frozen": [2]}  # "frozen" never gets a gradient
NO_GRAD_AT = {3: "b"}  # at step 3, "b" has no gradient (it is skipped)


def enc(t):
    return {"shape": list(t.shape), "values": [struct.pack(">d", float(v)).hex() for v in t.detach().double().flatten().tolist()]}


def hexd(x):
    return struct.pack(">d", float(x)).hex()


torch.manual_seed(2024)
INITIAL = {name: torch.randn(shape) for name, shape in SHAPES.items()}
GRADS = []
for step in range(STEPS):
    GRADS.append({name: (None if NO_GRAD_AT.get(step) == name or name == "frozen" else torch.randn(shape))
                  for name, shape in SHAPES.items()})


def make_optimizer(spec, params):
    kind, options = spec["optimizer"], dict(spec["options"])
    if "betas" in options:
        options["betas"] = tuple(options["betas"])
    if spec.get("groups"):
        groups = [dict({k: v for k, v in g.items() if k != "params"}, params=[params[n] for n in g["params"]])
                  for g in spec["groups"]]
    else:
        groups = [params[n] for n in SHAPES]
    cls = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}[kind]
    return cls(groups, foreach=False, **options)


def schedule_factor(spec):
    if spec is None:
        return None
    if spec["kind"] == "constant":
        return lambda step: 1.0
    if spec["kind"] == "warmup_cosine":
        warmup, total, min_factor = spec["warmup_steps"], spec["total_steps"], spec["min_factor"]

        def factor(step):
            if step < warmup:
                return step / warmup
            if step >= total:
                return min_factor
            progress = (step - warmup) / (total - warmup)
            return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * progress))
        return factor
    if spec["kind"] == "exponential":  # the tests' own lambda
        return lambda step: spec["gamma"] ** step
    raise ValueError(spec["kind"])


OPTIM_CASES = []


def optim_case(case_id, optimizer, options, groups=None, dtype="float32", schedule=None):
    spec = {"id": case_id, "optimizer": optimizer, "options": options, "groups": groups, "dtype": dtype,
            "schedule": schedule}
    torch_dtype = {"float32": torch.float32, "float64": torch.float64}[dtype]
    params = {n: t.clone().to(torch_dtype).requires_grad_(True) for n, t in INITIAL.items()}
    opt = make_optimizer(spec, params)
    factor = schedule_factor(schedule)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor) if factor else None
    after, lrs = [], []
    for step in range(STEPS):
        for n, p in params.items():
            g = GRADS[step][n]
            p.grad = None if g is None else g.clone().to(torch_dtype)
        opt.step()
        if sched:
            sched.step()
            lrs.append([hexd(x) for x in sched.get_last_lr()])
        after.append({n: enc(p) for n, p in params.items()})
    index = {id(p): n for n, p in params.items()}
    state = []
    for p in (q for g in opt.param_groups for q in g["params"]):
        for key in ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer"):
            value = opt.state[p].get(key) if p in opt.state else None
            if value is not None:
                state.append([index[id(p)] + "." + key, enc(value)])
    spec.update({"after": after, "lrs": lrs, "state": state})
    OPTIM_CASES.append(spec)


CLIP_CASES = []


def clip_case(case_id, max_norm, norm_type, special=None, long_grads=0):
    torch.manual_seed(77)
    shapes = dict(SHAPES, **{f"long{i}": [97 + 61 * i] for i in range(long_grads)})
    grads = {n: torch.randn(shape) * 2 for n, shape in shapes.items() if n != "frozen"}
    if special == "inf":
        grads["w"][1, 2] = float("inf")
    if special == "nan":
        grads["b"][0] = float("nan")
    params = {n: torch.zeros(shapes[n], requires_grad=True) for n in shapes}
    for n, g in grads.items():
        params[n].grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm, norm_type)
    CLIP_CASES.append({"id": case_id, "max_norm": max_norm, "norm_type": hexd(norm_type),
                       "grads": {n: enc(g) for n, g in grads.items()}, "total_norm": hexd(total.item()),
                       "clipped": {n: enc(params[n].grad) for n in grads}})


# Many gradients of many lengths, made from a seed (tapegrad's randn draws the same numbers):
# only the total norm is stored. It shows whether the norms are summed as PyTorch sums them.
NORM_CASES = []


def norm_case(case_id, seed, lengths, norm_type):
    torch.manual_seed(seed)
    grads = [torch.randn(n) * 2 for n in lengths]
    params = [torch.zeros(n, requires_grad=True) for n in lengths]
    for p, g in zip(params, grads):
        p.grad = g
    total = torch.nn.utils.clip_grad_norm_(params, 1.0, norm_type)
    NORM_CASES.append({"id": case_id, "seed": seed, "lengths": lengths, "norm_type": hexd(norm_type),
                       "total_norm": hexd(total.item())})


SCHEDULE_CASES = []


def schedule_case(case_id, schedule, base_lrs, steps):
    factor = schedule_factor(schedule)
    params = [torch.zeros(1, requires_grad=True) for _ in base_lrs]
    opt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, base_lrs)], lr=base_lrs[0])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    lrs = [[hexd(x) for x in sched.get_last_lr()]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append([hexd(x) for x in sched.get_last_lr()])
    SCHEDULE_CASES.append({"id": case_id, "schedule": schedule, "base_lrs": [hexd(x) for x in base_lrs], "lrs": lrs})


if __name__ == "__main__":
    optim_case("sgd_plain", "SGD", {"lr": 0.1})
    optim_case("sgd_momentum", "SGD", {"lr": 0.05, "momentum": 0.9})
    optim_case("sgd_momentum_dampening", "SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3})
    optim_case("sgd_nesterov", "SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True})
    optim_case("sgd_weight_decay", "SGD", {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.01})
    optim_case("sgd_maximize", "SGD", {"lr": 0.03, "momentum": 0.9, "weight_decay": 0.1, "maximize": True})
    optim_case("sgd_two_groups", "SGD", {"lr": 0.1, "momentum": 0.9},
               groups=[{"params": ["w", "m"], "weight_decay": 0.05}, {"params": ["b", "s", "frozen"], "lr": 0.01}])
    optim_case("adam_default", "Adam", {})
    optim_case("adam_weight_decay", "Adam", {"lr": 0.01, "weight_decay": 0.1})
    optim_case("adam_amsgrad", "Adam", {"lr": 0.01, "betas": [0.8, 0.9], "amsgrad": True})
    optim_case("adam_maximize", "Adam", {"lr": 0.02, "eps": 1e-6, "weight_decay": 0.05, "maximize": True})
    optim_case("adamw_default", "AdamW", {})
    optim_case("adamw_custom", "AdamW", {"lr": 0.01, "betas": [0.85, 0.95], "eps": 1e-6, "weight_decay": 0.1})
    optim_case("adamw_amsgrad", "AdamW", {"lr": 0.005, "weight_decay": 0.2, "amsgrad": True})
    optim_case("adamw_two_groups", "AdamW", {"lr": 0.01, "weight_decay": 0.1},
               groups=[{"params": ["w", "m"]}, {"params": ["b", "s", "frozen"], "lr": 0.02, "weight_decay": 0.0}])
    optim_case("adamw_warmup_cosine", "AdamW", {"lr": 0.01, "weight_decay": 0.1},
               schedule={"kind": "warmup_cosine", "warmup_steps": 3, "total_steps": 8, "min_factor": 0.1})
    optim_case("adam_float64", "Adam", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}, dtype="float64")
    optim_case("sgd_float64", "SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
               dtype="float64")
    optim_case("adamw_float64", "AdamW", {"lr": 0.01}, dtype="float64")
    for max_norm in (0.5, 1.0, 100.0):
        for norm_type in (2.0, 1.0, float("inf"), 3.0):
            clip_case(f"clip_{max_norm}_{norm_type}", max_norm, norm_type)
    clip_case("clip_0.5_-inf", 0.5, float("-inf"))
    for norm_type in (2.0, 1.0, 3.0):  # longer gradients: the 2-norm's eight running sums matter
        clip_case(f"clip_long_{norm_type}", 1.0, norm_type, long_grads=6)
    clip_case("clip_inf_grad", 1.0, 2.0, special="inf")
    clip_case("clip_nan_grad", 1.0, 2.0, special="nan")
    clip_case("clip_inf_grad_max_norm", 1.0, float("inf"), special="inf")
    for seed in (1, 2, 3):
        for norm_type in (2.0, 1.0, 3.0, float("inf")):
            norm_case(f"norm_{seed}_{norm_type}", seed, [1 + (37 * i + seed) % 300 for i in range(60)], norm_type)
    schedule_case("constant", {"kind": "constant"}, [0.1, 0.02], 5)
    schedule_case("warmup_cosine", {"kind": "warmup_cosine", "warmup_steps": 4, "total_steps": 12, "min_factor": 0.1},
                  [6e-4, 1e-3], 15)
    schedule_case("warmup_cosine_to_zero", {"kind": "warmup_cosine", "warmup_steps": 0, "total_steps": 7,
                                            "min_factor": 0.0}, [0.5], 9)
    schedule_case("lambda_exponential", {"kind": "exponential", "gamma": 0.95}, [0.1, 0.3], 12)

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "optim_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_optim_reference.py", "torch_version": torch.__version__,
                   "steps": STEPS, "initial": {n: enc(t) for n, t in INITIAL.items()},
                   "grads": [{n: (None if g is None else enc(g)) for n, g in step.items()} for step in GRADS],
                   "optimizers": OPTIM_CASES, "clip": CLIP_CASES, "norms": NORM_CASES, "schedules": SCHEDULE_CASES}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(OPTIM_CASES)} optimizer, {len(CLIP_CASES)} clip and {len(SCHEDULE_CASES)} schedule cases to {path}")
