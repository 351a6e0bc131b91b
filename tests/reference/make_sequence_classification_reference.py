# make_sequence_classification_reference.py — a classifier's forward and backward in PyTorch, as
# test data for models/sequence_classification.h (tests/models/test_sequence_classification.cpp).
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_sequence_classification_reference.py
#
# Written apart from the C++, as Hugging Face's GPT2ForSequenceClassification computes it: the
# tiny GPT-2 of tests/reference/instruct (hf_gpt2.py's twin), its transformer's final-norm output,
# the hidden state of each row's last token (rows right-padded with the end-of-text id), and
# score = nn.Linear(16, 3, bias=False). It writes tests/reference/sequence_classification.safetensors:
#   "x", "attention_mask" (B, T) int64   three texts, padded; 1 = a token, 0 = padding
#   "labels" (B) int64
#   "score.weight" (3, 16)               torch.manual_seed(21)'s draw, given to the C++ as it is
#   "logits" (B, 3)                      in eval mode
#   "loss" (1) float64                   F.cross_entropy(logits, labels)
#   "score_grad" (3, 16), "wte_grad" (V, 16), "ln_f_grad" (16)   d loss / d each
import os

import torch
import torch.nn.functional as F

from tapegrad_twin.gpt2_tokenizer import Gpt2Tokenizer
from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.run_folder import safetensors_bytes

HERE = os.path.dirname(os.path.abspath(__file__))

MODEL = os.path.join(HERE, "instruct")
TEXTS = ["Win a FREE prize now!", "See you at 6", "Is the cafe open tonight? I need milk."]
LABELS = [1, 0, 2]


def main():
    tokenizer = Gpt2Tokenizer.from_folder(MODEL)
    model = GPT2LMHeadModel.from_pretrained(MODEL)
    model.eval()
    torch.manual_seed(21)
    score = torch.nn.Linear(16, 3, bias=False)
    ids = [tokenizer.encode(t.encode()) for t in TEXTS]
    length = max(len(i) for i in ids)
    x = torch.full((len(ids), length), tokenizer.end_of_text, dtype=torch.int64)
    mask = torch.zeros((len(ids), length), dtype=torch.int64)
    for b, row in enumerate(ids):
        x[b, :len(row)] = torch.tensor(row)
        mask[b, :len(row)] = 1
    hidden, _ = model.transformer(x, attention_mask=mask)
    last = mask.sum(dim=1) - 1
    logits = score(hidden[torch.arange(len(ids)), last])
    labels = torch.tensor(LABELS)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    tensors = {"x": x, "attention_mask": mask, "labels": labels, "score.weight": score.weight.detach(),
               "logits": logits.detach(), "loss": loss.detach().double().reshape(1), "score_grad": score.weight.grad,
               "wte_grad": model.transformer.wte.weight.grad, "ln_f_grad": model.transformer.ln_f.weight.grad}
    path = os.path.join(HERE, "sequence_classification.safetensors")
    with open(path, "wb") as f:
        f.write(safetensors_bytes({k: v.contiguous() for k, v in tensors.items()}, {"format": "pt"}))
    print(f"wrote {path}: {len(ids)} rows of up to {length} tokens, loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
