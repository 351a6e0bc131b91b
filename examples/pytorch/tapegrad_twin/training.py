# training.py — the training loop of tapegrad's examples/train_gpt in PyTorch, step for step:
# the same tokenizer, split, batches, learning-rate schedule, AdamW groups and clipping, so the
# same seed gives the same losses (tests/reference/make_train_reference.py checks tapegrad
# against it). options() takes every flag train_gpt saves in a run's config.json; Run.save writes
# the same run folder (run_folder.py) and Run.load_state continues one, so a run moves between the
# two and goes on exactly. examples/pytorch/train_gpt.py is its command line:
#
#     /usr/bin/python3 examples/pytorch/train_gpt.py --data input.txt --steps 2000 --out torch_run
#     ./build/examples/train_gpt --resume torch_run --steps 3000      # and back in tapegrad
#
#     o = options(["--data", "input.txt", "--steps", "100"])
#     check_options(o)
#     run = Run(o, open("input.txt", "rb").read())
#     train_loop(run, o, "torch_run", fresh_config(o, run))
#
# Data-parallel (resume.py's continue_run, examples/pytorch/tapegrad_run.py --nproc K, or torchrun):
# every rank draws the batch one process would draw and trains on its share, rows r*B/K ...
# (r+1)*B/K - 1 of each micro-batch; DistributedDataParallel averages the gradients, so K
# processes train the one-process run (dropout aside: each rank draws its own masks).
#
# --precision bf16: the forward pass and the loss of every training step and of every evaluation
# run under torch.autocast(dtype=torch.bfloat16) (the backward pass outside it, as PyTorch
# recommends); parameters, gradients and AdamW stay float32, as in tapegrad's bf16. Autocast is
# not tapegrad's rounding op for op: PyTorch 1.13's CPU autocast also hands the products' outputs
# on as bfloat16 (softmax and gelu then run on bfloat16), where tapegrad keeps them float32, so
# the two bf16 runs' losses differ by about 1e-5 relative (a tiny run's first steps), not ~1e-7.
import argparse
import collections
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from . import bpe, gpt2_tokenizer, run_folder
from .gpt_model import GPTModel
from .hf_llama import LlamaForCausalLM

EVAL_SEED = 2024  # Trainer::kEvalSeed


def char_vocab(text):
    """The sorted set of the text's characters (tapegrad's CharTokenizer for UTF-8 text)."""
    return sorted(set(text))


class CharTokenizer:
    """The text's characters, one id each (tapegrad's CharTokenizer for UTF-8 text)."""

    def __init__(self, vocab):
        self.vocab = vocab
        self.index = {c: i for i, c in enumerate(vocab)}
        self.vocab_size = len(vocab)

    def encode(self, text):
        return [self.index[c] for c in text]

    def decode(self, ids):
        return "".join(self.vocab[i] for i in ids)

    def bytes_per_id(self):
        return [len(c.encode("utf-8")) for c in self.vocab]

    def to_json(self):
        return {"type": "char", "kind": "utf8", "symbols": [ord(c) for c in self.vocab]}

    def extra_files(self):
        return {}


class ByteLevelTokenizer:
    """A tokenizer of the text's UTF-8 bytes; self.tok encodes bytes, decodes to bytes and has
    token_bytes (bpe.py's, or gpt2_tokenizer.py's)."""

    def __init__(self, tok):
        self.tok = tok
        self.vocab_size = tok.vocab_size

    def encode(self, text):
        return self.tok.encode(text.encode("utf-8"))

    def decode_bytes(self, ids):
        return self.tok.decode(ids)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def bytes_per_id(self):
        return [len(b) for b in self.tok.token_bytes]

    def extra_files(self):
        return {}


class BpeTokenizer(ByteLevelTokenizer):
    """Byte-level BPE (bpe.py) on the text's UTF-8 bytes."""

    def to_json(self):
        return json.loads(self.tok.to_json())


class Gpt2FilesTokenizer(ByteLevelTokenizer):
    """GPT-2's tokenizer (gpt2_tokenizer.py) of a run from GPT-2: tokenizer.json names vocab.json and
    merges.txt beside it, which a saved run copies as they were read."""

    def to_json(self):
        return {"type": "gpt2", "vocab": "vocab.json", "merges": "merges.txt"}

    def extra_files(self):
        files = {}
        for name, path in (("vocab.json", self.tok.vocab_path), ("merges.txt", self.tok.merges_path)):
            with open(path, "rb") as f:
                files[name] = f.read()
        return files


