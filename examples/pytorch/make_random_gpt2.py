# make_random_gpt2.py — a Hugging Face GPT-2 folder with random weights (tapegrad_twin/hf_gpt2.py's
# GPT2LMHeadModel), initialised as GPT-2 is initialised (GPT2PreTrainedModel._init_weights, as
# documented), for runs and benchmarks of GPT-2's shape where the real weights cannot be downloaded:
#   every Conv1D weight and both embeddings ~ N(0, 0.02); biases 0; LayerNorms weight 1, bias 0;
#   the residual projections (attn.c_proj, mlp.c_proj) ~ N(0, 0.02 / sqrt(2 * n_layer)).
# The tokenizer files (vocab.json + merges.txt, or encoder.json + vocab.bpe) are copied from
# --tokenizer, so the folder is what `train_gpt --init-from` and `generate --ckpt` read; by default
# from the repository's .cache/gpt2-tokenizer/, where `bash .ci/install-deps.sh` puts GPT-2's.
#
#     /usr/bin/python3 examples/pytorch/make_random_gpt2.py gpt2-random
#     /usr/bin/python3 examples/pytorch/make_random_gpt2.py small --layers 4 --emb-dim 256 --heads 4 --tokenizer DIR
import argparse
import math
import os
import shutil

import torch

from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel

TOKENIZER_PAIRS = (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))
# where .ci/install-deps.sh fetches GPT-2's tokenizer files
DEFAULT_TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".cache", "gpt2-tokenizer")


def init_like_gpt2(model, n_layer):
    """GPT-2's initialisation, in place."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "lm_head.weight":
                continue  # tied to transformer.wte.weight
            if name.endswith(".bias"):
                p.zero_()
            elif ".ln_" in name:
                p.fill_(1.0)
            elif name.endswith("c_proj.weight"):
                p.normal_(0.0, 0.02 / math.sqrt(2 * n_layer))
            else:
                p.normal_(0.0, 0.02)


def tokenizer_pair(source, given):
    """The pair of GPT-2's tokenizer files in source; a one-line exit naming the folder when it has none."""
    for pair in TOKENIZER_PAIRS:
        if all(os.path.isfile(os.path.join(source, f)) for f in pair):
            return pair
    hint = "" if given else " (fetch them with `bash .ci/install-deps.sh`, or give --tokenizer DIR)"
    raise SystemExit(f"make_random_gpt2.py: --tokenizer {os.path.normpath(source)}: has neither vocab.json + "
                     f"merges.txt nor encoder.json + vocab.bpe{hint}")


def main():
    p = argparse.ArgumentParser(description="Write a GPT-2 folder with GPT-2's initialisation.")
    p.add_argument("out")
    p.add_argument("--tokenizer", default=None,
                   help="a folder with GPT-2's tokenizer files (default: the repository's .cache/gpt2-tokenizer, "
                        "where .ci/install-deps.sh puts them)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--emb-dim", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--positions", type=int, default=1024)
    p.add_argument("--vocab-size", type=int, default=50257)
    p.add_argument("--seed", type=int, default=1337)
    args = p.parse_args()
    if args.emb_dim % args.heads != 0:
        raise SystemExit(f"--emb-dim {args.emb_dim} is not a multiple of --heads {args.heads}")
    source = args.tokenizer or DEFAULT_TOKENIZER
    pair = tokenizer_pair(source, given=args.tokenizer is not None)  # checked before anything is written
    os.makedirs(args.out, exist_ok=True)
    for f in pair:
        shutil.copyfile(os.path.join(source, f), os.path.join(args.out, f))
    torch.manual_seed(args.seed)
    config = dict(model_type="gpt2", vocab_size=args.vocab_size, n_positions=args.positions, n_ctx=args.positions,
                  n_embd=args.emb_dim, n_layer=args.layers, n_head=args.heads)
    model = GPT2LMHeadModel(config)
    init_like_gpt2(model, args.layers)
    model.save_pretrained(args.out, prefixed=True)
    n = sum(t.numel() for name, t in model.named_parameters() if name != "lm_head.weight")
    print(f"wrote {args.out}/: a GPT-2 of {n / 1e6:.1f}M parameters with random weights (seed {args.seed})")


if __name__ == "__main__":
    main()
