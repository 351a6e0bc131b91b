# test_run_device.py — examples/pytorch's training loop (tapegrad_twin/training.py) keeps every
# tensor it hands to the model, the loss and the collectives on the run's device (tapegrad_run.py
# train --device cuda).
#
# There is no GPU here, so the run goes to PyTorch's lazy tensor device (its TorchScript backend):
# a device other than the CPU that computes on the CPU. An op that meets a CPU tensor among lazy
# ones stops the process there ("Input tensor is not a lazy tensor: CPULongType"), where CUDA
# raises "Expected all tensors to be on the same device". So a loop that makes a tensor on the CPU
# and hands it to the model fails here as it fails on a GPU.
#
#   1. 2 steps, an evaluation and a save of a fresh run on the lazy device: the losses are the CPU's;
#   2. that run's CPU twin saved at step 2 resumes on the lazy device (the weights and AdamW's
#      moments moved there) to step 4 and saves: losses and weights are the CPU's resume;
#   3. the loop's functions make no tensor but through Run.on_device, and GPTModel.forward makes
#      none without device= (the data-parallel tensors, which a one-process run never makes, too).
#
# Dropout is off: the lazy device draws its masks from a generator of its own, as a GPU does.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/test_run_device.py
import ast
import contextlib
import faulthandler
import importlib.util
import io
import math
import os
import subprocess
import sys
import tempfile
import warnings

TEXT = "The old fox sat by the river and watched the boats go by, one by one, until the sun went down.\n" * 30
TINY = ["--batch", "2", "--grad-accum", "2", "--context", "8", "--emb-dim", "16", "--heads", "2", "--layers", "1",
        "--warmup", "1", "--eval-every", "2", "--eval-batches", "2", "--threads", "1"]
# torch's functions that make a tensor: on the CPU unless given device=
FACTORIES = {"tensor", "as_tensor", "arange", "zeros", "ones", "full", "empty", "rand", "randn", "randint",
             "randperm", "linspace", "eye"}


def fail(what):
    sys.exit(f"test_run_device: FAILED: {what}")


def losses(rows, after=0):
    """(step, train loss, val loss) of loss.csv's rows after step `after`."""
    return [(int(r[0]), float(r[1]), float(r[2]) if r[2] else None) for r in rows if int(r[0]) > after]


def quietly(loop, *args):
    """training.train_loop without its lines on stdout."""
    with contextlib.redirect_stdout(io.StringIO()):
        return loop(*args)


def same_loss(a, b, rtol):
    """Two losses within rtol, or both missing (a step without an evaluation)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rtol)


def check_close(what, got, want, rtol=1e-5):
    """The lazy device's loss rows against the CPU's."""
    if [row[0] for row in got] != [row[0] for row in want]:
        fail(f"{what}: steps {[r[0] for r in got]} on the lazy device, {[r[0] for r in want]} on the CPU")
    for g, w in zip(got, want):
        if not all(same_loss(a, b, rtol) for a, b in zip(g[1:], w[1:])):
            fail(f"{what}: step {g[0]}: {g[1:]} on the lazy device, {w[1:]} on the CPU")
    print(f"ok: {what}: {len(got)} steps' losses equal the CPU's")


def fresh_run(device, folder):
    from tapegrad_twin import training
    o = training.options(TINY + ["--steps", "2", "--out", folder])
    run = training.Run(o, TEXT, device=device)
    return quietly(training.train_loop, run, o, folder, training.fresh_config(o, run))


def resumed_run(device, source, folder):
    from tapegrad_twin import run_folder, training
    o = training.options(TINY + ["--steps", "4", "--resume", source, "--out", folder])
    step, model_state, optimizer_tensors, metadata, _ = run_folder.load_checkpoint(source)
    run = training.Run(o, TEXT, device=device)
    run.load_state(step, model_state, optimizer_tensors, metadata, source)
    for p in run.model.parameters():
        state = run.optimizer.state[p]
        if state["exp_avg"].device.type != device or state["exp_avg_sq"].device.type != device:
            fail(f"the resumed AdamW moments are on {state['exp_avg'].device}, the run on {device}")
    return quietly(training.train_loop, run, o, folder, run_folder.read_config(source),
                   run_folder.read_loss_rows(os.path.join(source, "loss.csv"), step))


def check_the_loop_on_the_lazy_device(work):
    import torch
    from tapegrad_twin import run_folder
    cpu_rows = fresh_run("cpu", os.path.join(work, "cpu2"))
    lazy_rows = fresh_run("lazy", os.path.join(work, "lazy2"))
    check_close("a fresh run, 2 steps and an evaluation", losses(lazy_rows), losses(cpu_rows))
    cpu_rows = resumed_run("cpu", os.path.join(work, "cpu2"), os.path.join(work, "cpu4"))
    lazy_rows = resumed_run("lazy", os.path.join(work, "cpu2"), os.path.join(work, "lazy4"))
    check_close("the CPU's run resumed, steps 3 and 4", losses(lazy_rows, after=2), losses(cpu_rows, after=2))
    for name in ("model.safetensors", "optimizer.safetensors"):
        saved_cpu, _ = run_folder.read_safetensors(os.path.join(work, "cpu4", name))
        saved_lazy, _ = run_folder.read_safetensors(os.path.join(work, "lazy4", name))
        if saved_cpu.keys() != saved_lazy.keys():
            fail(f"{name}: other tensors saved from the lazy device than from the CPU")
        for key, t in saved_cpu.items():
            if not torch.allclose(saved_lazy[key], t, rtol=1e-4, atol=1e-6):
                fail(f"{name}: {key} saved from the lazy device differs from the CPU's")
    print("ok: the resumed run's saved weights and AdamW state equal the CPU's")


# ---- 3. where the loop makes its tensors ------------------------------------------------------------

def factory_calls(function):
    """The calls torch.<factory>(...) in a function's body, as (line, name, keyword names)."""
    for node in ast.walk(function):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FACTORIES
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"):
            yield node.lineno, node.func.attr, {k.arg for k in node.keywords}


