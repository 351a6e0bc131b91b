# bench_evaluate_torch.py — bench/bench_evaluate.cpp's twin in PyTorch: multiple-choice scoring
# as lm-evaluation-harness runs it, each (context, ending) pair whole through the model (one
# forward of context + ending[:-1] per choice), the log-softmax and the sum of the ending's
# log-probabilities, under torch.no_grad() and model.eval().
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 bench/bench_evaluate_torch.py --threads 1 --items 20
#     PYTHONPATH=examples/pytorch /usr/bin/python3 bench/bench_evaluate_torch.py --init-from gpt2 --threads 2
#
# The model: GPT-2 124M's shape in Hugging Face's layout (examples/pytorch/tapegrad_twin/hf_gpt2.py),
# random (torch.manual_seed(--seed)), or a GPT-2 folder's (--init-from). The items: HellaSwag's shape,
# random ids (torch.randint) — other ids than bench_evaluate's, the same shapes. One untimed item
# first. The thread count goes into OMP_NUM_THREADS before torch is imported. Fields as
# bench_evaluate's (mode "whole").
import argparse
import json
import os
import statistics
import time


def main():
    p = argparse.ArgumentParser(description="Times multiple-choice scoring, each pair whole, in PyTorch.")
    p.add_argument("--init-from", default="")
    p.add_argument("--items", type=int, default=20)
    p.add_argument("--context-tokens", type=int, default=40)
    p.add_argument("--choices", type=int, default=4)
    p.add_argument("--choice-tokens", type=int, default=20)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    threads = a.threads or os.cpu_count()
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch
    torch.set_num_threads(threads)
    from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
    from tapegrad_twin.multiple_choice import loglikelihood
    torch.manual_seed(a.seed)
    if a.init_from:
        model = GPT2LMHeadModel.from_pretrained(a.init_from)
    else:
        model = GPT2LMHeadModel(dict(model_type="gpt2", vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12)).eval()
    vocab, n_positions = model.transformer.wte.num_embeddings, model.transformer.wpe.num_embeddings
    items = [(torch.randint(0, vocab, (a.context_tokens,)).tolist(),
              [torch.randint(0, vocab, (a.choice_tokens,)).tolist() for _ in range(a.choices)])
             for _ in range(a.items + 1)]
    tokens, ll_sum, seconds = 0, 0.0, []
    for i, (context, endings) in enumerate(items):
        start = time.perf_counter()
        lls = [loglikelihood(model, context, e, n_positions) for e in endings]
        if i:
            seconds.append(time.perf_counter() - start)
            tokens += sum(len(context) + len(e) - 1 for e in endings)
            ll_sum += sum(lls)
    total = sum(seconds)
    print(json.dumps({"bench": "pytorch", "torch": torch.__version__, "mode": "whole", "threads": threads,
                      "model": "init-from " + a.init_from if a.init_from else "gpt2-124m-shape random",
                      "items": a.items, "context_tokens": a.context_tokens, "choices": a.choices,
                      "choice_tokens": a.choice_tokens, "items_per_s": round(a.items / total, 3),
                      "ms_per_item": round(statistics.median(seconds) * 1e3, 2),
                      "tokens_per_s": round(tokens / total, 1), "seconds_total": round(total, 3),
                      "loglikelihood_sum": round(ll_sum, 3)}))


if __name__ == "__main__":
    main()
