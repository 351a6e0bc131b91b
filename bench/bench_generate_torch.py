# bench_generate_torch.py — bench/bench_generate.cpp in PyTorch: the same untrained model
# (examples/pytorch/tapegrad_twin/gpt_model.py from the same seed, so the same weights), the same
# prompt and vocabulary, greedy decoding, the same flags and JSON line.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 bench/bench_generate_torch.py --config medium --threads 1 --new-tokens 500
#     PYTHONPATH=examples/pytorch /usr/bin/python3 bench/bench_generate_torch.py --init-from DIR --threads 1 --prompt-tokens 100 --new-tokens 200
#
# The loop is the notebooks' recompute-the-context one (generate_text_simple): under
# torch.no_grad() and model.eval(), each step runs the model on the window, takes the last
# position's logits, their argmax, and appends it. The window is the last context_length tokens
# (idx[:, -context_length:]); with --keep K < context_length it restarts from the last K tokens
# once full, as tapegrad's cache does (bench_generate --mode cache --keep K writes the same ids).
# PyTorch has no KV cache in this model: every step recomputes the window.
#
# With --init-from DIR, bench_generate --init-from's twin: the Hugging Face GPT-2 folder's model
# in the HF layout twin (tapegrad_twin/hf_gpt2.py), the prompt the first P tokens of the built-in
# corpus in GPT-2's tokens (tapegrad_twin/gpt2_tokenizer.py), and with --mode cache
# (the default there) HF's KV cache: the prompt's forward with use_cache, then one position per
# step with past_key_values, as transformers' generate runs it. Once the window is full it
# restarts from the last --keep tokens (default n_positions / 2), as tapegrad's cache does, so
# the ids equal bench_generate --init-from's. A Llama / Qwen folder is read by the twin
# tapegrad_twin/hf_llama.py (its cache keeps the kv heads, concatenated step by step as
# transformers' DynamicCache does), the prompt the corpus's first P bytes as ids, as bench_generate's.
#
# The vocabulary is the built-in corpus's characters, which it gets from the build
# (<--build>/examples/train_gpt --write-corpus), as bench_gpt_torch.py. The thread count goes
# into OMP_NUM_THREADS and BLIS_NUM_THREADS before torch is imported. Fields as bench_generate's;
# peak_rss_mb includes the Python interpreter and torch's libraries.
import argparse
import json
import os
import resource
import statistics
import struct
import sys
import time

from bench_gpt_torch import CONFIGS, blas_description, builtin_corpus, import_torch  # beside this script

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def flags(argv=None):
    p = argparse.ArgumentParser(description="Generation speed of the GPT in PyTorch, as one JSON line.")
    p.add_argument("--config", choices=sorted(CONFIGS), default="medium")
    p.add_argument("--mode", choices=["recompute", "cache"], default=None,
                   help="recompute the window each step, or (--init-from only) HF's KV cache (default there)")
    p.add_argument("--init-from", help="a Hugging Face GPT-2 folder (its model and tokenizer) or Llama / Qwen folder "
                                       "(its model, the corpus's bytes as ids) instead of --config's")
    p.add_argument("--threads", type=int, default=0, help="threads (0 = all cores)")
    p.add_argument("--new-tokens", type=int, default=500, help="tokens to write (timed)")
    p.add_argument("--prompt-tokens", type=int, default=16, help="the prompt: this many characters of the corpus")
    p.add_argument("--keep", type=int, default=0,
                   help="past the context, restart the window from this many tokens (0 = slide)")
    p.add_argument("--warmup", type=int, default=4, help="tokens written untimed first")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="tapegrad's build folder, for the built-in corpus (default: %(default)s)")
    o = p.parse_args(argv)
    if o.new_tokens < 1 or o.prompt_tokens < 1 or o.keep < 0 or o.warmup < 0 or o.threads < 0:
        p.error("--new-tokens and --prompt-tokens must be >= 1; --keep, --warmup and --threads >= 0")
    if not o.init_from and o.keep > CONFIGS[o.config]["context"]:
        p.error(f"--keep ({o.keep}) exceeds the context ({CONFIGS[o.config]['context']})")
    if o.mode == "cache" and not o.init_from:
        p.error("--mode cache: only with --init-from (the notebook model has no KV cache)")
    o.mode = o.mode or ("cache" if o.init_from else "recompute")
    return o


def generate_text_simple(torch, model, idx, max_new_tokens, context, keep, on_token=None):
    """idx (1,P) -> (1, P + max_new_tokens), greedy; the window idx[:, start:] as models/generation/generate.h's."""
    start = max(0, idx.shape[1] - context)
    for _ in range(max_new_tokens):
        T = idx.shape[1]
        if T - start > context:
            start = T - keep
        with torch.no_grad():
            logits = model(idx[:, start:])[:, -1, :]
        idx_next = torch.argmax(logits, dim=-1, keepdim=True)
        idx = torch.cat((idx, idx_next), dim=1)
        if on_token:
            on_token()
    return idx


def generate_with_cache(torch, model, idx, max_new_tokens, context, keep, on_token=None):
    """The same, with HF's past_key_values: each step runs the newest position only; once the
    window is full, one forward of its last `keep` tokens refills the cache."""
    ids = idx
    with torch.no_grad():
        window = ids[:, -context:]
        logits, past = model(window, use_cache=True)
        for _ in range(max_new_tokens):
            idx_next = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            ids = torch.cat((ids, idx_next), dim=1)
            if past[0][0].shape[2] + 1 > context:
                logits, past = model(ids[:, -keep:], use_cache=True)
            else:
                logits, past = model(idx_next, past_key_values=past, use_cache=True)
            if on_token:
                on_token()
    return ids


