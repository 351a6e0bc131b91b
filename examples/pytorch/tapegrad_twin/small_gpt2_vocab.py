# small_gpt2_vocab.py — a small GPT-2-style vocabulary for tests of runs from GPT-2: the 256 bytes
# in reverse order (so no id is assumed to be its byte), a few merged English pieces, then
# "<|endoftext|>", written as GPT-2's vocab.json and merges.txt (gpt2_tokenizer.py reads them).
# tests/python/make_tiny_gpt2.py puts it beside a tiny random GPT-2; tests/python/test_gpt2_tokenizer.py
# and tests/reference/make_instruct_reference.py, make_lora_reference.py use it too.
#
#     vocab_size = write_small_vocab("folder")
import json
import os

from .gpt2_tokenizer import END_OF_TEXT, bytes_to_unicode

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
