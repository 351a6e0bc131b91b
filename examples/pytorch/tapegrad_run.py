# tapegrad_run.py — move a train_gpt run folder between tapegrad and PyTorch, for when a model
# outgrows one CPU: load it into the PyTorch class (strict=True), write text with it, continue
# training it in PyTorch (from there, torch.nn.parallel.DistributedDataParallel takes over), and
# write the result back as a folder tapegrad's examples/generate and train_gpt --resume read.
#
#     /usr/bin/python3 examples/pytorch/tapegrad_run.py sample gpt_run --prompt "The old fox" --tokens 200
#     /usr/bin/python3 examples/pytorch/tapegrad_run.py train gpt_run --data corpus.txt --steps 500 --out torch_run
#     ./build/examples/generate --ckpt torch_run --prompt "The old fox"
#
# A run trained on train_gpt's built-in corpus: write the corpus with
# `./build/examples/train_gpt --write-corpus corpus.txt` first. The folder's files are described
# in examples/gpt/checkpoint.h; safetensors is read and written by hand here (8-byte header
# length, JSON header, raw little-endian data), as Debian has no Python package for it.
import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_model import GPTModel, generate  # noqa: E402
from train_gpt import Run, options, tokenizer_from_json  # noqa: E402

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        dtype = DTYPES[info["dtype"]]
        flat = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(info["shape"]).clone()
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """The canonical layout tapegrad writes; atomically (a temporary file, then a rename)."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        blob = t.detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    tmp = path + ".tmp-py"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_run(folder):
    """The model (eval mode), its config and the tokenizer of a train_gpt folder."""
    config = json.load(open(os.path.join(folder, "config.json")))
    path = os.path.join(folder, "tokenizer.json")
    try:
        tokenizer = tokenizer_from_json(json.load(open(path)), path)
    except ValueError as e:
        sys.exit(str(e))
    model = GPTModel(config["model"])
    state, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
    model.load_state_dict(state, strict=True)
    return model.eval(), config, tokenizer


def save_run(folder, model, config, tokenizer, step):
    """model.safetensors, config.json and tokenizer.json: what examples/generate reads."""
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), model.state_dict(), {"format": "pt", "step": str(step)})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tokenizer.to_json(), f)


def sample(args):
    model, _, tokenizer = load_run(args.folder)
    prompt = torch.tensor([tokenizer.encode(args.prompt)])
    gen = torch.Generator().manual_seed(args.seed)
    out = generate(model, prompt, args.tokens, temperature=args.temperature, top_k=args.top_k, generator=gen)
    print(tokenizer.decode(out[0].tolist()))


def train(args):
    model, config, tokenizer = load_run(args.folder)
    flags = []
    for key, value in config["train"].items():
        if key in ("data", "out", "resume", "sample-tokens", "steps", "write-corpus"):
            continue
        if isinstance(value, bool):  # a switch: given when true
            flags += ["--" + key] if value else []
            continue
        flags += ["--" + key, str(value)]
    o = options(flags + ["--data", args.data, "--steps", str(args.steps)])
    text = open(args.data, encoding="utf-8").read()
    run = Run(o, text)
    if run.tokenizer.to_json() != tokenizer.to_json():
        sys.exit(f"{args.data}: its tokenizer (characters or BPE merges) differs from the run's")
    run.model.load_state_dict(model.state_dict(), strict=True)
    for step in range(args.steps):
        loss = run.train_step()
        if (step + 1) % 100 == 0 or step + 1 == args.steps:
            print(f"step {step + 1}: loss {loss:.4f}", flush=True)
    save_run(args.out, run.model, config, run.tokenizer, args.steps)
    print(f"wrote {args.out}/ (examples/generate --ckpt {args.out} reads it)")


def main():
    p = argparse.ArgumentParser(description="Move a train_gpt run between tapegrad and PyTorch.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="write text with the run's model in PyTorch")
    s.add_argument("folder")
    s.add_argument("--prompt", default="\n")
    s.add_argument("--tokens", type=int, default=200)
    s.add_argument("--temperature", type=float, default=0.8)
    s.add_argument("--top-k", type=int, default=0)
    s.add_argument("--seed", type=int, default=1337)
    t = sub.add_parser("train", help="continue training in PyTorch, then write a folder tapegrad reads")
    t.add_argument("folder")
    t.add_argument("--data", required=True)
    t.add_argument("--steps", type=int, default=500)
    t.add_argument("--out", required=True)
    args = p.parse_args()
    sample(args) if args.command == "sample" else train(args)


if __name__ == "__main__":
    main()
