"""gpt2_tokenizer.py — GPT-2's tokenizer in plain Python, the twin of tapegrad's
tokenizers/gpt2_tokenizer.h: the same ids for any bytes.

Files: vocab.json + merges.txt (Hugging Face's names) or encoder.json + vocab.bpe (OpenAI's);
tokens are written in bytes_to_unicode's alphabet (each byte one printable character).

1. Pre-split (tokenizers/pre_split.cpp's gpt2_split, by hand, no regex): GPT-2's pattern

     's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

   over the code points of the text read as bytes. \\p{L}, \\p{N} and \\s (Unicode White_Space)
   are tokenizers/make_unicode_tables.py's classes (Python's unicodedata, as the C++ table).
   A byte that starts no well-formed UTF-8 sequence is a character of its own in the "other"
   class: the bytes are decoded with errors="surrogateescape", which turns each such byte into
   one lone surrogate (category Cs, "other"), and the chunks encode back to the same bytes.
2. Each chunk is merged by rank with bpe.py's merge step (tapegrad's ids: byte b is b, merge i
   is 256 + i; a token made twice keeps the id of the first merge that makes it, as in C++),
   then mapped to GPT-2's ids through the vocabulary. Chunk -> ids is cached.
3. "<|endoftext|>" is its special token only with allow_special (tiktoken's allowed_special);
   otherwise that text is ordinary text. Decoding concatenates the ids' bytes.

examples/pytorch/gpt2_tokenizer.py is its command line:

    /usr/bin/python3 examples/pytorch/gpt2_tokenizer.py encode --tokenizer .cache/gpt2-tokenizer FILE
"""
import importlib.util
import json
import os

from . import bpe


def load_unicode_tables():
    """tokenizers/make_unicode_tables.py, the script that writes the C++ table, loaded from its file
    (it is no module of this package)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    spec = importlib.util.spec_from_file_location("make_unicode_tables",
                                                  os.path.join(repo, "tokenizers", "make_unicode_tables.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class_of = load_unicode_tables().class_of  # the classes of the C++ table

END_OF_TEXT = "<|endoftext|>"
FILE_PAIRS = (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))
SPACE = "kSpace"


def bytes_to_unicode():
    """byte -> the character that stands for it in the files: the printable bytes themselves, the
    other 68, in order, U+0100 onwards."""
    table, following = {}, 256
    for b in range(256):
        printable = ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF
        table[b] = chr(b) if printable else chr(following)
        following += 0 if printable else 1
    return table


BYTE_OF = {c: b for b, c in bytes_to_unicode().items()}


def token_bytes_of(token):
    """The bytes a token of the files stands for, or None if a character stands for no byte."""
    try:
        return bytes(BYTE_OF[c] for c in token) or None
    except KeyError:
        return None


# ---- the pre-split -------------------------------------------------------------------------------

class CharacterClasses:
    """The pattern's class of each character, remembered ("kLetter", "kNumber", "kSpace", or None)."""

    def __init__(self):
        self.known = {}

    def __call__(self, c):
        found = self.known.get(c, 0)
        if found == 0:
            found = self.known[c] = class_of(ord(c))
        return found


def contraction_at(text, i):
    """The length of 's 't 're 've 'm 'll 'd at text[i] (ASCII, case-sensitive), or 0."""
    if text[i] != "'" or i + 1 >= len(text):
        return 0
    if text[i + 1] in "stmd":
        return 2
    return 3 if text[i + 1:i + 3] in ("re", "ve", "ll") else 0


def chunk_length(text, i, cls):
    """The length in characters of the chunk at text[i] (pre_split.cpp's chunk_length)."""
    n = contraction_at(text, i)
    if n:
        return n
    start = i + 1 if text[i] == " " and i + 1 < len(text) else i
    kind = cls(text[start])
    if kind != SPACE:  # ' '? letters | ' '? numbers | ' '? others: the class after the space decides
        end = start
        while end < len(text) and cls(text[end]) == kind:
            end += 1
        return end - i
    end = last = i  # \s+(?!\S) | \s+: the run of spaces; `last` is its last space
    while end < len(text) and cls(text[end]) == SPACE:
        last, end = end, end + 1
    return last - i if end < len(text) and last > i else end - i


def split_chunks(data, cls=None):
    """GPT-2's chunks of the bytes data, as strings (invalid bytes as lone surrogates)."""
    cls = cls or CharacterClasses()
    text = data.decode("utf-8", errors="surrogateescape")
    chunks, i = [], 0
    while i < len(text):
        n = chunk_length(text, i, cls)
        chunks.append(text[i:i + n])
        i += n
    return chunks


# ---- the files -----------------------------------------------------------------------------------