def timed_generation(run, torch, model, idx, o, context, keep):
    """--warmup tokens untimed, then --new-tokens timed one by one: (ids, seconds per step, total)."""
    if o.warmup:
        run(torch, model, idx, o.warmup, context, keep)
    seconds, last = [], [time.perf_counter()]

    def on_token():
        now = time.perf_counter()
        seconds.append(now - last[0])
        last[0] = now

    start = last[0]
    out = run(torch, model, idx, o.new_tokens, context, keep, on_token)
    return out, seconds, last[0] - start


def decode_tokens_per_s(seconds, total):
    """Tokens per second over the steps after the first (the first also runs the prompt), as
    bench_generate's decode_tokens_per_s."""
    if len(seconds) < 2:
        return round(len(seconds) / total, 1)
    return round((len(seconds) - 1) / (total - seconds[0]), 1)


def fnv1a_hex(ids):
    h = 14695981039346656037
    for byte in struct.pack(f"<{len(ids)}q", *ids):
        h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return f"{h:016x}"


def main():
    o = flags()
    torch, threads = import_torch(o.threads)
    if o.init_from:
        return main_init_from(o, torch, threads)
    from tapegrad_twin.gpt_model import GPTModel
    from tapegrad_twin.training import char_vocab

    c = CONFIGS[o.config]
    text = builtin_corpus(o.build)
    vocab = char_vocab(text)
    index = {ch: i for i, ch in enumerate(vocab)}
    prompt = [index[ch] for ch in text[:o.prompt_tokens]]
    cfg = dict(vocab_size=len(vocab), context_length=c["context"], emb_dim=c["emb_dim"], n_heads=c["heads"],
               n_layers=c["layers"], drop_rate=0.0, qkv_bias=False)
    torch.manual_seed(o.seed)
    model = GPTModel(cfg)
    model.eval()
    keep = o.keep or c["context"]
    idx = torch.tensor([prompt], dtype=torch.int64)
    out, seconds, total = timed_generation(generate_text_simple, torch, model, idx, o, c["context"], keep)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    ids = out[0, len(prompt):].tolist()
    print(json.dumps({
        "bench": "pytorch", "config": o.config, "mode": o.mode, "threads": threads, "prompt_tokens": len(prompt),
        "new_tokens": o.new_tokens, "context": c["context"], "keep": keep, "vocab_size": len(vocab),
        "params": sum(p.numel() for p in model.parameters()), "tokens_per_s": round(o.new_tokens / total, 1),
        "decode_tokens_per_s": decode_tokens_per_s(seconds, total),
        "ms_per_token_median": round(statistics.median(seconds) * 1e3, 3), "seconds_total": round(total, 3),
        "peak_rss_mb": round(rss, 1), "ids_hash": fnv1a_hex(ids), "first_ids": ids[:16], "ids": ids,
        "blas": blas_description(), "torch": torch.__version__,
    }), flush=True)


def main_init_from(o, torch, threads):
    from tapegrad_twin.gpt2_tokenizer import Gpt2Tokenizer
    from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
    from tapegrad_twin.hf_llama import FAMILY, LlamaForCausalLM

    with open(os.path.join(o.init_from, "config.json")) as f:
        llama = json.load(f).get("model_type") in FAMILY
    corpus = builtin_corpus(o.build).encode("utf-8")
    ids = list(corpus) if llama else Gpt2Tokenizer.from_folder(o.init_from).encode(corpus)
    if len(ids) < o.prompt_tokens:
        sys.exit(f"bench_generate_torch.py: --prompt-tokens {o.prompt_tokens}: the corpus has {len(ids)} tokens")
    prompt = ids[:o.prompt_tokens]
    if llama:
        model = LlamaForCausalLM.from_pretrained(o.init_from)  # in eval mode
        context = model.config.max_position_embeddings
    else:
        model = GPT2LMHeadModel.from_pretrained(o.init_from)  # in eval mode
        context = model.config.get("n_positions", 1024)
    if o.keep > context:
        sys.exit(f"bench_generate_torch.py: --keep ({o.keep}) exceeds the context ({context})")
    keep = o.keep or (context // 2 if o.mode == "cache" else context)
    run = generate_with_cache if o.mode == "cache" else generate_text_simple
    idx = torch.tensor([prompt], dtype=torch.int64)
    out, seconds, total = timed_generation(run, torch, model, idx, o, context, keep)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    new = out[0, len(prompt):].tolist()
    print(json.dumps({
        "bench": "pytorch", "config": "init-from " + o.init_from, "mode": o.mode, "threads": threads,
        "prompt_tokens": len(prompt), "new_tokens": o.new_tokens, "context": context, "keep": keep,
        "vocab_size": model.config.vocab_size if llama else model.config.get("vocab_size"),
        "params": sum(p.numel() for p in model.parameters()),
        "tokens_per_s": round(o.new_tokens / total, 1), "decode_tokens_per_s": decode_tokens_per_s(seconds, total),
        "ms_per_token_median": round(statistics.median(seconds) * 1e3, 3),
        "seconds_total": round(total, 3), "peak_rss_mb": round(rss, 1), "ids_hash": fnv1a_hex(new),
        "first_ids": new[:16], "ids": new, "blas": blas_description(), "torch": torch.__version__,
    }), flush=True)


if __name__ == "__main__":
    main()
