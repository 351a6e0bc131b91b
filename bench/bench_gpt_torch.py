# bench_gpt_torch.py — bench/bench_gpt.cpp in PyTorch: the same model (tapegrad_twin/gpt_model.py),
# the same training loop (tapegrad_twin/training.py: seed, batches, AdamW groups, schedule,
# clipping), the same flags and the same JSON line, so the two compare field for field. The twins
# are the package examples/pytorch/tapegrad_twin/, found through PYTHONPATH:
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 bench/bench_gpt_torch.py --config small --threads 2 --steps 50 [--precision bf16]
#     PYTHONPATH=examples/pytorch /usr/bin/python3 bench/bench_gpt_torch.py --init-from DIR --data input.txt --batch 1 --context 1024
#         [--checkpoint-activations every] [--lora-rank 8 --lora-targets attn,mlp]
#
# With --init-from, bench_gpt --init-from's twin: the Hugging Face GPT-2 folder's model in the HF
# layout twin (tapegrad_twin/hf_gpt2.py, dropout 0), the text in GPT-2's tokens
# (tapegrad_twin/gpt2_tokenizer.py), and the same step: random windows, AdamW (lr 1e-4, weight
# decay 0.1 on matrices), clipping at 1. --checkpoint-activations every wraps each block in
# torch.utils.checkpoint (use_reentrant=False: with LoRA the embeddings are frozen, and the
# reentrant form would need the block's input to require grad); --lora-rank adds peft's adapters
# (tapegrad_twin/lora.py) and trains only them. A Llama / Qwen folder is read by
# tapegrad_twin/hf_llama.py, its text encoded by tapegrad's own `bpe encode --tokenizer DIR`
# (<--build>/examples/bpe: the twin has no tokenizer.json reader), every layer checkpointed the same
# way; the loss is computed on the whole (tokens x vocabulary) logits, as transformers computes it.
#
# --precision bf16 runs each step's forward pass and loss under torch.autocast("cpu",
# dtype=torch.bfloat16), as train_gpt.py --precision bf16 (tapegrad_twin/training.py's header says
# how that differs from tapegrad's bf16); the backward pass, AdamW and the parameters stay float32.
#
# Without --data it trains on tapegrad's built-in corpus, which it gets from the build
# (<--build>/examples/train_gpt --write-corpus). The thread count goes into OMP_NUM_THREADS and
# BLIS_NUM_THREADS before torch is imported (PyTorch's OpenMP pool and BLIS read them once, at
# start-up) and into torch.set_num_threads.
#
# Fields as bench_gpt's (see there), except:
#   precision    "fp32" or "bf16" (--precision); bench_gpt's bf16_kernel has no counterpart here
#   peak_gflops  torch.mm on 1024x1024 float32 matrices (the BLAS sgemm underneath), best of 5;
#                with --precision bf16, torch.mm on 1024x1024 bfloat16 matrices, best of 5
#   peak_rss_mb  includes the Python interpreter and torch's libraries
#   blas         the BLAS libraries mapped into the process (/proc/self/maps); when one of them
#                is BLIS, its version, threading build and kernels as BLIS reports them
import argparse
import contextlib
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {  # the table at the top of bench/bench_gpt.cpp
    "tiny": dict(emb_dim=64, heads=4, layers=2, context=64, batch=16),
    "small": dict(emb_dim=128, heads=4, layers=4, context=128, batch=16),
    "medium": dict(emb_dim=384, heads=6, layers=6, context=256, batch=8),
}


