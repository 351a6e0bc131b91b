# gpt2_tokenizer.py — GPT-2's tokenizer on the command line: the ids of a file, as
# ./build/examples/bpe encode --tokenizer DIR writes them. The tokenizer is
# tapegrad_twin/gpt2_tokenizer.py, the twin of tapegrad's tokenizers/gpt2_tokenizer.h.
#
#     /usr/bin/python3 examples/pytorch/gpt2_tokenizer.py encode --tokenizer .cache/gpt2-tokenizer FILE
import argparse
import sys

from tapegrad_twin.gpt2_tokenizer import Gpt2Tokenizer


def main():
    p = argparse.ArgumentParser(description="GPT-2's tokenizer: the ids of a file, as ./build/examples/bpe encode")
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--tokenizer", required=True, help="a folder with vocab.json + merges.txt (or encoder.json + vocab.bpe)")
    e.add_argument("--allow-special", action="store_true", help='"<|endoftext|>" in the text is its special token')
    e.add_argument("file")
    args = p.parse_args()
    try:
        tok = Gpt2Tokenizer.from_folder(args.tokenizer)
        with open(args.file, "rb") as f:
            print(" ".join(map(str, tok.encode(f.read(), args.allow_special))))
    except (OSError, ValueError) as e:
        sys.exit(f"gpt2_tokenizer.py: {e}")


if __name__ == "__main__":
    main()
