#!/usr/bin/python3
"""bench_bpe_sentencepiece.py — SentencePiece's BPE on the same text as bench/bench_bpe, for the
comparison: training, encoding and decoding time, one JSON line per vocab size. Needs Debian's
python3-sentencepiece (the C++ library underneath does the work).

    /usr/bin/python3 bench/bench_bpe_sentencepiece.py --data input.txt --vocab-sizes 512,1024,4096

Each figure is the median of --repeats runs, on 1 thread. SentencePiece splits on whitespace and
characters rather than GPT-2's pattern on bytes, so its bytes per token are close to, not equal
to, tapegrad's.
"""
import argparse
import io
import json
import statistics
import time

import sentencepiece as spm


def median_seconds(repeats, f):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--vocab-sizes", default="512,1024,4096")
    p.add_argument("--repeats", type=int, default=5)
    o = p.parse_args()
    with open(o.data, encoding="utf-8") as f:
        text = f.read()
    mb = len(text.encode("utf-8")) / 1e6
    for vocab in map(int, o.vocab_sizes.split(",")):
        model = io.BytesIO()

        def train():
            model.seek(0)
            model.truncate()
            spm.SentencePieceTrainer.train(sentence_iterator=iter(text.splitlines()), model_writer=model,
                                           vocab_size=vocab, model_type="bpe", num_threads=1,
                                           max_sentence_length=1 << 20, minloglevel=2,
                                           hard_vocab_limit=False, byte_fallback=True)

        train_s = median_seconds(o.repeats, train)
        sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
        ids = []

        def encode():
            ids[:] = sp.encode(text)

        encode_s = median_seconds(o.repeats, encode)
        decode_s = median_seconds(o.repeats, lambda: sp.decode(ids))
        print(json.dumps({"bench": "sentencepiece bpe", "vocab_size": sp.get_piece_size(), "train_s": round(train_s, 4),
                          "encode_mb_per_s": round(mb / encode_s, 1), "decode_mb_per_s": round(mb / decode_s, 1),
                          "bytes_per_token": round(mb * 1e6 / len(ids), 3)}), flush=True)


if __name__ == "__main__":
    main()