def tokenizer_files(tokenizer):
    """A run folder's tokenizer files, {name: text or bytes}: tokenizer.json, and GPT-2's files."""
    return dict({"tokenizer.json": json.dumps(tokenizer.to_json()) + "\n"}, **tokenizer.extra_files())


def tokenizer_from_json(doc, source):
    """tokenizer.json's object (source: its path; a "gpt2" one names files beside it)."""
    if "eos_token" in doc:  # tapegrad's char or bpe tokenizer made from instruction or chat data
        raise ValueError(f'{source}: a tokenizer with an end-of-text token ("eos_token", a run on instruction or '
                         'chat data): these scripts read runs on plain text; use ./build/examples/generate')
    if doc.get("type") == "bpe":
        return BpeTokenizer(bpe.Tokenizer.from_json(json.dumps(doc), source))
    if doc.get("type") == "gpt2":
        folder = os.path.dirname(source)
        for key in ("vocab", "merges"):
            if not isinstance(doc.get(key), str):
                raise ValueError(f'{source}: a "gpt2" tokenizer names its files: "{key}" is missing or not a string')
            name = os.path.normpath(doc[key]) if doc[key] else ""
            if not name or os.path.isabs(name) or name in (".", "..") or name.startswith(".." + os.sep):
                raise ValueError(f'{source}: "{key}" is {json.dumps(doc[key])}: a "gpt2" tokenizer\'s files must be in '
                                 'its folder (a relative path without "..")')
        return Gpt2FilesTokenizer(gpt2_tokenizer.Gpt2Tokenizer(os.path.join(folder, doc["vocab"]),
                                                               os.path.join(folder, doc["merges"])))
    if doc.get("kind") != "utf8":
        raise ValueError(f"{source}: a byte-level character tokenizer; these scripts handle UTF-8 text only")
    return CharTokenizer([chr(c) for c in doc["symbols"]])


def split_train_val(ids):
    n_train = int(0.9 * len(ids))
    return ids[:n_train], ids[n_train:]


def get_batch(data, batch, context, generator):
    ix = torch.randint(0, len(data) - context - 1, (batch,), generator=generator)
    x = torch.stack([data[i:i + context] for i in ix])
    y = torch.stack([data[i + 1:i + context + 1] for i in ix])
    return x, y


def warmup_cosine(warmup, steps, min_factor, step):
    """tapegrad's optim::warmup_cosine factor: linear warmup, then a half cosine down to min_factor."""
    if step < warmup:
        return step / warmup
    if step >= steps:
        return min_factor
    progress = (step - warmup) / (steps - warmup)
    return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def lr_at(step, o):
    """train_gpt's learning_rate (train/trainer.h): the constant lr, or the warmup and the cosine
    decay, from --decay-lr at --decay-start when a resume with another --steps set them."""
    if o.lr_schedule == "constant":
        return o.lr
    decay_start = o.decay_start if o.decay_start > 0 else o.warmup
    decay_lr = o.decay_lr if o.decay_lr >= 0 else o.lr
    if step < o.warmup or (decay_start == o.warmup and decay_lr == o.lr):  # the plain schedule
        return o.lr * warmup_cosine(o.warmup, o.steps, o.min_lr / o.lr if o.lr > 0 else 0.0, step)
    if step < decay_start:  # held at the peak until the decay starts
        return o.lr
    min_factor = min(1.0, o.min_lr / decay_lr) if decay_lr > 0 else 1.0
    return decay_lr * warmup_cosine(decay_start, o.steps, min_factor, step)


def continued_schedule(planned_steps, o, step):
    """train_gpt's continued_schedule: o resumed at step with another --steps than planned_steps,
    after its decay began, decays from the rate it had reached there (o is changed)."""
    decay_start = o.decay_start if o.decay_start > 0 else o.warmup
    if o.lr_schedule != "cosine" or o.steps == planned_steps or step <= decay_start or step >= o.steps:
        return
    planned = argparse.Namespace(**vars(o))
    planned.steps = planned_steps
    o.decay_lr = lr_at(step, planned)
    o.decay_start = step


