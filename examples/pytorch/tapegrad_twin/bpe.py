"""Byte-level BPE, the Python twin of tapegrad's tokenizers/bpe.h: the same ids for any bytes.

1. Pre-split: the chunks are re.findall(PATTERN, data), GPT-2's split on bytes with every
   byte >= 0x80 counted as a letter. No merge crosses a chunk boundary.
2. Training: ids 0..255 are the bytes; merge i makes id 256 + i. Each round counts the adjacent
   pairs inside the chunks (a chunk that occurs n times counts n times), takes the pair with the
   highest count (ties: the smallest (left, right)) and replaces it everywhere, left to right,
   without overlap. It stops at vocab_size, or when no pair occurs twice.
3. Encoding applies the merges to each chunk by rank: the adjacent pair with the lowest merge
   index, all its occurrences left to right; and again, until no pair is a merge.
4. Decoding concatenates the tokens' bytes.

examples/pytorch/bpe.py is its command line (train, encode, decode).
"""
import heapq
import json
import re
from collections import Counter, defaultdict

PATTERN = rb"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z\x80-\xff]+| ?[0-9]+| ?[^\sA-Za-z0-9\x80-\xff]+|\s+(?!\S)|\s+"
PATTERN_NAME = "gpt2-bytes"
MIN_VOCAB, MAX_VOCAB = 256, 65536


def split_chunks(data):
    return re.findall(PATTERN, data)


def replace_pair(ids, pair, new_id):
    """ids with every pair, left to right without overlap, replaced by new_id."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def pairs_of(ids):
    return Counter(zip(ids, ids[1:]))


def train(data, vocab_size):
    """The merges, as (left, right) id pairs. Only the chunks holding the merged pair are
    recounted each round."""
    if not MIN_VOCAB <= vocab_size <= MAX_VOCAB:
        raise ValueError(f"bpe: vocab size must be in [256, 65536], got {vocab_size}")
    words = [(list(chunk), n) for chunk, n in Counter(split_chunks(data)).items()]
    count = Counter()               # pair -> occurrences
    holders = defaultdict(set)      # pair -> indices of the words that hold it
    for w, (ids, n) in enumerate(words):
        for pair, k in pairs_of(ids).items():
            count[pair] += k * n
            holders[pair].add(w)
    heap = [(-c, pair) for pair, c in count.items()]   # highest count, then smallest pair
    heapq.heapify(heap)
    merges = []
    while 256 + len(merges) < vocab_size:
        while heap and count[heap[0][1]] != -heap[0][0]:
            heapq.heappop(heap)             # stale: the count changed since it was pushed
        if not heap or -heap[0][0] < 2:
            break                           # no pair occurs twice
        pair = heap[0][1]
        new_id = 256 + len(merges)
        merges.append(pair)
        changed = set()
        for w in holders.pop(pair):
            ids, n = words[w]
            before = pairs_of(ids)
            if pair not in before:
                continue
            ids = replace_pair(ids, pair, new_id)
            words[w] = (ids, n)
            after = pairs_of(ids)
            for p in before.keys() | after.keys():
                delta = after[p] - before[p]
                if delta:
                    count[p] += delta * n
                    changed.add(p)
                    if after[p]:
                        holders[p].add(w)
        for p in changed:
            if count[p] > 0:
                heapq.heappush(heap, (-count[p], p))
    return merges


class Tokenizer:
    def __init__(self, merges, source="bpe"):
        self.merges = [tuple(m) for m in merges]
        self.token_bytes = [bytes([b]) for b in range(256)]
        self.rank = {}
        for i, (left, right) in enumerate(self.merges):
            defined = 256 + i
            if not (0 <= left < defined and 0 <= right < defined):
                raise ValueError(f"{source}: merge {i} = [{left}, {right}] refers to an id not yet defined")
            if (left, right) in self.rank:
                raise ValueError(f"{source}: merge {i} = [{left}, {right}] repeats an earlier merge")
            self.rank[(left, right)] = i
            self.token_bytes.append(self.token_bytes[left] + self.token_bytes[right])
        self.cache = {}

    @property
    def vocab_size(self):
        return len(self.token_bytes)

    def _merge_chunk(self, chunk):
        ids = list(chunk)
        while len(ids) > 1:
            ranks = [self.rank[p] for p in zip(ids, ids[1:]) if p in self.rank]
            if not ranks:
                break
            r = min(ranks)
            ids = replace_pair(ids, self.merges[r], 256 + r)
        return ids

    def encode(self, data):
        out = []
        for chunk in split_chunks(data):
            if chunk not in self.cache:
                self.cache[chunk] = self._merge_chunk(chunk)
            out.extend(self.cache[chunk])
        return out

    def decode(self, ids):
        return b"".join(self.token_bytes[i] for i in ids)

    def to_json(self):
        merges = ", ".join(f"[{a}, {b}]" for a, b in self.merges)
        return (f'{{"type": "bpe", "pattern": "{PATTERN_NAME}", "vocab_size": {self.vocab_size}, '
                f'"merges": [{merges}]}}\n')

    @staticmethod
    def from_json(text, source):
        doc = json.loads(text)
        if not isinstance(doc, dict) or "type" not in doc or "merges" not in doc:
            raise ValueError(f'{source}: expected a BPE tokenizer: an object with "type": "bpe" and "merges"')
        if doc["type"] != "bpe":
            raise ValueError(f'{source}: "type" is not "bpe"')
        if doc.get("pattern", PATTERN_NAME) != PATTERN_NAME:
            raise ValueError(f'{source}: unknown pre-split pattern (this twin knows "{PATTERN_NAME}")')
        merges = doc["merges"]
        if not isinstance(merges, list):
            raise ValueError(f'{source}: "merges" must be a list of [left, right] pairs')
        for i, m in enumerate(merges):
            if not (isinstance(m, list) and len(m) == 2 and all(isinstance(v, int) for v in m)):
                raise ValueError(f"{source}: merge {i} is not a [left, right] pair of ids")
        tok = Tokenizer(merges, source)
        if "vocab_size" in doc and doc["vocab_size"] != tok.vocab_size:
            raise ValueError(f'{source}: "vocab_size" is {doc["vocab_size"]} but the merges make '
                             f"{tok.vocab_size} tokens")
        return tok

    def save(self, path):
        with open(path, "w") as f:
            f.write(self.to_json())

    @staticmethod
    def load(path):
        with open(path) as f:
            return Tokenizer.from_json(f.read(), path)