def flags(argv=None):
    p = argparse.ArgumentParser(description="Training speed of the GPT in PyTorch, as one JSON line.")
    p.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    p.add_argument("--threads", type=int, default=0, help="threads (0 = all cores)")
    p.add_argument("--steps", type=int, default=20, help="timed training steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed training steps before them")
    p.add_argument("--data", help="a text file to train on (default: tapegrad's built-in corpus)")
    p.add_argument("--peak-gflops", type=float, default=0.0, help="the machine's peak for mfu (0 = measure)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: each step's forward and loss under bfloat16 autocast (default: %(default)s)")
    p.add_argument("--init-from", help="a Hugging Face GPT-2, Llama or Qwen folder: its model instead of --config's")
    p.add_argument("--batch", type=int, default=0, help="sequences per step (0 = the config's; --init-from: 4)")
    p.add_argument("--context", type=int, default=0, help="tokens per sequence (0 = the config's; --init-from: 256)")
    p.add_argument("--checkpoint-activations", choices=["none", "every"], default="none",
                   help="--init-from: each block recomputed in backward (torch.utils.checkpoint), as bench_gpt's every")
    p.add_argument("--lora-rank", type=int, default=0, help="--init-from: LoRA adapters of this rank train "
                   "(examples/pytorch/tapegrad_twin/lora.py, peft's), the model frozen (0 = none)")
    p.add_argument("--lora-alpha", type=float, default=0.0, help="the adapters' scale is alpha / rank (0 = the rank)")
    p.add_argument("--lora-targets", default="attn", help="attn, mlp or attn,mlp")
    p.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="tapegrad's build folder, for the built-in corpus (default: %(default)s)")
    o = p.parse_args(argv)
    if o.steps < 1 or o.warmup < 0 or o.threads < 0 or o.peak_gflops < 0:
        p.error("--steps must be >= 1; --warmup, --threads and --peak-gflops must be >= 0")
    return o


def builtin_corpus(build):
    program = os.path.join(build, "examples", "train_gpt")
    if not os.access(program, os.X_OK):
        sys.exit(f"bench_gpt_torch.py: {program} not found: build tapegrad's examples, or give --build or --data")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        subprocess.run([program, "--write-corpus", path], check=True, stdout=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as f:
            return f.read()


def blis_facts(path):
    """BLIS's version, threading build and kernels, asked of the library at path through ctypes."""
    lib = ctypes.CDLL(path)
    lib.bli_init()  # idempotent; without it the kernel query aborts when BLIS_ARCH_TYPE is set
    lib.bli_info_get_version_str.restype = ctypes.c_char_p
    lib.bli_arch_string.restype = ctypes.c_char_p
    threading = ("OpenMP threading" if lib.bli_info_get_enable_openmp() else
                 "pthreads threading" if lib.bli_info_get_enable_pthreads() else "no threading")
    arch = lib.bli_arch_string(lib.bli_arch_query_id()).decode()
    return f"BLIS {lib.bli_info_get_version_str().decode()}, {threading}, {arch} kernels"


def blas_description():
    """The BLAS libraries in this process's memory map; for BLIS, what BLIS says of itself.

    Debian's BLIS provides libblas.so.3 (the BLAS interface only: no bli_* symbols exported), so
    BLIS's facts come from the libblis.so.4 of the same build, in the same folder, which runs the
    same kernel selection."""
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if any(k in os.path.basename(path) for k in ("blas", "blis", "mkl")) and path not in libs:
                libs.append(path)
    parts = []
    for path in libs:
        facts = None
        for candidate in (path, os.path.join(os.path.dirname(path), "libblis.so.4")):
            try:
                facts = blis_facts(candidate)
                break
            except (OSError, AttributeError):
                pass
        parts.append(f"{facts} ({path})" if facts else path)
    return "; ".join(parts) if parts else "no BLAS library mapped"


def import_torch(threads):
    """torch, on `threads` threads (0 = all cores), and that count. The count goes into the
    environment first: PyTorch's OpenMP pool and BLIS read it once, at start-up."""
    threads = threads or len(os.sched_getaffinity(0))
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["BLIS_NUM_THREADS"] = str(threads)
    import torch

    torch.set_num_threads(threads)
    return torch, threads


class FolderRun:
    """A run from a Hugging Face folder (GPT-2's, or a Llama / Qwen one), as bench_gpt --init-from
    trains it: train_step() -> the loss. build: tapegrad's build folder (its bpe encodes a Llama's text)."""

    def __init__(self, torch, folder, text, batch, context, seed, checkpointing=False, lora_rank=0, lora_alpha=0.0,
                 lora_targets=("attn",), precision="fp32", build=""):
        from tapegrad_twin.gpt2_tokenizer import Gpt2Tokenizer
        from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
        from tapegrad_twin.hf_llama import FAMILY, LlamaForCausalLM
        from tapegrad_twin import training

        self.torch, self.batch, self.context, self.bf16 = torch, batch, context, precision == "bf16"
        with open(os.path.join(folder, "config.json")) as f:
            llama = json.load(f).get("model_type") in FAMILY
        ids = llama_ids(folder, text, build) if llama else Gpt2Tokenizer.from_folder(folder).encode(text.encode("utf-8"))
        self.train_ids = torch.tensor(training.split_train_val(ids)[0], dtype=torch.long)
        torch.manual_seed(seed)
        self.model = (LlamaForCausalLM if llama else GPT2LMHeadModel).from_pretrained(folder)
        for m in self.model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
        self.model.train()
        (self.model.model if llama else self.model.transformer).gradient_checkpointing = checkpointing
        if lora_rank:
            from tapegrad_twin.lora import apply_lora
            torch.manual_seed(seed)  # as train_gpt --seed does before the adapters
            apply_lora(self.model, lora_rank, lora_alpha or lora_rank, lora_targets)
        self.opt = torch.optim.AdamW(training.weight_decay_groups(self.model, 0.1), lr=1e-4)
        self.gen = torch.Generator().manual_seed(seed)
        self.get_batch = training.get_batch

    def train_step(self):
        torch = self.torch
        x, y = self.get_batch(self.train_ids, self.batch, self.context, self.gen)
        self.opt.zero_grad(set_to_none=True)
        # the forward pass and the loss under bf16 autocast with --precision bf16, as without --init-from
        with torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext():
            logits = self.model(x)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in self.model.parameters() if p.requires_grad], 1.0)
        self.opt.step()
        return loss.item()