def read_vocab(path):
    """vocab.json: {token: id}, ids 0..N-1 each once, every byte a token -> (bytes by id, id by bytes)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read it as JSON ({e})")
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object {{token: id, ...}}")
    by_id, id_of = [None] * len(doc), {}
    for token, i in doc.items():
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(doc):
            raise ValueError(f"{path}: token '{token}' has id {i!r}, not one of 0..{len(doc) - 1}")
        if by_id[i] is not None:
            raise ValueError(f"{path}: two tokens have id {i}, the second '{token}'")
        data = token_bytes_of(token)
        if data is None:
            raise ValueError(f"{path}: token '{token}' (id {i}) has a character that stands for no byte")
        if data in id_of:
            raise ValueError(f"{path}: tokens {id_of[data]} and {i} ('{token}') stand for the same bytes")
        by_id[i], id_of[data] = data, i
    missing = [b for b in range(256) if bytes([b]) not in id_of]
    if missing:
        raise ValueError(f"{path}: no token for byte 0x{missing[0]:02x}; all 256 bytes must be tokens")
    return by_id, id_of


def read_merges(path, id_of, vocab_name):
    """merges.txt -> the merges as tapegrad's (left, right) id pairs, in rank order."""
    try:
        with open(path, encoding="utf-8") as f:  # text mode: "\r\n" and "\r" line ends read as "\n"
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read it as UTF-8 text ({e})")
    made = {bytes([b]): b for b in range(256)}
    merges, blank_seen = [], False
    for number, line in enumerate(lines, start=1):
        where = f"{path}: line {number}: "
        if (number == 1 and line.startswith("#version")) or (not line and number == len(lines)):
            continue
        if not line:
            blank_seen = True
            continue
        if blank_seen:
            raise ValueError(where + "a merge after a blank line")
        merges.append(merge_of(line, where, made, id_of, vocab_name, len(merges)))
    return merges


def merge_of(line, where, made, id_of, vocab_name, rank):
    """One line "left right" -> (left id, right id); records the merged token in made."""
    parts = line.split(" ")
    if len(parts) != 2 or not all(parts):
        raise ValueError(where + f"expected two tokens separated by one space, got '{line}'")
    ids, pieces = [], []
    for part in parts:
        data = token_bytes_of(part)
        if data is None:
            raise ValueError(where + f"'{part}' has a character that stands for no byte in bytes_to_unicode")
        if data not in id_of:
            raise ValueError(where + f"'{part}' is not a token of {vocab_name}")
        if data not in made:
            raise ValueError(where + f"'{part}' is neither a byte nor made by an earlier merge")
        ids.append(made[data])
        pieces.append(data)
    merged = pieces[0] + pieces[1]
    if merged not in id_of:
        raise ValueError(where + f"the merge '{line}' makes a token that is not in {vocab_name}")
    made.setdefault(merged, 256 + rank)  # the first merge that makes it
    return tuple(ids)


# ---- the tokenizer -------------------------------------------------------------------------------

class Gpt2Tokenizer:
    def __init__(self, vocab_path, merges_path):
        self.vocab_path, self.merges_path = vocab_path, merges_path
        self.token_bytes, id_of = read_vocab(vocab_path)
        try:
            self.bpe = bpe.Tokenizer(read_merges(merges_path, id_of, vocab_path), merges_path)
        except ValueError as e:
            raise ValueError(str(e) if str(e).startswith(merges_path) else f"{merges_path}: {e}")
        self.gpt2_id = [id_of[data] for data in self.bpe.token_bytes]  # tapegrad's id -> GPT-2's
        self.end_of_text = id_of.get(END_OF_TEXT.encode(), -1)
        self.classes = CharacterClasses()
        self.cache = {}

    @staticmethod
    def from_folder(folder):
        for vocab, merges in FILE_PAIRS:
            if all(os.path.isfile(os.path.join(folder, name)) for name in (vocab, merges)):
                return Gpt2Tokenizer(os.path.join(folder, vocab), os.path.join(folder, merges))
        raise ValueError(f"{folder}: no GPT-2 tokenizer files: looked for vocab.json + merges.txt and "
                         "encoder.json + vocab.bpe")

    @property
    def vocab_size(self):
        return len(self.token_bytes)

    def chunk_ids(self, chunk):
        ids = self.cache.get(chunk)
        if ids is None:
            merged = self.bpe._merge_chunk(chunk.encode("utf-8", errors="surrogateescape"))
            ids = self.cache[chunk] = [self.gpt2_id[i] for i in merged]
        return ids

    def encode_ordinary(self, data):
        out = []
        for chunk in split_chunks(data, self.classes):
            out.extend(self.chunk_ids(chunk))
        return out

    def encode(self, data, allow_special=False):
        """The ids of the bytes data; with allow_special, "<|endoftext|>" is its token (the pieces
        between split and merged on their own, as tiktoken does)."""
        if not allow_special or self.end_of_text < 0:
            return self.encode_ordinary(data)
        out = []
        for k, piece in enumerate(data.split(END_OF_TEXT.encode())):
            out += ([self.end_of_text] if k else []) + self.encode_ordinary(piece)
        return out

    def decode(self, ids):
        for i in ids:
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"gpt2 tokenizer: id {i} is outside the vocabulary [0, {self.vocab_size})")
        return b"".join(self.token_bytes[i] for i in ids)