def weight_decay_groups(model, weight_decay):
    """Decay on tensors of 2 or more dims (matrices, embeddings), none on biases and LayerNorm; the
    parameters that require grad only (a LoRA model's adapters)."""
    trained = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in trained if p.dim() >= 2]
    no_decay = [p for p in trained if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def config_of(o, vocab_size):
    return dict(vocab_size=vocab_size, context_length=o.context, emb_dim=o.emb_dim, n_heads=o.heads,
                n_layers=o.layers, drop_rate=o.dropout, qkv_bias=False, tie_weights=o.tie_weights,
                layer_norm_eps=1e-5)


def swiglu_width(C):
    """train/options.h's: 8C/3 rounded up to a multiple of 8."""
    return (8 * C // 3 + 7) // 8 * 8


def llama_config_of(o, vocab_size):
    """A llama or qwen3 run's Hugging Face config, from the size flags as train::llama_config makes it."""
    prefix = {"llama": "Llama", "qwen2": "Qwen2", "qwen3": "Qwen3"}[o.arch]
    return dict(architectures=[prefix + "ForCausalLM"], model_type=o.arch,
                vocab_size=vocab_size, hidden_size=o.emb_dim, intermediate_size=swiglu_width(o.emb_dim),
                num_hidden_layers=o.layers, num_attention_heads=o.heads, num_key_value_heads=o.kv_heads or o.heads,
                head_dim=o.emb_dim // o.heads, max_position_embeddings=o.context, rms_norm_eps=1e-6,
                rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=o.tie_weights, attention_bias=False,
                attention_dropout=o.dropout, hidden_act="silu", initializer_range=0.02)


def make_model(o, vocab_size, model_config=None):
    """The run's model, its weights drawn from the default generator: GPTModel, or for --arch llama
    and qwen3 hf_llama's LlamaForCausalLM (Hugging Face's _init_weights, as tapegrad's)."""
    if o.arch == "gpt2":
        return GPTModel(model_config or config_of(o, vocab_size))
    return LlamaForCausalLM(model_config or llama_config_of(o, vocab_size))


Losses = collections.namedtuple("Losses", "train val train_bpb val_bpb")


class Run:
    """A run: the model, the optimizer and the batch generator, as tapegrad's Trainer. data: the
    text's bytes. tokenizer: a saved one (resuming), or None to make it as train_gpt does.
    model_config: a saved run's "model" (resuming; a run from GPT-2 has its own shape; a llama or
    qwen3 run's Hugging Face fields), or None for the flags' shape. rank, world: this process's share of each batch when data-parallel (the
    model is then wrapped in DistributedDataParallel by the caller, as self.ddp)."""

    def __init__(self, o, data, tokenizer=None, rank=0, world=1, device="cpu", model_config=None):
        self.o, self.rank, self.world, self.device = o, rank, world, device
        if isinstance(data, str):
            data = data.encode("utf-8")
        if o.tokenizer not in ("char", "bpe") and tokenizer is None:
            raise ValueError(f"--tokenizer {o.tokenizer}: a tokenizer from files comes with the run resumed")
        if o.tokenizer != "char":  # byte-level (BPE, GPT-2's): the splits cut in the bytes, encoded apart
            n = int(0.9 * len(data))
            self.tokenizer = tokenizer or BpeTokenizer(bpe.Tokenizer(bpe.train(data[:n], o.vocab_size)))
            self.train_data = torch.tensor(self.tokenizer.tok.encode(data[:n]), dtype=torch.long)
            self.val_data = torch.tensor(self.tokenizer.tok.encode(data[n:]), dtype=torch.long)
        else:
            text = data.decode("utf-8")
            self.tokenizer = tokenizer or CharTokenizer(char_vocab(text))
            ids = torch.tensor(self.tokenizer.encode(text), dtype=torch.long)
            self.train_data, self.val_data = split_train_val(ids)
        self.bytes_per_id = torch.tensor(self.tokenizer.bytes_per_id(), dtype=torch.long)
        # The weights are drawn on the CPU, as tapegrad draws them, then moved. On a GPU, dropout
        # draws from the GPU's generator (seeded here too): its masks differ from the CPU's and
        # tapegrad's. The batches do not: batch_gen is a CPU generator on every device.
        torch.manual_seed(o.seed)
        self.model = make_model(o, self.tokenizer.vocab_size, model_config).to(device)
        self.ddp = self.model  # what the training step calls; DistributedDataParallel(model) when world > 1
        self.optimizer = torch.optim.AdamW(weight_decay_groups(self.model, o.weight_decay), lr=o.lr)
        self.batch_gen = torch.Generator().manual_seed(o.seed)
        self.step = 0
        self.hf_prefixed = False  # a run from GPT-2: its model.safetensors' names have "transformer."

    def on_device(self, value, dtype=None):
        """value (a tensor, or numbers for torch.tensor) on the run's device. Every tensor the loop
        hands to the model, the loss or a collective goes through here: a GPU run fails on the
        first CPU tensor that meets a GPU one, and NCCL takes GPU tensors only. The batches are
        drawn on the CPU (tapegrad's draws) and moved here."""
        if torch.is_tensor(value):
            return value.to(self.device)
        return torch.tensor(value, dtype=dtype, device=self.device)

    def autocast(self):
        """The context of a forward pass and its loss: bfloat16 autocast with --precision bf16, none
        with fp32 (torch.autocast refuses a device type it has no autocast for, even disabled)."""
        if self.o.precision != "bf16":
            return _nothing()
        return torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16)

    def train_step(self):
        for group in self.optimizer.param_groups:
            group["lr"] = lr_at(self.step, self.o)
        b, n = self.o.batch, self.o.grad_accum
        x, y = get_batch(self.train_data, n * b, self.o.context, self.batch_gen)  # n micro-batches of b
        share = b // self.world  # this rank's rows of each micro-batch
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        step_loss = 0.0
        for k in range(n):
            rows = slice(k * b + self.rank * share, k * b + (self.rank + 1) * share)
            xk, yk = self.on_device(x[rows]), self.on_device(y[rows])
            sync = self.ddp.no_sync() if (self.world > 1 and k < n - 1) else _nothing()
            with sync:  # the gradients are averaged over the ranks once, after the last micro-batch
                with self.autocast():  # the forward pass and the loss; backward outside
                    loss = F.cross_entropy(self.ddp(xk).flatten(0, 1), yk.flatten())
                (loss if n == 1 else loss / n).backward()
            step_loss += loss.item() / n
        if self.world > 1:  # the ranks' means, averaged: the whole batch's mean
            total = self.on_device(step_loss, torch.float64)
            dist.all_reduce(total)
            step_loss = total.item() / self.world
        params = list(self.model.parameters())
        if self.o.grad_clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, self.o.grad_clip)
        else:
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
        if not (math.isfinite(step_loss) and math.isfinite(norm.item())):  # tapegrad's --on-nonfinite
            if self.o.on_nonfinite == "error":
                raise RuntimeError(f"step {self.step + 1}: the loss ({step_loss}) or the gradients' total norm "
                                   f"({norm.item()}) is not finite; the model was not updated")
            self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            return step_loss
        self.optimizer.step()
        self.step += 1
        return step_loss

    @torch.no_grad()
    def evaluate(self):
        """Mean loss of each split over eval_batches fixed batches, and bits per byte."""
        self.model.eval()
        gen = torch.Generator().manual_seed(EVAL_SEED)
        out = []
        for data in (self.train_data, self.val_data):
            total, nats, nbytes = 0.0, 0.0, 0
            for _ in range(self.o.eval_batches):
                x, y = get_batch(data, self.o.batch, self.o.context, gen)
                with self.autocast():  # evaluated in the run's precision, as tapegrad does
                    loss = F.cross_entropy(self.model(self.on_device(x)).flatten(0, 1), self.on_device(y).flatten())
                loss = loss.item()
                total += loss
                nats += loss * y.numel()
                nbytes += int(self.bytes_per_id[y].sum())  # y as drawn, on the CPU as bytes_per_id
            out.append((total / self.o.eval_batches, nats / math.log(2.0) / nbytes))
        self.model.train()
        return Losses(out[0][0], out[1][0], out[0][1], out[1][1])

    # ---- the run folder's state (run_folder.py) ----

    def load_state(self, step, model_state, optimizer_tensors, metadata, source):
        """Continue from a saved step: weights, AdamW's moments, both generators (the CPU's: a GPU's
        generator, dropout's on a GPU run, is not saved, tapegrad has none)."""
        self.model.load_state_dict(model_state, strict=True)  # copies into the parameters, on their device
        for name, p in self.model.named_parameters():
            if name + ".step" not in optimizer_tensors:
                continue
            saved = {key: optimizer_tensors[f"{name}.{key}"] for key in ("step", "exp_avg", "exp_avg_sq")}
            # the moments beside their parameter; the step count stays on the CPU, where AdamW keeps it
            self.optimizer.state[p] = {key: t if key == "step" else self.on_device(t) for key, t in saved.items()}
        try:
            torch.set_rng_state(torch.tensor(list(bytes.fromhex(metadata["default_generator"])), dtype=torch.uint8))
            self.batch_gen.set_state(torch.tensor(list(bytes.fromhex(metadata["batch_generator"])), dtype=torch.uint8))
        except (KeyError, ValueError, RuntimeError) as e:
            raise run_folder.RunError(f"{source}: the generators' states in optimizer.safetensors' metadata: {e}")
        self.step = step

    def optimizer_tensors(self):
        """AdamW's state under tapegrad's names: "<param>.step", ".exp_avg", ".exp_avg_sq"."""
        out = {}
        for name, p in self.model.named_parameters():
            state = self.optimizer.state.get(p)
            if state:
                for key in ("step", "exp_avg", "exp_avg_sq"):
                    out[f"{name}.{key}"] = state[key].detach().cpu()
        return out

    def save(self, folder, config, loss_rows):
        metadata = {"step": str(self.step),
                    "default_generator": bytes(torch.get_rng_state().tolist()).hex(),
                    "batch_generator": bytes(self.batch_gen.get_state().tolist()).hex()}
        state = {k: v.cpu() for k, v in self.model.state_dict().items()}
        run_folder.save_run(folder, config, tokenizer_files(self.tokenizer), state, self.optimizer_tensors(),
                                   metadata, loss_rows, self.hf_prefixed)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ---- the options, as train_gpt's flags ------------------------------------------------------------

