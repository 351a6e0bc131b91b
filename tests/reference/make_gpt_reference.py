# make_gpt_reference.py — PyTorch 1.13's GPT (examples/pytorch/tapegrad_twin/gpt_model.py) from a seed: the
# state_dict, the logits and cross-entropy loss on given token ids, and every parameter's
# gradient, as test data for tests/models/test_gpt.cpp.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_gpt_reference.py
#
# Writes tests/reference/gpt_torch.json. Floating values are the 16 hex digits of each value's
# float64 bit pattern (float32 widened exactly). Token ids come from torch.randint after
# manual_seed(ids_seed); dropout inside forward draws after manual_seed(ids_seed + 1).
import json
import os
import struct

import torch
import torch.nn.functional as F

from tapegrad_twin.gpt_model import GPTModel, generate

HERE = os.path.dirname(os.path.abspath(__file__))


def enc(t):
    return {"shape": list(t.shape), "values": [struct.pack(">d", float(v)).hex() for v in t.detach().double().flatten().tolist()]}


CASES = []


def case(case_id, seed, cfg, batch, num_tokens, ids_seed=1000, train=True):
    torch.manual_seed(seed)
    model = GPTModel(cfg)
    model.train(train)
    torch.manual_seed(ids_seed)
    idx = torch.randint(0, cfg["vocab_size"], (batch, num_tokens + 1))
    x, y = idx[:, :-1], idx[:, 1:]
    torch.manual_seed(ids_seed + 1)
    logits = model(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    loss.backward()
    CASES.append({"id": case_id, "seed": seed, "config": cfg, "train": train, "ids_seed": ids_seed,
                  "x": x.flatten().tolist(), "y": y.flatten().tolist(), "batch": batch, "num_tokens": num_tokens,
                  "repr": repr(model),
                  "state_dict": [[k, enc(v)] for k, v in model.state_dict().items()],
                  "num_parameters": sum(p.numel() for p in model.parameters()),
                  "logits": enc(logits), "loss": enc(loss),
                  "grads": [[k, enc(p.grad)] for k, p in model.named_parameters()]})


GENERATIONS = []


def generation(case_id, seed, cfg, prompt, max_new_tokens, gen_seed, **options):
    torch.manual_seed(seed)
    model = GPTModel(cfg).eval()
    gen = torch.Generator().manual_seed(gen_seed)
    out = generate(model, torch.tensor(prompt), max_new_tokens, generator=gen, **options)
    GENERATIONS.append({"id": case_id, "seed": seed, "config": cfg, "prompt": prompt, "max_new_tokens": max_new_tokens,
                        "gen_seed": gen_seed, "options": options, "tokens": out.tolist()})


BATCHES = []


def batches(seed, n, batch, context, count):
    """The window starts the training loop draws: ix = randint(0, n - context - 1, (batch,), gen)."""
    gen = torch.Generator().manual_seed(seed)
    starts = [torch.randint(0, n - context - 1, (batch,), generator=gen).tolist() for _ in range(count)]
    BATCHES.append({"seed": seed, "n": n, "batch": batch, "context": context, "starts": starts})


def main():
    tiny = dict(vocab_size=11, context_length=8, emb_dim=8, n_heads=2, n_layers=2, drop_rate=0.0, qkv_bias=False)
    case("tiny", 123, tiny, batch=2, num_tokens=8)
    case("tiny_short_input_eval", 7, tiny, batch=3, num_tokens=5, train=False)
    case("dropout_qkv_bias", 42, dict(tiny, drop_rate=0.1, qkv_bias=True, n_layers=1, n_heads=4), batch=2, num_tokens=6)
    case("wider", 1337, dict(vocab_size=17, context_length=16, emb_dim=16, n_heads=4, n_layers=3, drop_rate=0.0,
                             qkv_bias=False), batch=2, num_tokens=16)
    # generation: the window slides past context_length (8) within these runs
    g = dict(vocab_size=23, context_length=8, emb_dim=16, n_heads=2, n_layers=2, drop_rate=0.0, qkv_bias=False)
    generation("greedy", 5, g, [[1, 2, 3]], 12, 0, temperature=0.0)
    generation("sample_t1", 5, g, [[1, 2, 3], [4, 5, 6]], 12, 11)
    generation("temperature_0.7_top_k_5", 5, g, [[7]], 12, 12, temperature=0.7, top_k=5)
    generation("top_p_0.6", 5, g, [[7, 8], [9, 10]], 12, 13, top_p=0.6)
    generation("top_k_3_top_p_0.9_t_1.5", 6, g, [[0, 0, 0, 0]], 12, 14, temperature=1.5, top_k=3, top_p=0.9)
    batches(1337, 1000, 4, 16, 3)
    batches(7, 50, 8, 5, 2)
    path = os.path.join(HERE, "gpt_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_gpt_reference.py", "torch_version": torch.__version__,
                   "cases": CASES, "generations": GENERATIONS, "batches": BATCHES}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {path}")


main()
