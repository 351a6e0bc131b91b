# examples/data/make_stories_choices.py — writes stories_choices.jsonl, a multiple-choice task on
# train_gpt's built-in corpus, for watching a toy run learn something (train_gpt --eval-task).
#
# The corpus has sentences "The old fox is brave, so the old fox walks to the river.": the one
# who feels is the one who acts. An item is a paragraph up to ", so" as its context, and four
# endings: the right one, and the same ending with three other subjects of the corpus. Chance is
# 0.25; a model that has learnt to carry the subject over the comma picks the right one. The items
# come from the last tenth of the corpus (a character run's validation split).
#
#   ./build/examples/train_gpt --write-corpus corpus.txt
#   python3 examples/data/make_stories_choices.py corpus.txt examples/data/stories_choices.jsonl
import json
import random
import re
import sys

SENTENCE = re.compile(r"([A-Z][a-z ]*?) is ([a-z ]+), so ([a-z ]+?) ((?:walks to|looks at|dreams of|sings about|runs past|"
                      r"waits by|paints|remembers|sails to|listens to) [^.]*)\.")


def main(corpus_path, out_path, items=200, seed=1234):
    text = open(corpus_path, encoding="utf-8").read()
    held_out = text[len(text) * 9 // 10:]
    held_out = held_out[held_out.index("\n\n") + 2:]  # from a whole paragraph
    subjects = sorted({m.group(3) for m in SENTENCE.finditer(text)})
    rng = random.Random(seed)
    out = []
    for paragraph in held_out.split("\n\n"):
        for m in SENTENCE.finditer(paragraph):
            if len(out) == items:
                break
            who = m.group(3)
            others = rng.sample([s for s in subjects if s != who], 3)
            label = rng.randrange(4)
            endings = others[:label] + [who] + others[label:]
            out.append({"context": paragraph[:m.start()] + m.group(0)[:m.group(0).index(", so") + 4],
                        "choices": [f"{s} {m.group(4)}." for s in endings], "label": label})
    with open(out_path, "w", encoding="utf-8") as f:
        for item in out:
            f.write(json.dumps(item) + "\n")
    print(f"make_stories_choices.py: wrote {len(out)} items to {out_path}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
