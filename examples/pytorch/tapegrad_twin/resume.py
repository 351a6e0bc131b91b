# resume.py — a train_gpt run folder (run_folder.py) taken up in PyTorch: load_model builds the
# run's model (training.py's make_model, the saved weights loaded strict=True) to write text with,
# and continue_run trains the run on from where it stopped, on one process or several
# (DistributedDataParallel), writing a run folder that tapegrad's examples/generate and
# train_gpt --resume read. examples/pytorch/tapegrad_run.py is their command line (sample, train),
# and examples/pytorch/train_gpt.py --resume calls continue_run.
#
#     model, config, tokenizer = load_model("gpt_run")
#     continue_run("gpt_run", "corpus.txt", 2000, "torch_run", total=True)   # to step 2000 in all
#     continue_run("gpt_run", "corpus.txt", 500, "torch_run", nproc=2)       # 500 more, on 2 processes
#
# continue_run goes on exactly where the run stopped: the weights, AdamW's moments, the step (so
# the learning-rate schedule goes on), and both generators (so the next batches are the ones
# train_gpt --resume would draw). Under torchrun (WORLD_SIZE set) the processes are torchrun's;
# otherwise nproc processes start on this machine (gloo on the CPU, NCCL with device "cuda"). Each
# takes batch / K sequences of every batch one process would draw, so K processes train the
# one-process run with the same --batch (dropout aside: each process draws its own masks).
import gc
import json
import os
import socket

import torch
import torch.distributed as dist

from . import run_folder
from .run_folder import RunError
from .training import Run, check_options, continued_schedule, make_model, options, tokenizer_from_json, train_loop


def load_tokenizer(folder):
    path = os.path.join(folder, "tokenizer.json")
    try:
        return tokenizer_from_json(json.load(open(path)), path)
    except (OSError, ValueError, KeyError) as e:
        raise RunError(f"{path}: {e}" if not str(e).startswith(path) else str(e))


def load_model(folder):
    """The model (eval mode), config and tokenizer of a run folder, for writing text."""
    run_folder.check_run_folder(folder, ("model.safetensors", "config.json", "tokenizer.json"))
    config = run_folder.read_config(folder)
    tokenizer = load_tokenizer(folder)
    model = make_model(options(run_folder.flags_of(run_folder.run_section(config)["train"])), 0,
                       run_folder.model_config(config))
    state = run_folder.read_model_state(folder, config)  # the model's names (a run from GPT-2: mapped)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise RunError(f"{folder}/model.safetensors: does not fit config.json's model: {e}")
    return model.eval(), config, tokenizer


# ---- train: continue a run, on one process or several ----------------------------------------------

def plan(folder, data, steps, out, threads, nproc, device, total, precision=""):
    """Everything checked before any work or process starts: the options (the run's saved ones, its
    "precision" among them unless precision is given)."""
    run_folder.check_run_folder(folder)
    config = run_folder.read_config(folder)
    step = run_folder.load_checkpoint(folder).step
    saved = run_folder.run_section(config)["train"]
    data = data or saved["data"]
    if not data:
        raise RunError(f"{folder} trained on train_gpt's built-in corpus: write it with ./build/examples/train_gpt "
                       "--write-corpus corpus.txt and give --data corpus.txt")
    if not os.path.isfile(data):
        raise RunError(f"--data {data}: no such file")
    # --steps N more steps, no time budget (a saved --max-minutes is the tapegrad run's)
    o = options(run_folder.flags_of(saved, skip=("data", "steps", "out", "resume", "threads", "max-minutes")) +
                ["--data", data, "--out", out, "--resume", folder, "--threads", str(threads), "--max-minutes", "0",
                 "--steps", str(steps if total else step + steps)] + (["--precision", precision] if precision else []))
    if o.steps <= step:
        raise RunError(f"--steps {o.steps}: {folder} has done {step} steps already; --steps is the total, as train_gpt's "
                       f"(for {o.steps} more: --steps {step + o.steps}, or tapegrad_run.py train --more-steps {o.steps})"
                       if total else f"--more-steps {steps}: give at least 1")
    if device == "cuda" and not torch.cuda.is_available():
        raise RunError("--device cuda: this PyTorch sees no CUDA device (torch.cuda.is_available() is False)")
    if os.path.realpath(out) == os.path.realpath(folder):
        raise RunError(f"--out {out}: give a new folder; the run in {folder} stays as it was")
    continued_schedule(saved["steps"], o, step)  # another --steps: the rate goes on from where it was
    try:
        check_options(o, nproc)
    except ValueError as e:
        raise RunError(str(e))
    return o


