# test_gpt2_tokenizer.py — examples/pytorch/tapegrad_twin/gpt2_tokenizer.py gives tapegrad's ids:
#
#   1. with GPT-2's files (.cache/gpt2-tokenizer, fetched by .ci/install-deps.sh; skipped with a
#      line saying so when they are absent): js-tiktoken's ids for every text of
#      tests/reference/gpt2_tokenizer_reference.json;
#   2. with a bpe binary (tapegrad's examples/bpe): the same ids as `bpe encode --tokenizer DIR`
#      on a mixed text (letters and numbers of many scripts, Unicode spaces, contractions, emoji,
#      invalid UTF-8 bytes), with GPT-2's files and with a small GPT-2-style vocabulary made here,
#      with and without --allow-special; and every text decodes back to its bytes;
#   3. merges.txt with "\r" or "\r\n" line ends gives the same ids as with "\n".
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/test_gpt2_tokenizer.py [build/examples/bpe]
import json
import os
import random
import subprocess
import sys
import tempfile

from tapegrad_twin.gpt2_tokenizer import END_OF_TEXT, Gpt2Tokenizer
from tapegrad_twin.small_gpt2_vocab import write_small_vocab

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

GPT2_FILES = os.path.join(ROOT, ".cache", "gpt2-tokenizer")
REFERENCE = os.path.join(ROOT, "tests", "reference", "gpt2_tokenizer_reference.json")
PIECES = ["Hello", " world", "'s", "'S", "'ll", "'lL", "  ", "\n\n", "\t ", " \u00a0", "\u0085", "\u2028", "\u3000",
          "日本語", " Ωμέγα", "١٢٣", " ½", "🙂", " 🙂🙂", "e\u0301", "123", " 4567", "?!", " ...", "\ufeff", "\x1c",
          "\x00", "\u200b", "ǅ", "ⅷ", "𝟘", " the", "the", END_OF_TEXT]


def fail(what):
    sys.exit(f"test_gpt2_tokenizer: FAILED: {what}")


def mixed_text(pieces=2000, seed=5):
    """The pieces above and runs of random bytes (invalid UTF-8 among them), in random order."""
    r = random.Random(seed)
    out = bytearray()
    for _ in range(pieces):
        out += bytes(r.randrange(256) for _ in range(r.randrange(1, 4))) if r.random() < 0.1 else \
            r.choice(PIECES).encode()
    return bytes(out)


def check_reference():
    if not os.path.isfile(os.path.join(GPT2_FILES, "vocab.json")):
        print(f"skipped: {GPT2_FILES} has no GPT-2 files (.ci/install-deps.sh fetches them)")
        return
    tok = Gpt2Tokenizer.from_folder(GPT2_FILES)
    cases = json.load(open(REFERENCE))["cases"]
    for case in cases:
        got = tok.encode(case["text"].encode("utf-8"), case["allow_special"])
        if got != case["ids"]:
            fail(f"{REFERENCE}: {case['text']!r}: ids {got}, js-tiktoken's {case['ids']}")
    print(f"same: js-tiktoken's ids for the {len(cases)} texts of {os.path.relpath(REFERENCE, ROOT)}")


def tapegrad_ids(bpe, folder, path, allow_special):
    run = subprocess.run([bpe, "encode", "--tokenizer", folder, path] + (["--allow-special"] if allow_special else []),
                         capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"{bpe} encode --tokenizer {folder} {path}: {run.stderr.strip()}")
    return [int(w) for w in run.stdout.split()]


def check_against_tapegrad(bpe, work):
    path, small = os.path.join(work, "mixed.txt"), os.path.join(work, "small")
    data = mixed_text()
    with open(path, "wb") as f:
        f.write(data)
    os.makedirs(small)
    write_small_vocab(small)
    folders = [small] + ([GPT2_FILES] if os.path.isfile(os.path.join(GPT2_FILES, "vocab.json")) else [])
    for folder in folders:
        tok = Gpt2Tokenizer.from_folder(folder)
        for allow_special in (False, True):
            got, want = tok.encode(data, allow_special), tapegrad_ids(bpe, folder, path, allow_special)
            if got != want:
                first = next(i for i, (a, b) in enumerate(zip(got + [None], want + [None])) if a != b)
                fail(f"{folder}: allow_special {allow_special}: ids differ from {bpe}'s from id {first}")
            if tok.decode(got) != data:
                fail(f"{folder}: the ids do not decode back to the text")
        name = "a small GPT-2-style vocabulary" if folder == small else os.path.relpath(folder, ROOT) + "'s files"
        print(f"same: {bpe}'s ids for {len(data)} mixed bytes with {name}")


def check_line_ends(work):
    """merges.txt with "\\r" or "\\r\\n" line ends gives the ids of the "\\n" file (Python's text mode)."""
    folder = os.path.join(work, "line_ends")
    os.makedirs(folder)
    write_small_vocab(folder)
    merges = os.path.join(folder, "merges.txt")
    lf = open(merges, "rb").read()
    data = mixed_text(200)
    want = Gpt2Tokenizer.from_folder(folder).encode(data)
    for line_end in (b"\r", b"\r\n"):
        with open(merges, "wb") as f:
            f.write(lf.replace(b"\n", line_end))
        if Gpt2Tokenizer.from_folder(folder).encode(data) != want:
            fail(f"merges.txt with {line_end!r} line ends gives other ids than with b'\\n'")
    print("same: the ids of merges.txt with \\n, \\r and \\r\\n line ends")


def main():
    check_reference()
    with tempfile.TemporaryDirectory() as work:
        check_line_ends(work)
    if len(sys.argv) > 1:
        with tempfile.TemporaryDirectory() as work:
            check_against_tapegrad(sys.argv[1], work)


if __name__ == "__main__":
    main()