def llama_ids(folder, text, build):
    """text in the tokens of folder's tokenizer.json, by tapegrad's `bpe encode` (the ids tokenizers gives)."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt") as f:
        f.write(text)
        f.flush()
        done = subprocess.run([os.path.join(build, "examples", "bpe"), "encode", "--tokenizer", folder, f.name],
                              capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench_gpt_torch.py: bpe encode --tokenizer {folder}: {done.stderr.strip()}")
    return [int(t) for t in done.stdout.split()]


def main():
    o = flags()
    torch, threads = import_torch(o.threads)
    from tapegrad_twin import training  # imports torch

    if o.init_from:
        return main_init_from(o, torch, threads)

    c = CONFIGS[o.config]
    if o.data:
        if not os.path.isfile(o.data):
            sys.exit(f"bench_gpt_torch.py: --data {o.data}: no such file")
        with open(o.data, encoding="utf-8") as f:
            text = f.read()
    else:
        text = builtin_corpus(o.build)
    # train_gpt's defaults (its 1500-step cosine schedule among them) with the config's shape,
    # dropout 0 ("--data -" only fills a required flag: the text is read above)
    t = training.options(["--data", "-", "--emb-dim", str(c["emb_dim"]), "--heads", str(c["heads"]), "--layers",
                           str(c["layers"]), "--context", str(c["context"]), "--batch", str(c["batch"]),
                           "--dropout", "0", "--seed", str(o.seed), "--threads", str(threads),
                           "--precision", o.precision])
    run = training.Run(t, text)

    seconds, cpu_seconds, first_loss, loss = [], [], None, None
    for s in range(o.warmup + o.steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        loss = run.train_step()  # ends with loss.item()
        dt, cpu_dt = time.perf_counter() - start, time.process_time() - cpu_start
        if s == 0:
            first_loss = loss
        if s >= o.warmup:
            seconds.append(dt)
            cpu_seconds.append(cpu_dt)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # before the peak run's matrices

    tokens_per_s = t.batch * t.context * o.steps / sum(seconds)
    named = list(run.model.named_parameters())
    params = sum(p.numel() for _, p in named)
    params_non_embedding = sum(p.numel() for n, p in named if n not in ("tok_emb.weight", "pos_emb.weight"))
    flops_per_token = 6 * params_non_embedding + 6 * t.layers * t.context * t.emb_dim
    if o.peak_gflops > 0:
        peak, peak_source = o.peak_gflops, "--peak-gflops"
    else:
        dtype = torch.bfloat16 if o.precision == "bf16" else torch.float32
        peak = mm_peak_gflops(torch, dtype)
        on = " on bfloat16 matrices" if o.precision == "bf16" else ""
        peak_source = f"torch.mm 1024x1024x1024{on}, best of 5"
    print(json.dumps({
        "bench": "pytorch", "precision": o.precision, "config": o.config, "threads": threads, "steps": o.steps,
        "warmup": o.warmup, "batch": t.batch, "context": t.context, "params": params,
        "params_non_embedding": params_non_embedding,
        "tokens_per_s": round(tokens_per_s, 1), "ms_per_step_median": round(statistics.median(seconds) * 1e3, 3),
        "ms_per_step_min": round(min(seconds) * 1e3, 3),
        "cpu_ms_per_step_median": round(statistics.median(cpu_seconds) * 1e3, 3), "flops_per_token": flops_per_token, "peak_gflops": round(peak, 1), "peak_source": peak_source,
        "mfu": round(flops_per_token * tokens_per_s / (peak * 1e9), 4), "peak_rss_mb": round(rss, 1),
        "first_loss": float(f"{first_loss:.9g}"), "final_loss": float(f"{loss:.9g}"),
        "blas": blas_description(), "torch": torch.__version__,
    }), flush=True)


def main_init_from(o, torch, threads):
    if not o.data or not os.path.isfile(o.data):
        sys.exit("bench_gpt_torch.py: --init-from needs --data FILE (a text file)")
    with open(o.data, encoding="utf-8") as f:
        text = f.read()
    batch, context = o.batch or 4, o.context or 256
    run = FolderRun(torch, o.init_from, text, batch, context, o.seed, o.checkpoint_activations == "every", o.lora_rank,
                    o.lora_alpha, tuple(o.lora_targets.split(",")), o.precision, o.build)
    seconds, cpu_seconds, first_loss, loss = [], [], None, None
    for s in range(o.warmup + o.steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        loss = run.train_step()
        if s == 0:
            first_loss = loss
        if s >= o.warmup:
            seconds.append(time.perf_counter() - start)
            cpu_seconds.append(time.process_time() - cpu_start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({
        "bench": "pytorch", "precision": o.precision, "config": "init-from " + o.init_from, "threads": threads,
        "steps": o.steps, "warmup": o.warmup, "batch": batch, "context": context,
        "params": sum(p.numel() for p in run.model.parameters()),
        "params_trained": sum(p.numel() for p in run.model.parameters() if p.requires_grad),
        "checkpoint_activations": o.checkpoint_activations, "lora": f"r={o.lora_rank} alpha={o.lora_alpha or o.lora_rank:g} {o.lora_targets}" if o.lora_rank else "none",
        "tokens_per_s": round(batch * context * o.steps / sum(seconds), 1),
        "ms_per_step_median": round(statistics.median(seconds) * 1e3, 3), "ms_per_step_min": round(min(seconds) * 1e3, 3),
        "cpu_ms_per_step_median": round(statistics.median(cpu_seconds) * 1e3, 3), "peak_rss_mb": round(rss, 1),
        "first_loss": float(f"{first_loss:.9g}"), "final_loss": float(f"{loss:.9g}"),
        "blas": blas_description(), "torch": torch.__version__,
    }), flush=True)


def mm_peak_gflops(torch, dtype, n=1024, repeats=5):
    """GFLOP/s (2 n^3 per call) of torch.mm on n x n matrices of dtype (float32: the BLAS sgemm;
    bfloat16: what autocast's products call), best of repeats of >= 20 ms."""
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(n, n, generator=g).to(dtype), torch.randn(n, n, generator=g).to(dtype)
    c = torch.empty(n, n, dtype=dtype)
    torch.mm(a, b, out=c)  # warmup

    def seconds_for(iters):
        start = time.perf_counter()
        for _ in range(iters):
            torch.mm(a, b, out=c)
        return time.perf_counter() - start

    iters = 1
    while seconds_for(iters) < 0.02:
        iters *= 2
    best = min(seconds_for(iters) / iters for _ in range(repeats))
    return 2 * n ** 3 / best * 1e-9


if __name__ == "__main__":
    main()
