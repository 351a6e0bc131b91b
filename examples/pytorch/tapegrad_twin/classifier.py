# classifier.py — a classifier's folder read in PyTorch: a train_gpt --task classify run, or any
# Hugging Face *ForSequenceClassification folder of GPT-2, Llama, Qwen2 or Qwen3 that tapegrad reads
# (models/sequence_classification.h is the C++ side). The body is the twin of its kind (gpt_model.py
# for tapegrad's own layout, hf_gpt2.py, hf_llama.py); the head is score.weight:
#
#   h      = body.hidden_states(idx)          (B, T, C), the final norm's output
#   logits = h[b, last real token of b] @ score.weight.T
#
# Rows padded on the right need no attention mask for their last real token: attention is causal.
# A LoRA run (--train-layers lora) holds its adapters alone, in peft's files: the body is its base
# folder's (adapter_config.json's base_model_name_or_path) with the adapters put on (lora.py), and the
# head is the adapters file's base_model.model.score.weight (peft's modules_to_save).
#
#     model, classes, tokenizer, context = load_classifier("spam_small")
#     probabilities = class_probabilities(model, tokenizer.encode("Claim your prize now")[:context])
#
# examples/pytorch/classifier.py is its command line: for each text, the JSON line
# `generate --ckpt RUN --classify TEXT` prints last.
import json
import os

import torch
import torch.nn as nn

from . import gpt_model, hf_gpt2, hf_llama, lora
from .run_folder import RunError, read_safetensors
from .training import tokenizer_from_json

SCORE = "score.weight"
PEFT_SCORE = lora.PEFT_PREFIX + SCORE  # in a LoRA run's adapters file


def body_of(config, tensors, folder):
    """The body of the folder's kind with its weights, and its hidden_states(idx) function."""
    model_type = config.get("model_type")
    if model_type == "gpt2":
        body = hf_gpt2.GPT2LMHeadModel(config)
        state = {(k if k.startswith("transformer.") else "transformer." + k): v for k, v in tensors.items()
                 if not k.endswith((".attn.bias", ".attn.masked_bias")) and k != "lm_head.weight"}
        state["lm_head.weight"] = state["transformer.wte.weight"]
        body.load_state_dict(state, strict=True)
        return body, lambda idx: body.transformer(idx)[0]
    if model_type in hf_llama.FAMILY:
        body = hf_llama.LlamaForCausalLM(config)
        state = {k: v for k, v in tensors.items() if not k.endswith("rotary_emb.inv_freq")}
        if body.config.tie_word_embeddings:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        elif "lm_head.weight" not in state:  # transformers saves a classifier's body without it: never read here
            state["lm_head.weight"] = torch.zeros_like(body.lm_head.weight)
        body.load_state_dict(state, strict=True)
        return body, lambda idx: body.hidden_states(idx)[0]
    if "model" in config:  # tapegrad's own GPT layout (a run from scratch with --arch gpt2)
        body = gpt_model.GPTModel(config["model"])
        state = dict(tensors)
        if config["model"].get("tie_weights", False):
            state["out_head.weight"] = state["tok_emb.weight"]
        body.load_state_dict(state, strict=True)
        return body, body.hidden_states
    raise RunError(f"{folder}/config.json: neither a GPT-2, Llama / Qwen nor a train_gpt GPT model")


class SequenceClassifier(nn.Module):
    def __init__(self, body, hidden_states, score_weight):
        super().__init__()
        self.body, self.hidden_states = body, hidden_states
        self.score = nn.Linear(score_weight.shape[1], score_weight.shape[0], bias=False)
        with torch.no_grad():
            self.score.weight.copy_(score_weight)

    def forward(self, idx, lengths=None):
        """idx (B, T) padded on the right; lengths: each row's real tokens (None: all T)."""
        h = self.hidden_states(idx)
        last = torch.full((idx.shape[0],), idx.shape[1] - 1) if lengths is None else torch.as_tensor(lengths) - 1
        return self.score(h[torch.arange(idx.shape[0]), last])


def load_classifier(folder):
    """(model in eval mode, the classes by id, the tokenizer or None, the context texts are cut to)."""
    path = os.path.join(folder, "config.json")
    config = json.load(open(path))
    if not any(str(a).endswith("ForSequenceClassification") for a in config.get("architectures", [])):
        raise RunError(f"{path}: \"architectures\" names no *ForSequenceClassification model")
    classes = [config["id2label"][str(i)] for i in range(len(config["id2label"]))]
    adapter_path = os.path.join(folder, "adapter_config.json")
    if os.path.exists(adapter_path):  # the base folder's body, the run's adapters on it
        adapter = json.load(open(adapter_path))
        base = adapter["base_model_name_or_path"]
        body, hidden_states = body_of(json.load(open(os.path.join(base, "config.json"))), hf_llama.read_weights(base), base)
        named = adapter["target_modules"]  # peft's names: "c_attn", "attn.c_proj", "q_proj", ...
        targets = [key for key, modules in lora.TARGETS[lora.family(body)].items()
                   if all(any(m == t or m.endswith("." + t) for t in named) for m in modules)]
        lora.apply_lora(body, adapter["r"], adapter["lora_alpha"], targets)
        tensors = read_safetensors(os.path.join(folder, "adapters.safetensors"))[0]
        if PEFT_SCORE not in tensors:
            raise RunError(f"{folder}/adapters.safetensors: tensor \"{PEFT_SCORE}\" is missing")
        score = tensors.pop(PEFT_SCORE).float()
        lora.load_adapters(body, tensors)
    else:
        tensors = hf_llama.read_weights(folder)
        if SCORE not in tensors:
            raise RunError(f"{folder}: tensor \"{SCORE}\" is missing")
        score = tensors.pop(SCORE)
        body, hidden_states = body_of(config, tensors, folder)
    model = SequenceClassifier(body, hidden_states, score).eval()
    run = config.get("tapegrad", config)
    context = run["train"]["context"] if isinstance(run.get("train"), dict) else None
    tokenizer = None
    tokenizer_path = os.path.join(folder, "tokenizer.json")
    if os.path.exists(tokenizer_path):
        doc = json.load(open(tokenizer_path))
        doc.pop("eos_token", None)  # the end-of-text only pads a classifier's batches: texts never hold it
        tokenizer = tokenizer_from_json(doc, tokenizer_path)
    return model, classes, tokenizer, context


@torch.no_grad()
def class_probabilities(model, ids):
    """The classes' probabilities (float64) for one text's ids, as models::class_probabilities."""
    logits = model(torch.tensor([ids]))
    return torch.softmax(logits.double(), -1)[0].tolist()

