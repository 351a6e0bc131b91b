# make_instruct_reference.py — an instruction fine-tuning batch and its loss in PyTorch, as test
# data for train/instructions.h (tests/train/test_instructions.cpp).
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_instruct_reference.py
#
# Written apart from the C++ (its own template, padding and targets, as chapter 7 of "LLMs from
# scratch" writes them), with examples/pytorch/tapegrad_twin/gpt2_tokenizer.py and hf_gpt2.py as the twins of
# the tokenizer and the model. It writes, under tests/reference/instruct/:
#   config.json, model.safetensors   a tiny GPT-2 (hf_gpt2.py's GPT2LMHeadModel): 2 layers, width 16,
#                                    2 heads, 256 positions, random weights from torch.manual_seed(11)
#   vocab.json, merges.txt           tapegrad_twin/small_gpt2_vocab.py's small vocabulary (the 256 bytes,
#                                    20 merges, "<|endoftext|>")
#   examples.jsonl                   EXAMPLES below, one object a line
#   batch.safetensors                the batch of all the examples, in file order:
#     "x", "y" (B, L) int64      right-padded with the end-of-text id; y = -100 on the prompt and the
#                                padding, the next token on the response (and its end-of-text)
#     "attention_mask" (B, L)    int64, 1 = a token, 0 = padding (Hugging Face's meaning)
#     "logits8" (B, L, 8)        the model's logits of the first 8 ids (all V would be 1 MB), in eval
#                                mode, with the attention mask
#     "loss" (1)                 F.cross_entropy(logits, y, ignore_index=-100), float64
#     "wte_grad" (V, C)          d loss / d transformer.wte.weight (tied to lm_head), float32
import json
import os

import torch
import torch.nn.functional as F

from tapegrad_twin.gpt2_tokenizer import Gpt2Tokenizer
from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.run_folder import safetensors_bytes
from tapegrad_twin.small_gpt2_vocab import write_small_vocab

HERE = os.path.dirname(os.path.abspath(__file__))

OUT = os.path.join(HERE, "instruct")
EXAMPLES = [
    {"instruction": "Give the plural of the word.", "input": "mouse", "output": "mice"},
    {"instruction": "Name the opposite of hot.", "output": "cold"},  # no "input": the same as empty
    {"instruction": "Rewrite the sentence in the past tense.", "input": "The owl and the fox walk in the world.",
     "output": "The owl and the fox walked in the world."},
    {"instruction": "Say nothing.", "input": "", "output": ""},  # the response is the end-of-text alone
    {"instruction": "Translate to English.", "input": "café crème", "output": "coffee with cream"},
]


def format_input(entry):
    """Chapter 7's format_input: the prompt up to the response."""
    instruction_text = (f"Below is an instruction that describes a task. Write a response that appropriately "
                        f"completes the request.\n\n### Instruction:\n{entry['instruction']}")
    input_text = f"\n\n### Input:\n{entry['input']}" if entry.get("input") else ""
    return instruction_text + input_text + "\n\n### Response:\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    vocab_size = write_small_vocab(OUT)
    tokenizer = Gpt2Tokenizer.from_folder(OUT)
    eot = tokenizer.end_of_text
    torch.manual_seed(11)
    config = dict(model_type="gpt2", vocab_size=vocab_size, n_positions=256, n_embd=16, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_((1.0 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else 0.0) +
                    0.2 * torch.randn_like(p))
    model.save_pretrained(OUT, prefixed=True)
    with open(os.path.join(OUT, "examples.jsonl"), "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in EXAMPLES))

    # each example: prompt ids, then the response's and the end-of-text
    sequences = []
    for e in EXAMPLES:
        prompt = tokenizer.encode(format_input(e).encode())
        response = tokenizer.encode(e["output"].encode()) + [eot]
        sequences.append((prompt, response))
    length = max(len(p) + len(r) for p, r in sequences) - 1
    x = torch.full((len(EXAMPLES), length), eot, dtype=torch.int64)
    y = torch.full((len(EXAMPLES), length), -100, dtype=torch.int64)
    mask = torch.zeros((len(EXAMPLES), length), dtype=torch.int64)
    for b, (prompt, response) in enumerate(sequences):
        ids = prompt + response
        n = len(ids) - 1
        x[b, :n] = torch.tensor(ids[:-1])
        mask[b, :n] = 1
        targets = torch.tensor(ids[1:])
        targets[:len(prompt) - 1] = -100  # the prompt predicts nothing the loss counts
        y[b, :n] = targets

    model.eval()
    logits = model(x, attention_mask=mask)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100)
    loss.backward()
    tensors = {"x": x, "y": y, "attention_mask": mask, "logits8": logits.detach()[:, :, :8].contiguous(),
               "loss": loss.detach().double().reshape(1), "wte_grad": model.transformer.wte.weight.grad}
    with open(os.path.join(OUT, "batch.safetensors"), "wb") as f:
        f.write(safetensors_bytes(tensors, {"format": "pt"}))
    print(f"wrote {OUT}/: {len(EXAMPLES)} examples padded to {length} tokens, loss {loss.item():.6f}, "
          f"{int((y != -100).sum())} response tokens")


if __name__ == "__main__":
    main()
