# tapegrad_run.py — move a train_gpt run folder between tapegrad and PyTorch, for when a model
# outgrows one CPU: load it into the PyTorch class (strict=True), write text with it, continue
# training it in PyTorch (on several processes with DistributedDataParallel), and write the result
# as a run folder that tapegrad's examples/generate and train_gpt --resume read. The work is
# tapegrad_twin/resume.py's (load_model, continue_run); this is its command line.
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
# described in examples/pytorch/tapegrad_twin/run_folder.py. A run trained on train_gpt's built-in corpus:
# write the corpus with `./build/examples/train_gpt --write-corpus corpus.txt` first.
#
# Runs from GPT-2 (train_gpt --init-from DIR) are handled too: `sample` and `train` read the
# Hugging Face layout (GPT-2's tensor names, config.json with the run's own settings as its
# "tapegrad" member, GPT-2's vocab.json and merges.txt read by gpt2_tokenizer.py), and `train`
# writes its folder in that layout, which train_gpt --resume, examples/generate and Hugging Face's
# from_pretrained (examples/pytorch/tapegrad_twin/hf_gpt2.py) read. Starting such a run is tapegrad's.
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
import sys

import torch

from tapegrad_twin import run_folder
from tapegrad_twin.gpt_model import generate
from tapegrad_twin.resume import continue_run, load_model
from tapegrad_twin.run_folder import RunError


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
