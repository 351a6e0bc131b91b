# tapegrad_run.py — move a train_gpt run folder between tapegrad and PyTorch, for when a model
# outgrows one CPU: load it into the PyTorch class (strict=True), write text with it, continue
# training it in PyTorch (on several processes with DistributedDataParallel), and write the result
# as a run folder that tapegrad's examples/generate and train_gpt --resume read.
#
#     /usr/bin/python3 examples/pytorch/tapegrad_run.py sample gpt_run --prompt "The old fox" --tokens 200
#     /usr/bin/python3 examples/pytorch/tapegrad_run.py train gpt_run --data corpus.txt --steps 2000 --out torch_run
#     /usr/bin/python3 examples/pytorch/tapegrad_run.py train gpt_run --data corpus.txt --more-steps 500 --out torch_run --nproc 2
#     torchrun --nproc_per_node 2 examples/pytorch/tapegrad_run.py train gpt_run --data corpus.txt --steps 2000 --out torch_run
#     ./build/examples/generate --ckpt torch_run --prompt "The old fox"
#     ./build/examples/train_gpt --resume torch_run --steps 3000
#
# `train` continues the run exactly where it stopped: the weights, AdamW's moments, the step (so
# the learning-rate schedule goes on), and both generators (so the next batches are the ones
# train_gpt --resume would draw). --steps N trains until the run has done N steps in all, as
# train_gpt --resume --steps N; --more-steps N trains N steps beyond the run's (what --steps meant
# before; a --steps no larger than the run's steps is refused with a note saying so). The folder's files are
# described in examples/pytorch/run_folder.py. A run trained on train_gpt's built-in corpus:
# write the corpus with `./build/examples/train_gpt --write-corpus corpus.txt` first.
#
# Runs from GPT-2 (train_gpt --init-from DIR) are handled too: `sample` and `train` read the
# Hugging Face layout (GPT-2's tensor names, config.json with the run's own settings as its
# "tapegrad" member, GPT-2's vocab.json and merges.txt read by gpt2_tokenizer.py), and `train`
# writes its folder in that layout, which train_gpt --resume, examples/generate and Hugging Face's
# from_pretrained (examples/pytorch/hf_gpt2.py) read. Starting such a run is tapegrad's.
#
# Data-parallel: --nproc K starts K processes on this machine (gloo on the CPU, NCCL with
# --device cuda); under torchrun the processes are torchrun's, on one machine or several. Each
# takes batch / K sequences of every batch one process would draw, so K processes train the
# one-process run with the same --batch (dropout aside: each process draws its own masks).
#
# A run trained with train_gpt --precision bf16 goes on in bfloat16 autocast here (train_gpt.py's
# --precision); --precision fp32|bf16 changes it, as train_gpt --resume --precision may. A run
# whose config.json has no "precision" (an older train_gpt) trained in float32. `sample` writes
# in float32 whatever the run's precision, as examples/generate.
import argparse
import gc
import json
import os
import socket
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_folder  # noqa: E402
from gpt_model import generate  # noqa: E402
from run_folder import RunError  # noqa: E402
from train_gpt import Run, check_options, continued_schedule, make_model, options, tokenizer_from_json, train_loop  # noqa: E402


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


def sample(args):
    model, _, tokenizer = load_model(args.folder)
    try:
        ids = tokenizer.encode(args.prompt)
    except KeyError as e:
        raise RunError(f"--prompt: the character {e} is not in the run's vocabulary (tokenizer.json)")
    if not ids:
        raise RunError("--prompt: empty (give at least one character)")
    if not (args.temperature == 0 or 1e-4 <= args.temperature <= 100):  # as examples/generate
        raise RunError(f"--temperature {args.temperature!r}: give 0 (greedy) or at least 0.0001, at most 100 "
                       "(smaller ones overflow the logits)")
    gen = torch.Generator().manual_seed(args.seed)
    # as examples/generate: GPT-2's tokens stop at <|endoftext|>, left out, unless --ignore-eos
    stop = -1 if args.ignore_eos else getattr(getattr(tokenizer, "tok", None), "end_of_text", -1)
    out = generate(model, torch.tensor([ids]), args.tokens, temperature=args.temperature, top_k=args.top_k,
                   top_p=args.top_p, generator=gen, stop_token=stop)[0].tolist()
    if stop >= 0 and stop in out[len(ids):]:
        out = out[:out.index(stop, len(ids))]
    if hasattr(tokenizer, "decode_bytes"):  # byte-level: the bytes as they are, as examples/generate writes them
        sys.stdout.buffer.write(tokenizer.decode_bytes(out) + b"\n")
    else:
        print(tokenizer.decode(out))


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


def main():
    p = argparse.ArgumentParser(description="Move a train_gpt run between tapegrad and PyTorch.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="write text with the run's model in PyTorch")
    s.add_argument("folder")
    s.add_argument("--prompt", default="\n")
    s.add_argument("--tokens", type=int, default=200)
    s.add_argument("--temperature", type=float, default=0.8)
    s.add_argument("--top-k", type=int, default=0)
    s.add_argument("--top-p", type=float, default=1.0)
    s.add_argument("--seed", type=int, default=1337)
    s.add_argument("--ignore-eos", action="store_true",
                   help="go on past GPT-2's <|endoftext|> up to --tokens (without it, the text stops there)")
    t = sub.add_parser("train", help="continue training in PyTorch, then write a folder tapegrad reads")
    t.add_argument("folder")
    t.add_argument("--data", default="", help="the run's text (default: the one its config.json names)")
    t.add_argument("--steps", type=int, default=None,
                   help="train until the run has done this many steps in all, as train_gpt --resume --steps")
    t.add_argument("--more-steps", type=int, default=None,
                   help="train this many steps beyond the run's (default: 500; --steps' meaning before it was the "
                        "total)")
    t.add_argument("--out", required=True, help="a new run folder (the input folder stays as it was)")
    t.add_argument("--nproc", type=int, default=1, help="processes on this machine, each a share of every batch")
    t.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    t.add_argument("--threads", type=int, default=0, help="threads per process (0: the cores / nproc)")
    t.add_argument("--precision", choices=run_folder.PRECISIONS, default="",
                   help="fp32 or bf16 (bfloat16 autocast) from here on (default: the run's)")
    args = p.parse_args()
    try:
        if args.command == "sample":
            sample(args)
        else:
            if args.nproc < 1:
                raise RunError(f"--nproc {args.nproc}: must be at least 1")
            if args.steps is not None and args.more_steps is not None:
                raise RunError("give --steps N (the total) or --more-steps N (beyond the run's), not both")
            total = args.steps is not None
            steps = args.steps if total else (500 if args.more_steps is None else args.more_steps)
            continue_run(args.folder, args.data, steps, args.out, args.threads, args.nproc, args.device, total=total,
                         precision=args.precision)
    except (RunError, ValueError, RuntimeError) as e:  # RuntimeError: a non-finite step (--on-nonfinite error)
        sys.exit(f"tapegrad_run.py: {e}")
    except torch.multiprocessing.ProcessRaisedException as e:
        last = str(e).strip().splitlines()[-1]
        sys.exit(f"tapegrad_run.py: a training process failed: {last}")


if __name__ == "__main__":
    main()
