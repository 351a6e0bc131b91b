# make_tiny_gpt2.py — a tiny Hugging Face GPT-2 folder for tests of runs from GPT-2 (seconds to
# train): examples/pytorch/hf_gpt2.py's GPT2LMHeadModel with random weights (2 layers, width 16,
# 32 positions, dropout 0.1), saved with "transformer." names, and a small GPT-2-style
# vocabulary: the 256 bytes in reverse order (so no id is assumed to be its byte), a few merged
# English pieces, then "<|endoftext|>".
#
#     /usr/bin/python3 tests/python/make_tiny_gpt2.py OUT_FOLDER [--seed 3]
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "pytorch"))
from gpt2_tokenizer import END_OF_TEXT, bytes_to_unicode  # noqa: E402
from hf_gpt2 import GPT2LMHeadModel  # noqa: E402

# merges in rank order ("Ġ" is a space in GPT-2's byte alphabet); each part a byte or made before
MERGES = ["Ġ t", "h e", "Ġt he", "Ġ Ġ", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "Ġ a", "n d", "Ġa nd", "i n",
          "o u", "Ġ s", "e r", "Ġ o", "Ġ b", "l l", "o n"]


def write_small_vocab(folder):
    """vocab.json and merges.txt of the small vocabulary; returns its size."""
    table = bytes_to_unicode()
    vocab = {table[b]: 255 - b for b in range(256)}
    for merge in MERGES:
        vocab["".join(merge.split(" "))] = len(vocab)
    vocab[END_OF_TEXT] = len(vocab)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(m + "\n" for m in MERGES))
    return len(vocab)


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
