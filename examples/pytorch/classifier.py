# classifier.py — a classifier's folder read in PyTorch: a train_gpt --task classify run, or any
# Hugging Face *ForSequenceClassification folder of GPT-2, Llama, Qwen2 or Qwen3 that tapegrad reads
# (tapegrad_twin/classifier.py builds it: the body the twin of its kind, the head score.weight).
#
#   /usr/bin/python3 examples/pytorch/classifier.py RUN --text "Claim your prize now" [--text ...]
#
# prints, for each text, the JSON line `generate --ckpt RUN --classify TEXT` prints last:
# {"label", "probability", "probabilities": {class: p, ...}}.
import argparse
import json
import sys

from tapegrad_twin.classifier import class_probabilities, load_classifier
from tapegrad_twin.run_folder import RunError


def main():
    p = argparse.ArgumentParser(description="A classifier's folder (train_gpt --task classify) in PyTorch: each "
                                            "text's class and probabilities, as generate --classify prints them.")
    p.add_argument("folder")
    p.add_argument("--text", action="append", required=True, help="a text to classify (repeat for more)")
    args = p.parse_args()
    try:
        model, classes, tokenizer, context = load_classifier(args.folder)
    except (RunError, OSError, KeyError, ValueError, RuntimeError) as e:
        sys.exit(f"classifier.py: {e}")
    if tokenizer is None:
        sys.exit(f"classifier.py: {args.folder} has no tokenizer.json this twin reads")
    for text in args.text:
        ids = tokenizer.encode(text)[:context] if context else tokenizer.encode(text)
        p = class_probabilities(model, ids)
        best = max(range(len(p)), key=lambda k: p[k])
        print(json.dumps({"label": classes[best], "probability": p[best],
                          "probabilities": dict(zip(classes, p))}))


if __name__ == "__main__":
    main()
