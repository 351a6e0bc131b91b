# train_gpt.py — the training loop of tapegrad's examples/train_gpt in PyTorch, step for step:
# the same tokenizer, split, batches, learning-rate schedule, AdamW groups and clipping, so the
# same seed gives the same losses (tests/reference/make_train_reference.py checks tapegrad
# against it).
#
#     /usr/bin/python3 examples/pytorch/train_gpt.py --data input.txt --steps 2000
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F

import bpe
from gpt_model import GPTModel

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

    def to_json(self):
        return {"type": "char", "kind": "utf8", "symbols": [ord(c) for c in self.vocab]}


class BpeTokenizer:
    """Byte-level BPE (bpe.py) on the text's UTF-8 bytes."""

    def __init__(self, tok):
        self.tok = tok
        self.vocab_size = tok.vocab_size

    def encode(self, text):
        return self.tok.encode(text.encode("utf-8"))

    def decode(self, ids):
        return self.tok.decode(ids).decode("utf-8", errors="replace")

    def to_json(self):
        return json.loads(self.tok.to_json())


def tokenizer_from_json(doc, source):
    if doc.get("type") == "bpe":
        return BpeTokenizer(bpe.Tokenizer.from_json(json.dumps(doc), source))
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


def lr_at(step, o):
    """tapegrad's optim::warmup_cosine factor times the peak lr (or the constant lr)."""
    if o.lr_schedule == "constant":
        return o.lr
    min_factor = o.min_lr / o.lr if o.lr > 0 else 0.0
    if step < o.warmup:
        factor = step / o.warmup
    elif step >= o.steps:
        factor = min_factor
    else:
        progress = (step - o.warmup) / (o.steps - o.warmup)
        factor = min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return o.lr * factor


def weight_decay_groups(model, weight_decay):
    """Decay on tensors of 2 or more dims (matrices, embeddings), none on biases and LayerNorm."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def config_of(o, vocab_size):
    return dict(vocab_size=vocab_size, context_length=o.context, emb_dim=o.emb_dim, n_heads=o.heads,
                n_layers=o.layers, drop_rate=o.dropout, qkv_bias=False, tie_weights=o.tie_weights)


class Run:
    """A fresh run: the model, the optimizer and the batch generator, as tapegrad's Trainer."""

    def __init__(self, o, text):
        self.o = o
        if o.tokenizer == "bpe":  # merges from the first 90% of the bytes; the two splits encoded apart
            data = text.encode("utf-8")
            n = int(0.9 * len(data))
            self.tokenizer = BpeTokenizer(bpe.Tokenizer(bpe.train(data[:n], o.vocab_size)))
            self.train_data = torch.tensor(self.tokenizer.tok.encode(data[:n]), dtype=torch.long)
            self.val_data = torch.tensor(self.tokenizer.tok.encode(data[n:]), dtype=torch.long)
        else:
            self.tokenizer = CharTokenizer(char_vocab(text))
            ids = torch.tensor(self.tokenizer.encode(text), dtype=torch.long)
            self.train_data, self.val_data = split_train_val(ids)
        torch.manual_seed(o.seed)
        self.model = GPTModel(config_of(o, self.tokenizer.vocab_size))
        self.optimizer = torch.optim.AdamW(weight_decay_groups(self.model, o.weight_decay), lr=o.lr)
        self.batch_gen = torch.Generator().manual_seed(o.seed)
        self.step = 0

    def train_step(self):
        for group in self.optimizer.param_groups:
            group["lr"] = lr_at(self.step, self.o)
        b, n = self.o.batch, self.o.grad_accum
        x, y = get_batch(self.train_data, n * b, self.o.context, self.batch_gen)  # n micro-batches of b
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        step_loss = 0.0
        for k in range(n):
            loss = F.cross_entropy(self.model(x[k * b:(k + 1) * b]).flatten(0, 1), y[k * b:(k + 1) * b].flatten())
            (loss if n == 1 else loss / n).backward()
            step_loss += loss.item() / n
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
        self.model.eval()
        gen = torch.Generator().manual_seed(EVAL_SEED)
        losses = []
        for data in (self.train_data, self.val_data):
            total = 0.0
            for _ in range(self.o.eval_batches):
                x, y = get_batch(data, self.o.batch, self.o.context, gen)
                total += F.cross_entropy(self.model(x).flatten(0, 1), y.flatten()).item()
            losses.append(total / self.o.eval_batches)
        self.model.train()
        return losses


def options(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", required=True)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--emb-dim", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=2e-4)
    p.add_argument("--lr-schedule", choices=["constant", "cosine"], default="cosine")
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--tokenizer", choices=["char", "bpe"], default="char")
    p.add_argument("--tie-weights", action="store_true")
    p.add_argument("--on-nonfinite", choices=["error", "skip"], default="error")
    p.add_argument("--vocab-size", type=int, default=1024)
    return p.parse_args(argv)


def main():
    o = options()
    if o.threads:
        torch.set_num_threads(o.threads)
    with open(o.data, encoding="utf-8") as f:
        text = f.read()
    run = Run(o, text)
    start = time.time()
    for step in range(o.steps):
        loss = run.train_step()
        if (step + 1) % o.eval_every == 0 or step + 1 == o.steps:
            train_loss, val_loss = run.evaluate()
            elapsed = time.time() - start
            print(f"step {step + 1}: loss {loss:.4f} train {train_loss:.4f} val {val_loss:.4f} "
                  f"{(step + 1) * o.batch * o.grad_accum * o.context / elapsed:.0f} tokens/s", flush=True)


if __name__ == "__main__":
    main()