def options(argv=None):
    p = argparse.ArgumentParser(description="The training loop of tapegrad's train_gpt, in PyTorch.")
    p.add_argument("--data", default="")
    p.add_argument("--data-format", choices=["text", "jsonl"], default="text",
                   help="text only here (jsonl, instruction fine-tuning: ./build/examples/train_gpt)")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--max-minutes", type=float, default=0.0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--emb-dim", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--arch", choices=["gpt2", "llama", "qwen2", "qwen3"], default="gpt2",
                   help="gpt2 (gpt_model.py), or llama / qwen2 / qwen3 (hf_llama.py: the run's folder is a Hugging "
                        "Face folder)")
    p.add_argument("--kv-heads", type=int, default=0, help="llama, qwen2, qwen3: key/value heads (0: --heads)")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=2e-4)
    p.add_argument("--lr-schedule", choices=["constant", "cosine"], default="cosine")
    p.add_argument("--warmup", type=int, default=None, help="default: 50, at most --steps / 10 (as train_gpt's)")
    p.add_argument("--decay-start", type=int, default=0, help="the step the decay starts at (0: --warmup's end)")
    p.add_argument("--decay-lr", type=float, default=-1.0, help="the rate the decay starts from (below 0: --lr)")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--eval-every", type=int, default=None,
                   help="default: 250, at most --steps / 5 (at least 1), as train_gpt's; with --resume: the run's")
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--eval-task", default="", help="carried in config.json (train_gpt scores the task while it "
                                                   "trains; examples/pytorch/evaluate.py scores a saved run)")
    p.add_argument("--eval-task-limit", type=int, default=200, help="carried in config.json (as --eval-task)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--tokenizer", default="char", help="char or bpe (a path: a resumed run's, from GPT-2)")
    p.add_argument("--init-from", default="", help="a resumed run's (to start from GPT-2: ./build/examples/train_gpt "
                                                   "--init-from DIR)")
    p.add_argument("--tie-weights", action="store_true")
    p.add_argument("--on-nonfinite", choices=["error", "skip"], default="error")
    p.add_argument("--vocab-size", type=int, default=1024)
    p.add_argument("--precision", choices=run_folder.PRECISIONS, default=None,
                   help="fp32 (default), or bf16: forward and loss under bfloat16 autocast (matrix products on "
                        "bfloat16 inputs); with --resume: the run's unless given (it may change, as in train_gpt)")
    p.add_argument("--out", default="", help="write the run folder here (as train_gpt --out); empty: none")
    p.add_argument("--resume", default="", help="continue the run saved in this folder (to --steps in all)")
    p.add_argument("--sample-tokens", type=int, default=300, help="carried in config.json (samples: tapegrad_run.py)")
    p.add_argument("--write-corpus", default="", help="not here: ./build/examples/train_gpt --write-corpus FILE")
    p.add_argument("--eval-only", action="store_true", help="not here: ./build/examples/train_gpt --eval-only")
    p.add_argument("--checkpoint-activations", choices=["none", "every", "ffn"], default="none",
                   help="carried in config.json (train_gpt's recomputation; the numbers are the same)")
    p.add_argument("--loss-chunk", type=int, default=0, help="carried in config.json (train_gpt's chunked loss)")
    p.add_argument("--dtype", choices=["auto", "float32"], default="auto",
                   help="carried in config.json (train_gpt's frozen 16-bit weights; the numbers are the same)")
    p.add_argument("--lora-rank", type=int, default=0, help="0 only: LoRA runs are train_gpt's (tapegrad_twin/lora.py is "
                                                            "the adapters' twin)")
    p.add_argument("--lora-alpha", type=float, default=0.0, help="carried in config.json (LoRA runs are train_gpt's)")
    p.add_argument("--lora-targets", default="attn", help="carried in config.json (LoRA runs are train_gpt's)")
    p.add_argument("--task", choices=["lm", "classify"], default="lm",
                   help="lm only here (classify, a classification fine-tune: ./build/examples/train_gpt --task classify)")
    p.add_argument("--columns", default="", help="carried in config.json (goes with train_gpt --task classify)")
    p.add_argument("--balance", action="store_true", help="carried in config.json (goes with train_gpt --task classify)")
    p.add_argument("--val-data", default="", help="carried in config.json (goes with train_gpt --task classify)")
    p.add_argument("--test-data", default="", help="carried in config.json (goes with train_gpt --task classify)")
    p.add_argument("--train-layers", choices=["all", "last", "lora"], default="all",
                   help="carried in config.json (goes with train_gpt --task classify)")
    p.add_argument("--overwrite", action="store_true", help="not here: goes with train_gpt --merge-lora")
    p.add_argument("--merge-lora", default="", help="not here: ./build/examples/train_gpt --resume RUN --merge-lora OUT")
    o = p.parse_args(argv)
    o.precision_given, o.precision = o.precision is not None, o.precision or "fp32"
    o.warmup_given, o.warmup = o.warmup is not None, 50 if o.warmup is None else o.warmup
    o.eval_every_given, o.eval_every = o.eval_every is not None, 250 if o.eval_every is None else o.eval_every
    return o