def worker(rank, world, o, device):
    """One process: the run from o.resume, this rank's share of every batch, rank 0 writes o.out."""
    if world > 1:
        dist.init_process_group("nccl" if device == "cuda" else "gloo", rank=rank, world_size=world)
    if device == "cuda":
        torch.cuda.set_device(rank % torch.cuda.device_count())
        device = f"cuda:{torch.cuda.current_device()}"
    torch.set_num_threads(o.threads or max(1, (os.cpu_count() or 1) // world))
    folder = o.resume
    checkpoint = run_folder.load_checkpoint(folder)
    step = checkpoint.step
    with open(o.data, "rb") as f:
        data = f.read()
    config = run_folder.read_config(folder)
    tokenizer = load_tokenizer(folder)
    if o.tokenizer == "char":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RunError(f"--data {o.data}: not UTF-8 text at byte {e.start}; the run's tokenizer is characters")
        unknown = sorted(set(text) - set(tokenizer.vocab))
        if unknown or len(set(text)) != tokenizer.vocab_size:
            raise RunError(f"--data {o.data}: its characters differ from the run's tokenizer.json "
                           f"({len(unknown)} new, e.g. {unknown[:3]}): give the text the run trained on")
    section = run_folder.run_section(config)
    run = Run(o, data, tokenizer, rank, world, device, model_config=run_folder.model_config(config))
    run.load_state(step, checkpoint.model, checkpoint.optimizer, checkpoint.metadata, folder)
    run.hf_prefixed = checkpoint.hf_prefixed
    if world > 1:
        ids = [torch.cuda.current_device()] if device.startswith("cuda") else None
        run.ddp = torch.nn.parallel.DistributedDataParallel(run.model, device_ids=ids)
    loss_rows = run_folder.read_loss_rows(os.path.join(folder, "loss.csv"), step) if rank == 0 else []
    elapsed_before = float(loss_rows[-1][5]) if loss_rows else 0.0
    section = dict(section, kernels="pytorch")
    section["train"] = dict(section["train"], steps=o.steps, data=o.data, out=o.out, resume=folder, threads=o.threads,
                            precision=o.precision)
    config = run_folder.with_run_section(config, section)  # a run from GPT-2: Hugging Face's config around it
    if rank == 0:
        print(f"tapegrad_run.py: {folder} at step {step} -> {o.steps} steps, {world} process(es) on {device}, "
              f"{o.precision}, writing {o.out}/", flush=True)
    train_loop(run, o, o.out, config, loss_rows, elapsed_before)
    if world > 1:
        end_process_group(run)
    if rank == 0:
        print(f"wrote {o.out}/ (examples/generate --ckpt {o.out} and train_gpt --resume {o.out} read it)")


def end_process_group(run):
    """Let go of DistributedDataParallel first, then of the process group.

    DDP's reducer holds the group too. Were it the last holder, the group would be destroyed with
    the GIL held, and gloo's destructor waits for its worker threads, one of which may still be
    freeing a tensor and need the GIL: the process hangs on exit (seen with torch 1.13, about one
    run in 40 under torchrun). Freed in this order, the group's last holder is Python's own
    reference, whose destructor lets go of the GIL first."""
    run.ddp = run.model
    gc.collect()  # the DDP module and its reducer, now, while the group is still registered
    dist.destroy_process_group()


def spawned(rank, world, o, device, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    worker(rank, world, o, device)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def continue_run(folder, data, steps, out, threads=0, nproc=1, device="cpu", total=False, precision=""):
    """Train the run in folder `steps` more steps (or to `steps` in all, total) into out, in the
    run's precision or in precision ("fp32", "bf16") when given."""
    launched = int(os.environ.get("WORLD_SIZE", "0"))  # torchrun's processes
    if launched and nproc not in (1, launched):
        raise RunError(f"--nproc {nproc}: under torchrun the processes are torchrun's ({launched}); leave --nproc out")
    world = launched or nproc
    o = plan(folder, data, steps, out, threads, world, device, total, precision)
    if launched:
        worker(int(os.environ["RANK"]), launched, o, device)
    elif nproc == 1:
        worker(0, 1, o, device)
    else:
        torch.multiprocessing.spawn(spawned, args=(nproc, o, device, free_port()), nprocs=nproc)
