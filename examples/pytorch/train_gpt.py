# train_gpt.py — the training loop of tapegrad's examples/train_gpt in PyTorch, step for step:
# the same tokenizer, split, batches, learning-rate schedule, AdamW groups and clipping, so the
# same seed gives the same losses (tests/reference/make_train_reference.py checks tapegrad
# against it).
#
#     /usr/bin/python3 examples/pytorch/train_gpt.py --data input.txt --steps 2000
import argparse
import math
import time

import torch
import torch.nn.functional as F

from gpt_model import GPTModel

EVAL_SEED = 2024  # Trainer::kEvalSeed


def char_vocab(text):
    """The sorted set of the text's characters (tapegrad's CharTokenizer for UTF-8 text)."""
    return sorted(set(text))


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
                n_layers=o.layers, drop_rate=o.dropout, qkv_bias=False)


class Run:
    """A fresh run: the model, the optimizer and the batch generator, as tapegrad's Trainer."""

    def __init__(self, o, text):
        self.o = o
        self.vocab = char_vocab(text)
        index = {ch: i for i, ch in enumerate(self.vocab)}
        ids = torch.tensor([index[ch] for ch in text], dtype=torch.long)
        self.train_data, self.val_data = split_train_val(ids)
        torch.manual_seed(o.seed)
        self.model = GPTModel(config_of(o, len(self.vocab)))
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
        if self.o.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.o.grad_clip, error_if_nonfinite=True)
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
