#!/usr/bin/python3
"""Make tests/reference/bpe_reference.json: byte-level BPE by Python, for tokenizers/bpe.h.

Run from the repository root (standard library only):

    PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_bpe_reference.py

The output is committed; tests/tokenizers/test_bpe.cpp reads it and never runs Python. Every text
is generated here from fixed seeds (no file is read). Byte strings are stored as hex.
  split_cases    inputs that stress the pre-split and their chunks, by re.findall itself
  training_text  ~30 KB of English-like text (words, capitals, digits, contractions, runs of
                 spaces, newlines, UTF-8 words)
  trainings      the merges examples/pytorch/tapegrad_twin/bpe.py learns from it at vocab 300, 500 and 65536
                 (the last stops early, when no pair occurs twice)
  encode_text    another ~5 KB, with unseen words and random high bytes; encodings: its ids at
                 vocab 500
"""
import json
import os
import random

from tapegrad_twin import bpe

HERE = os.path.dirname(os.path.abspath(__file__))

WORDS = ("the of and to a in is it you that he was for on are with as I his they be at one have this from or "
         "had by not word but what some we can out other were all there when up use your how said an each she "
         "which do their time if will way about many then them write would like so these her long make thing see "
         "him two has look more day could go come did number sound no most people my over know water than call "
         "first who may down side been now find any new work part take get place made live where after back little "
         "only round man year came show every good me give our under name very through just form sentence great "
         "think say help low line differ turn cause much mean before move right boy old too same tell does set "
         "three want air well also play small end put home read hand port large spell add even land here must big "
         "high such follow act why ask men change went light kind off need house picture try us again animal point "
         "mother world near build self earth father").split()
SPECIAL = ["café", "naïve", "東京", "Zürich", "don't", "it's", "we're", "they've", "I'm", "you'll", "he'd", "O'Neil"]
PUNCT = [".", ",", "!", "?", ";", ":", " -", "...", "?!", "'"]


def sentence(rng):
    n = rng.randint(3, 14)
    words = []
    for _ in range(n):
        r = rng.random()
        if r < 0.06:
            words.append(rng.choice(SPECIAL))
        elif r < 0.10:
            words.append(str(rng.randint(0, 10 ** rng.randint(1, 5))))
        else:
            words.append(WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)])
    words[0] = words[0][:1].upper() + words[0][1:]
    text = " ".join(words) + rng.choice(PUNCT[:5])
    if rng.random() < 0.1:
        text = text.replace(" ", "  ", 1)
    return text


def english_text(seed, size):
    rng = random.Random(seed)
    parts = []
    while sum(len(p.encode()) for p in parts) < size:
        parts.append(sentence(rng))
        parts.append(rng.choice([" ", " ", " ", "\n", "\n\n", "  "]))
    return "".join(parts).encode("utf-8")


def split_inputs(rng):
    hand = [b"", b"a  b", b"hello world  ", b"  \n\n x", b"don't", b"?!'s", b" 123abc", b"\t\t", b"end ",
            b"\xff\xfe a", b"'S 'x 'l 're'reve", b"a\x1cb\x1f c", b"x \x0b\x0c y", b"\r\n\r\n", b"''''", b" ' s"]
    pieces = [b"a", b"Z", b"q", b"7", b"42", b"'", b"'s", b"'t", b"'re", b"'ve", b"'m", b"'ll", b"'d", b"'S", b"'x",
              b" ", b"  ", b"   ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1f", b"\x00", b"\x7f", b"\x80",
              b"\xc3\xa9", b"\xff", b".", b",", b"!?", b"-", b"(", b"_", b"word", b" word", b"  word", b"\n\n"]
    cases = list(hand)
    for _ in range(300):
        data = b""
        while len(data) < rng.randint(0, 60):
            data += rng.choice(pieces) if rng.random() < 0.8 else bytes([rng.randrange(256)])
        cases.append(data)
    return cases


def main():
    rng = random.Random(1)
    split_cases = [{"input": s.hex(), "chunks": [c.hex() for c in bpe.split_chunks(s)]} for s in split_inputs(rng)]
    training_text = english_text(2, 30000)
    trainings = [{"vocab_size": v, "merges": [list(m) for m in bpe.train(training_text, v)]} for v in (300, 500, 65536)]
    extra = random.Random(3)
    encode_text = english_text(4, 5000) + bytes(extra.randrange(128, 256) for _ in range(64)) + b" unseenword zyzzyva"
    tok500 = bpe.Tokenizer(trainings[1]["merges"])
    ids = tok500.encode(encode_text)
    assert tok500.decode(ids) == encode_text
    doc = {"pattern": bpe.PATTERN_NAME, "split_cases": split_cases, "training_text": training_text.hex(),
           "trainings": trainings, "encode_text": encode_text.hex(), "encodings": [{"vocab_size": 500, "ids": ids}]}
    out = os.path.join(HERE, "bpe_reference.json")
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: {os.path.getsize(out)} bytes; {len(split_cases)} split cases; "
          f"merges {[len(t['merges']) for t in trainings]}")


if __name__ == "__main__":
    main()
