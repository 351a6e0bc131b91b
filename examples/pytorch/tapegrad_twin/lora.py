# lora.py — LoRA as PyTorch's peft adds it, written out (peft is not a Debian package) for
# hf_gpt2.py's GPT2LMHeadModel and hf_llama.py's LlamaForCausalLM (Llama, Qwen2, Qwen3): the twin
# of tapegrad's models/lora/gpt_lora.h, models/lora/llama_lora.h and train_gpt --lora-rank.
#
#   LoraLayer(base, r, alpha)    y = base(x) + lora_B(lora_A(x)) * (alpha / r), peft's lora.Linear:
#                                base_layer (frozen), lora_A nn.Linear(in, r, bias=False), lora_B
#                                nn.Linear(r, out, bias=False); A drawn as peft's update_layer draws it
#                                (the two nn.Linear inits, then kaiming_uniform_(A, a=sqrt(5))), B zeros.
#                                base is an nn.Linear (weight (out, in)) or GPT-2's Conv1D (weight
#                                (in, out): peft's fan_in_fan_out)
#   apply_lora(model, r, alpha, targets)   targets "attn" and/or "mlp":
#                                GPT-2   attn: attn.c_attn (q, k, v fused), attn.c_proj; mlp: mlp.c_fc, mlp.c_proj
#                                Llama   attn: q_proj, k_proj, v_proj, o_proj; mlp: gate_proj, up_proj, down_proj
#                                in the model's module order (peft's), then every other parameter frozen
#   adapter_tensors(model)       the adapters under the names peft's save_pretrained writes:
#                                "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight",
#                                "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", ...
#   load_adapters(model, tensors)   the reverse, strict
#   merge_and_unload(model)      each LoraLayer replaced by its base layer with W + (B A) (alpha / r)
#                                ((B A)^T for a Conv1D)
#
#     model = GPT2LMHeadModel.from_pretrained("gpt2")
#     torch.manual_seed(1337)                 # as train_gpt --seed 1337 does before the adapters
#     apply_lora(model, r=8, alpha=8, targets=("attn", "mlp"))
import math

import torch
import torch.nn as nn

from .hf_gpt2 import Conv1D

PEFT_PREFIX = "base_model.model."
TARGETS = {
    "gpt2": {"attn": ("attn.c_attn", "attn.c_proj"), "mlp": ("mlp.c_fc", "mlp.c_proj")},
    "llama": {"attn": ("q_proj", "k_proj", "v_proj", "o_proj"), "mlp": ("gate_proj", "up_proj", "down_proj")},
}


class LoraLayer(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base_layer = base
        self.fan_in_fan_out = isinstance(base, Conv1D)  # Conv1D keeps (in, out)
        n_in, n_out = base.weight.shape if self.fan_in_fan_out else reversed(base.weight.shape)
        self.lora_A = nn.Linear(n_in, r, bias=False)
        self.lora_B = nn.Linear(r, n_out, bias=False)
        self.scaling = alpha / r
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling

    def merged(self):
        """The base layer with W + B A * scaling (transposed for a Conv1D)."""
        delta = (self.lora_B.weight @ self.lora_A.weight) * self.scaling  # (out, in)
        with torch.no_grad():
            self.base_layer.weight += delta.T if self.fan_in_fan_out else delta
        return self.base_layer


def family(model):
    """"gpt2" for GPT-2 (its Conv1D layers), "llama" for the Llama / Qwen family."""
    return "gpt2" if any(isinstance(m, Conv1D) for m in model.modules()) else "llama"


def apply_lora(model, r, alpha, targets):
    names = [t for key in targets for t in TARGETS[family(model)][key]]
    for name, module in list(model.named_modules()):
        if isinstance(module, (Conv1D, nn.Linear)) and any(name.endswith("." + t) for t in names):
            parent_name, child = name.rsplit(".", 1)
            setattr(model.get_submodule(parent_name), child, LoraLayer(module, r, alpha))
    for name, p in model.named_parameters():
        p.requires_grad_(".lora_A." in name or ".lora_B." in name)
    return model


def adapter_tensors(model):
    return {PEFT_PREFIX + name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


def load_adapters(model, tensors):
    own = dict(model.named_parameters())
    names = {PEFT_PREFIX + n for n, p in own.items() if ".lora_A." in n or ".lora_B." in n}
    if set(tensors) != names:
        raise ValueError(f"the adapters' names differ from the model's: {sorted(set(tensors) ^ names)[:4]}")
    with torch.no_grad():
        for name, t in tensors.items():
            own[name[len(PEFT_PREFIX):]].copy_(t)


def merge_and_unload(model):
    for name, module in list(model.named_modules()):
        if isinstance(module, LoraLayer):
            parent_name, child = name.rsplit(".", 1)
            setattr(model.get_submodule(parent_name), child, module.merged())
    return model
