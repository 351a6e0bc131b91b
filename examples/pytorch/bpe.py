# bpe.py — byte-level BPE on the command line: train merges on a file, encode a file to ids, decode
# ids to bytes, as ./build/examples/bpe does. The tokenizer is tapegrad_twin/bpe.py, the twin of
# tapegrad's tokenizers/bpe.h.
#
#     /usr/bin/python3 examples/pytorch/bpe.py train --data input.txt --vocab-size 512 --out tokenizer.json
#     /usr/bin/python3 examples/pytorch/bpe.py encode --tokenizer tokenizer.json input.txt > ids.txt
#     /usr/bin/python3 examples/pytorch/bpe.py decode --tokenizer tokenizer.json ids.txt
import argparse
import sys

from tapegrad_twin.bpe import Tokenizer, train


def main():
    parser = argparse.ArgumentParser(description="byte-level BPE: train, encode, decode")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", required=True)
    t.add_argument("--vocab-size", type=int, default=1024)
    t.add_argument("--out", default="tokenizer.json")
    for name in ("encode", "decode"):
        p = sub.add_parser(name)
        p.add_argument("--tokenizer", default="tokenizer.json")
        p.add_argument("file")
    args = parser.parse_args()
    if args.command == "train":
        with open(args.data, "rb") as f:
            tok = Tokenizer(train(f.read(), args.vocab_size))
        tok.save(args.out)
        print(f"bpe train: {len(tok.merges)} merges learned; wrote {args.out}", file=sys.stderr)
    elif args.command == "encode":
        with open(args.file, "rb") as f:
            print(" ".join(map(str, Tokenizer.load(args.tokenizer).encode(f.read()))))
    else:
        with open(args.file) as f:
            sys.stdout.buffer.write(Tokenizer.load(args.tokenizer).decode([int(w) for w in f.read().split()]))


if __name__ == "__main__":
    main()