def functions(path, names):
    """The functions and methods of a file by name ("Run.train_step", "train_loop")."""
    tree = ast.parse(open(path).read(), path)
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{f.name}": f for f in node.body if isinstance(f, ast.FunctionDef)})
    missing = [n for n in names if n not in found]
    if missing:
        fail(f"{path}: no {', '.join(missing)} (renamed? update this test)")
    return [(n, found[n]) for n in names]


def source_of(module):
    """The file of a tapegrad_twin module, found without importing it (nor torch)."""
    return importlib.util.find_spec(f"tapegrad_twin.{module}").origin


def check_where_tensors_are_made():
    bad = []
    # the loop: every tensor through run.on_device (get_batch draws on the CPU, and the loop moves its batches)
    for name, f in functions(source_of("training"), ["Run.train_step", "Run.evaluate", "train_loop"]):
        bad += [f"training.py:{line}: {name} makes a tensor with torch.{call}; make it with Run.on_device"
                for line, call, _ in factory_calls(f)]
    # the model: its own tensors on its input's device
    for name, f in functions(source_of("gpt_model"), ["GPTModel.forward"]):
        bad += [f"gpt_model.py:{line}: {name} calls torch.{call} without device= (give it the input's device)"
                for line, call, keywords in factory_calls(f) if "device" not in keywords]
    for b in bad:
        print(f"test_run_device: {b}", file=sys.stderr)
    if not bad:
        print("ok: the loop makes its tensors through Run.on_device, the model on its input's device")
    return [f"{len(bad)} tensor(s) made on the CPU whatever the run's device"] if bad else []


def lazy_device_child():
    """The lazy-device checks, in a process of their own: a tensor on the wrong device aborts it."""
    faulthandler.enable()  # the Python lines where it aborts
    try:
        import torch._lazy.ts_backend
    except ImportError as e:
        fail(f"this PyTorch has no lazy tensor device ({e}); Debian's python3-torch has")
    torch._lazy.ts_backend.init()
    # loading a CPU state_dict into lazy parameters warns of pinned memory, harmlessly
    warnings.filterwarnings("ignore", message="Pinned memory used in lazy")
    with tempfile.TemporaryDirectory() as work:
        check_the_loop_on_the_lazy_device(work)


def main():
    if sys.argv[1:] == ["--lazy-device"]:
        lazy_device_child()
        return
    failures = check_where_tensors_are_made()
    rc = subprocess.run([sys.executable, os.path.abspath(__file__), "--lazy-device"]).returncode
    if rc < 0:
        failures.append("the training loop stopped on the lazy device (a CPU tensor met the run's: the Python "
                        "lines above)")
    elif rc:
        failures.append("the training loop on the lazy device (above)")
    if failures:
        fail("; ".join(failures))
    print("test_run_device: passed")


if __name__ == "__main__":
    main()