def train_config(o):
    """config.json's "train": every key train_gpt writes, from o (run_folder.declared_keys)."""
    keys = run_folder.declared_keys()["train"]
    return {key: getattr(o, key.replace("-", "_")) for key in keys["math"] + keys["carried"]}


def check_options(o, world=1):
    """What train_gpt checks before any work, and the data-parallel split; ValueError names the flag."""
    if o.data_format != "text":
        raise ValueError(f"--data-format {o.data_format}: instruction fine-tuning (loss masks, padded batches) runs "
                         "in tapegrad only: ./build/examples/train_gpt --data-format jsonl (--resume continues it); "
                         "examples/pytorch trains on text")
    if o.task != "lm":
        raise ValueError(f"--task {o.task}: classification fine-tuning (a head on the last token, labelled texts) runs "
                         "in tapegrad only: ./build/examples/train_gpt --task classify (--resume continues it); "
                         "examples/pytorch trains language models")
    if o.arch == "gpt2" and o.kv_heads:
        raise ValueError("--kv-heads: --arch gpt2 has no grouped-query attention; it goes with --arch llama or qwen3")
    if o.arch != "gpt2" and not o.resume:
        if o.init_from:
            raise ValueError("--init-from reads a GPT-2 folder: it goes with --arch gpt2")
        kv = o.kv_heads or o.heads
        if o.emb_dim % o.heads or o.heads % kv or (o.emb_dim // o.heads) % 2:
            raise ValueError(f"--emb-dim {o.emb_dim}, --heads {o.heads}, --kv-heads {kv}: heads must divide emb-dim "
                             "into an even head width, and kv-heads divide heads")
    if o.write_corpus:
        raise ValueError("--write-corpus: the built-in corpus is tapegrad's: ./build/examples/train_gpt "
                         "--write-corpus FILE")
    if o.eval_only:
        raise ValueError("--eval-only: use ./build/examples/train_gpt --eval-only --resume DIR")
    if o.lora_rank or o.merge_lora:
        raise ValueError("--lora-rank, --merge-lora: LoRA runs are train_gpt's: ./build/examples/train_gpt --init-from DIR "
                         "--lora-rank R")
    if o.init_from and not o.resume:  # a resumed run from GPT-2 carries its --init-from along
        raise ValueError("--init-from: runs from GPT-2 start in tapegrad: ./build/examples/train_gpt --init-from DIR, "
                         "then examples/pytorch/tapegrad_run.py train RUN continues them")
    if o.tokenizer not in ("char", "bpe") and not o.resume:  # a path: a resumed run's (GPT-2's files)
        raise ValueError(f"--tokenizer {o.tokenizer}: char or bpe (a tokenizer from files: ./build/examples/train_gpt "
                         "--tokenizer PATH)")
    if o.batch % world:
        raise ValueError(f"--nproc {world} does not divide --batch {o.batch}: each process takes batch / nproc "
                         "sequences of every micro-batch")
    # a resumed run keeps its own schedule (its config.json's warmup, checked when it is read)
    if not o.warmup_given and not o.resume:  # as train_gpt: a short first run just works
        o.warmup = min(50, o.steps // 10)
    if not o.eval_every_given and not o.resume:  # as train_gpt: a short run is evaluated five times
        o.eval_every = min(250, max(1, o.steps // 5))
    if not o.resume and o.lr_schedule == "cosine" and o.warmup >= o.steps:
        raise ValueError(f"--warmup ({o.warmup}) must be smaller than --steps ({o.steps}) with the cosine schedule")
    if o.lr_schedule == "cosine" and 0 < o.decay_start < o.warmup:
        raise ValueError(f"--decay-start ({o.decay_start}) must be at least --warmup ({o.warmup}): the decay starts "
                         "after the warmup (0: at its end)")
    if not 256 <= o.vocab_size <= 65536:
        raise ValueError(f"--vocab-size {o.vocab_size}: must be from 256 to 65536")


# ---- the loop -------------------------------------------------------------------------------------

def train_loop(run, o, out="", config=None, loss_rows=None, elapsed_before=0.0):
    """Train run to o.steps in all, as train_gpt's loop: evaluate every --eval-every steps and at the
    end (or when --max-minutes is spent), printing a line and, with out, saving the run folder.
    Rank 0 alone evaluates, prints and writes."""
    loss_rows = loss_rows if loss_rows is not None else []
    lead = run.rank == 0
    start, first = time.time(), run.step
    tokens_per_step = o.batch * o.grad_accum * o.context
    while run.step < o.steps:
        lr = lr_at(run.step, o)
        loss = run.train_step()
        step = run.step
        now = time.time() - start
        out_of_time = o.max_minutes > 0 and elapsed_before + now >= 60.0 * o.max_minutes
        if run.world > 1 and o.max_minutes > 0:  # rank 0's clock decides for all
            flag = run.on_device([1 if out_of_time else 0])
            dist.broadcast(flag, 0)
            out_of_time = bool(flag.item())
        last = step == o.steps or out_of_time
        evaluation = run.evaluate() if lead and (step % o.eval_every == 0 or last) else None
        if lead:
            tokens_per_s = (step - first) * tokens_per_step / now if now > 0 else 0.0
            loss_rows.append(run_folder.loss_row(step, loss, lr, tokens_per_s, elapsed_before + now, evaluation))
        if evaluation:
            print(f"step {step}: loss {loss:.4f} train {evaluation.train:.4f} val {evaluation.val:.4f} "
                  f"val bpb {evaluation.val_bpb:.4f} {tokens_per_s:.0f} tokens/s", flush=True)
            if out:
                run.save(out, config, loss_rows)
        if run.world > 1 and (step % o.eval_every == 0 or last):
            dist.barrier()  # the others wait while rank 0 evaluates and saves
        if out_of_time:
            if lead:
                print(f"the time budget (--max-minutes {o.max_minutes}) is spent: stopped after step {step}", flush=True)
            break
    return loss_rows


def fresh_config(o, run):
    if o.arch != "gpt2":  # a Hugging Face folder of that model_type, the run's own object as "tapegrad"
        return dict(run.model.config_dict, tapegrad={"train": train_config(o), "kernels": "pytorch"})
    return {"model": config_of(o, run.tokenizer.vocab_size), "train": train_config(o), "kernels": "pytorch"}

