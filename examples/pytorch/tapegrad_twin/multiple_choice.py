# multiple_choice.py — multiple-choice scoring as examples/evaluate.cpp does it, in PyTorch: the same
# data sets (read_items), the same prompts and few-shot draws (item_context, with C++'s
# std::mt19937_64 written out) and the same log-likelihoods, computed the way
# lm-evaluation-harness computes them: each (context, continuation) pair run whole through the
# model, one forward per choice (encode_pair, loglikelihood). examples/pytorch/evaluate.py is its
# command line:
#
#     /usr/bin/python3 examples/pytorch/evaluate.py --ckpt gpt2 --task hellaswag --data hellaswag_val.jsonl --out items.jsonl
#
# load(folder) reads a tapegrad run (resume.py's load_model), a GPT-2 folder (hf_gpt2.py with
# gpt2_tokenizer.py) or a Llama / Qwen folder (hf_llama.py; its tokenizer.json needs the
# `tokenizers` package, which Debian does not have: without it, such a folder is scored by ids
# through loglikelihood() alone, as tests/reference/make_multiple_choice_reference.py does). The
# prompts are written here from the harness's task definitions, independently of
# train/task_formats.cpp.
import csv
import json
import os
import re

import torch


def hellaswag_preprocess(text):
    text = text.strip().replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    return text.replace("  ", " ")


def read_items(task, path):
    """[(description, query, choices, label)] of the file, as the harness's task yaml files make them."""
    items = []
    if task == "mmlu":
        subject = re.sub("_(test|dev|val)$", "", os.path.splitext(os.path.basename(path))[0]).replace("_", " ")
        description = f"The following are multiple choice questions (with answers) about {subject}.\n\n"
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.reader(f):
                if not row:
                    continue
                query = row[0].strip() + "".join(f"\n{k}. {c}" for k, c in zip("ABCD", row[1:5])) + "\nAnswer:"
                items.append((description, query, ["A", "B", "C", "D"], "ABCD".index(row[5])))
        return items
    for line in open(path, encoding="utf-8"):
        if not line.strip():
            continue
        doc = json.loads(line)
        if task == "hellaswag":
            ctx = doc["ctx_a"] + " " + doc["ctx_b"].capitalize()
            items.append(("", hellaswag_preprocess(doc["activity_label"] + ": " + ctx),
                          [hellaswag_preprocess(e) for e in doc["endings"]], int(doc["label"])))
        elif task == "arc":
            q = doc["question"]
            labels = [c["label"] for c in q["choices"]]
            items.append(("", "Question: " + q["stem"] + "\nAnswer:", [c["text"] for c in q["choices"]],
                          labels.index(doc["answerKey"])))
        else:
            items.append(("", doc["context"], doc["choices"], int(doc["label"])))
    return items


class Mt19937_64:
    """C++'s std::mt19937_64 (Matsumoto and Nishimura's 64-bit Mersenne Twister), which evaluate's
    --shots draw uses: the same numbers for the same seed (the 10,000th of seed 5489 is
    9981545732273789042, as the C++ standard requires)."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = [seed & self.MASK]
        for i in range(1, 312):
            previous = self.state[-1]
            self.state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i) & self.MASK)
        self.index = 312

    def __call__(self):
        if self.index == 312:
            for i in range(312):
                y = (self.state[i] & 0xFFFFFFFF80000000) | (self.state[(i + 1) % 312] & 0x7FFFFFFF)
                self.state[i] = self.state[(i + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
            self.index = 0
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & self.MASK


def item_context(items, index, shots, seed):
    """evaluate's --shots draw: for item `index`, a partial Fisher-Yates shuffle of the other items'
    indices by mt19937_64 seeded with seed + index; each shot is its query, " ", its answer, "\n\n"."""
    description, query, _, _ = items[index]
    context = description
    if shots > 0 and len(items) > 1:
        others = [i for i in range(len(items)) if i != index]
        gen = Mt19937_64(seed + index)
        for i in range(min(shots, len(others))):
            j = i + gen() % (len(others) - i)
            others[i], others[j] = others[j], others[i]
            _, shot_query, shot_choices, shot_label = items[others[i]]
            context += shot_query + " " + shot_choices[shot_label] + "\n\n"
    return context + query


def load(folder):
    """(model, encode, bos, eos, max_length): encode(text) -> ids without special tokens."""
    config = json.load(open(os.path.join(folder, "config.json")))
    model_type = config.get("model_type")
    if model_type in ("llama", "qwen2", "qwen3"):
        from .hf_llama import LlamaForCausalLM
        model = LlamaForCausalLM.from_pretrained(folder)
        max_length = config["max_position_embeddings"]
        try:
            from tokenizers import Tokenizer
        except ImportError:
            return model, None, None, None, max_length
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        tok_config_path = os.path.join(folder, "tokenizer_config.json")
        tok_config = json.load(open(tok_config_path)) if os.path.exists(tok_config_path) else {}

        def token_id(key):
            value = tok_config.get(key)
            value = value.get("content") if isinstance(value, dict) else value
            return tok.token_to_id(value) if value else None
        bos = token_id("bos_token") if tok_config.get("add_bos_token", False) else None
        return model, lambda text: tok.encode(text, add_special_tokens=False).ids, bos, token_id("eos_token"), max_length
    if model_type == "gpt2" and "tapegrad" not in config:
        from .gpt2_tokenizer import Gpt2Tokenizer
        from .hf_gpt2 import GPT2LMHeadModel
        tok = Gpt2Tokenizer.from_folder(folder)
        model = GPT2LMHeadModel.from_pretrained(folder)
        return model, lambda text: tok.encode(text.encode()), None, tok.end_of_text, config.get("n_positions", 1024)
    from .resume import load_model
    model, _, tok = load_model(folder)
    return model, tok.encode, None, None, model.pos_emb.num_embeddings


@torch.no_grad()
def loglikelihood(model, context_ids, continuation_ids, max_length):
    """The harness's _loglikelihood_tokens for one pair: (context + continuation)[-(max_length + 1):][:-1]
    run whole, the continuation's log-probabilities summed (float64 log-softmax of the float32 logits)."""
    ids = (context_ids + continuation_ids)[-(max_length + 1):][:-1]
    logits = model(torch.tensor([ids]))
    logits = logits[0] if not isinstance(logits, tuple) else logits[0][0]
    logp = torch.log_softmax(logits.double(), dim=-1)[-len(continuation_ids):]
    return float(logp.gather(1, torch.tensor(continuation_ids)[:, None]).sum())


def encode_pair(encode, bos, eos, context, continuation):
    """The harness's loglikelihood / _encode_pair for a decoder: ids of context, and of the continuation."""
    if context == "":
        prefix = bos if bos is not None else eos
        cont = encode(continuation)
        return ([prefix], cont) if cont[0] != prefix else (cont[:1], cont[1:])
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces:
        continuation, context = context[-n_spaces:] + continuation, context[:-n_spaces]
    first = [bos] if bos is not None else []
    whole, context_ids = first + encode(context + continuation), first + encode(context)
    return context_ids, whole[len(context_ids):]

