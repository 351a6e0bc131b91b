# make_tiny_gpt2.py — a tiny Hugging Face GPT-2 folder for tests of runs from GPT-2 (seconds to
# train): examples/pytorch/tapegrad_twin/hf_gpt2.py's GPT2LMHeadModel with random weights (2 layers,
# width 16, 32 positions, dropout 0.1), saved with "transformer." names, and a small GPT-2-style
# vocabulary (examples/pytorch/tapegrad_twin/small_gpt2_vocab.py): the 256 bytes in reverse order
# (so no id is assumed to be its byte), a few merged English pieces, then "<|endoftext|>".
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/make_tiny_gpt2.py OUT_FOLDER [--seed 3]
import argparse
import os

import torch

from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.small_gpt2_vocab import write_small_vocab


def main():
    p = argparse.ArgumentParser(description="Write a tiny Hugging Face GPT-2 folder with a small vocabulary.")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=3)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    vocab_size = write_small_vocab(args.out)
    torch.manual_seed(args.seed)
    config = dict(model_type="gpt2", vocab_size=vocab_size, n_positions=32, n_embd=16, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():  # GPT-2's initialisation of the embeddings (nn.Embedding's is N(0, 1))
        model.transformer.wte.weight.normal_(0.0, 0.02)
        model.transformer.wpe.weight.normal_(0.0, 0.01)
    model.save_pretrained(args.out, prefixed=True)
    print(f"wrote {args.out}/: a GPT-2 of {vocab_size} tokens, 2 layers of width 16")


if __name__ == "__main__":
    main()
