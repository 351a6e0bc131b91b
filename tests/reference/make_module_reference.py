# make_module_reference.py — PyTorch 1.13's nn modules from a seed: parameter values, state_dict
# names, outputs and gradients, and how the modules print, as test data for
# tests/nn/test_module.cpp.
#
#     /usr/bin/python3 tests/reference/make_module_reference.py
#
# Writes tests/reference/module_torch.json. Floating values are the 16 hex digits of each value's
# float64 bit pattern (float32 widened exactly).
import json
import os
import struct

import torch
import torch.nn as nn


def enc(t):
    return {"shape": list(t.shape), "values": [struct.pack(">d", float(v)).hex() for v in t.detach().double().flatten().tolist()]}


CASES = []


def case(case_id, seed, make, x_shape, x_seed=1000):
    torch.manual_seed(seed)
    m = make()
    torch.manual_seed(x_seed)
    x = torch.randn(x_shape) if x_shape is not None else None
    entry = {"id": case_id, "seed": seed, "repr": repr(m),
             "state_dict": [[k, enc(v)] for k, v in m.state_dict().items()],
             "num_parameters": sum(p.numel() for p in m.parameters())}
    if x is not None:
        x.requires_grad_(True)
        torch.manual_seed(x_seed + 1)  # what dropout draws inside forward
        y = m(x)
        y.sum().backward()
        entry["x"] = enc(x)
        entry["y"] = enc(y)
        entry["grads"] = [[k, enc(p.grad)] for k, p in m.named_parameters()]
        entry["x_grad"] = enc(x.grad)
    CASES.append(entry)


# --- the book's attention classes (notebook 003), as the notebook defines them -------------------

class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys, queries, values = x @ self.W_key, x @ self.W_query, x @ self.W_value
        w = torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
        return w @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        w = torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)
        return w @ values


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        s = queries @ keys.transpose(1, 2)
        s.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        w = self.dropout(torch.softmax(s / keys.shape[-1] ** 0.5, dim=-1))
        return w @ values


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, T, d_in = x.shape
        split = lambda t: t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        keys, queries, values = split(self.W_key(x)), split(self.W_query(x)), split(self.W_value(x))
        s = queries @ keys.transpose(2, 3)
        s.masked_fill_(self.mask.bool()[:T, :T], -torch.inf)
        w = self.dropout(torch.softmax(s / keys.shape[-1] ** 0.5, dim=-1))
        ctx = (w @ values).transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.out_proj(ctx)



def main():
    case("linear", 123, lambda: nn.Linear(3, 2), [4, 3])
    case("linear_no_bias", 789, lambda: nn.Linear(3, 2, bias=False), [2, 5, 3])
    case("sequential_mlp", 7, lambda: nn.Sequential(nn.Linear(4, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 2)), [3, 4])
    case("layer_norm", 1, lambda: nn.LayerNorm(5), [2, 5])
    case("sequential_norm_relu_softmax", 2,
         lambda: nn.Sequential(nn.LayerNorm(4, eps=1e-3), nn.ReLU(), nn.Linear(4, 4), nn.Softmax(dim=-1)), [3, 4])
    case("embedding", 3, lambda: nn.Embedding(6, 3), None)
    case("dropout_repr", 4, lambda: nn.Dropout(0.25), None)
    case("self_attention_v1", 123, lambda: SelfAttention_v1(3, 2), [6, 3])
    case("self_attention_v2_bias", 789, lambda: SelfAttention_v2(3, 2, qkv_bias=True), [6, 3])
    case("causal_attention", 123, lambda: CausalAttention(3, 2, 6, 0.0), [2, 5, 3])
    case("causal_attention_dropout", 11, lambda: CausalAttention(4, 3, 8, 0.5), [2, 6, 4])
    case("mha_wrapper", 123, lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2), [2, 6, 3])
    case("multi_head_attention", 123, lambda: MultiHeadAttention(3, 2, 6, 0.0, 2), [2, 6, 3])
    case("multi_head_attention_4_heads_dropout", 5, lambda: MultiHeadAttention(8, 8, 10, 0.1, 4, qkv_bias=True), [3, 7, 8])
    case("module_list", 5, lambda: nn.ModuleList([nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 3), nn.GELU())]), None)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "module_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_module_reference.py", "torch_version": torch.__version__,
                   "cases": CASES}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {path}")


if __name__ == "__main__":  # (make_safetensors_reference.py imports the classes)
    main()
