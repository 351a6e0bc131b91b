# make_module_reference.py — PyTorch 1.13's nn modules from a seed: parameter values, state_dict
# names, outputs and gradients, and how the modules print, as test data for
# tests/nn/test_module.cpp.
#
#     BLIS_ARCH_TYPE=6 /usr/bin/python3 tests/reference/make_module_reference.py
#
# torch's float32 matmuls go through Debian's libblas.so.3 (BLIS), whose roundings depend on the
# kernels BLIS picks for the CPU; the committed file was made with BLIS 0.9's zen3 kernels, which
# BLIS_ARCH_TYPE=6 selects on any x86-64 CPU, so a rerun reproduces it bit for bit.
#
# Writes tests/reference/module_torch.json. Floating values are the 16 hex digits of each value's
# float64 bit pattern (float32 widened exactly).
#
# "cases": a module built from a seed, run on x, with y.sum() backpropagated.
# "attention_option_cases": MultiHeadAttention.forward(x, kv, causal, key_padding_mask) (the
# options of tg::nn::AttentionOptions), with a random output gradient g backpropagated; x, kv
# and g are drawn in that order from torch.manual_seed(1000), dropout from torch.manual_seed(1001).
# The options are implemented here the obvious way: the scores are masked_fill'ed with -inf
# where masked (causal: the mask buffer's top-left (T_q, T_k) corner; padding: the padded keys),
# softmax, then the rows whose every key is masked (NaN from softmax) are set to zero weights.
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

    def forward(self, x, kv=None, causal=True, key_padding_mask=None):
        b, T, d_in = x.shape
        kv = x if kv is None else kv
        T_k = kv.shape[1]
        split = lambda t, n: t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        keys, queries, values = split(self.W_key(kv), T_k), split(self.W_query(x), T), split(self.W_value(kv), T_k)
        s = queries @ keys.transpose(2, 3)
        masked = torch.zeros(T, T_k, dtype=torch.bool)
        if causal:
            masked = masked | self.mask.bool()[:T, :T_k]
        if key_padding_mask is not None:
            masked = masked | key_padding_mask[:, None, None, :]
        s = s.masked_fill(masked, -torch.inf)
        w = torch.softmax(s / keys.shape[-1] ** 0.5, dim=-1)
        w = w.masked_fill(masked.all(dim=-1, keepdim=True), 0.0)  # a query that sees no key: zero weights
        w = self.dropout(w)
        self.last_weights = w.detach()
        ctx = (w @ values).transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.out_proj(ctx)


ATTENTION_OPTION_CASES = []


def attention_option_case(case_id, seed, args, x_shape, kv_len=None, causal=True, key_padding_mask=None):
    torch.manual_seed(seed)
    m = MultiHeadAttention(*args)
    torch.manual_seed(1000)
    x = torch.randn(x_shape, requires_grad=True)
    kv = torch.randn(x_shape[0], kv_len, x_shape[2], requires_grad=True) if kv_len is not None else None
    g = torch.randn(x_shape[0], x_shape[1], m.d_out)
    pad = torch.tensor(key_padding_mask, dtype=torch.bool) if key_padding_mask is not None else None
    torch.manual_seed(1001)
    y = m(x, kv, causal, pad)
    y.backward(g)
    grads = [[k, p.grad] for k, p in m.named_parameters()]
    for t in [y, x.grad] + ([kv.grad] if kv is not None else []) + [p for _, p in grads]:
        assert torch.isfinite(t).all(), case_id  # no NaN from a query whose keys are all padded
    entry = {"id": case_id, "seed": seed, "args": list(args), "causal": causal, "x": enc(x), "g": enc(g),
             "y": enc(y), "x_grad": enc(x.grad), "weights": enc(m.last_weights),
             "grads": [[k, enc(p)] for k, p in grads]}
    if kv is not None:
        entry["kv"] = enc(kv)
        entry["kv_grad"] = enc(kv.grad)
    if key_padding_mask is not None:
        entry["key_padding_mask"] = key_padding_mask
    ATTENTION_OPTION_CASES.append(entry)


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
    # MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias) with options
    attention_option_case("cross_attention", 21, (4, 6, 8, 0.0, 2), [2, 3, 4], kv_len=5, causal=False)
    attention_option_case("cross_attention_causal_more_keys", 22, (4, 6, 8, 0.0, 3), [2, 3, 4], kv_len=6)
    attention_option_case("cross_attention_causal_fewer_keys", 23, (4, 4, 8, 0.0, 2, True), [2, 5, 4], kv_len=2)
    attention_option_case("self_attention_not_causal", 24, (3, 4, 6, 0.0, 2), [2, 5, 3], causal=False)
    # row 1 fully padded; in row 2 query 0's only visible key (key 0) is padded
    padding = [[False, False, True, True], [True, True, True, True], [True, False, False, True]]
    attention_option_case("key_padding_causal", 25, (4, 4, 6, 0.0, 2), [3, 4, 4], key_padding_mask=padding)
    attention_option_case("key_padding_not_causal", 26, (4, 4, 6, 0.0, 2, True), [3, 4, 4], causal=False,
                          key_padding_mask=padding)
    attention_option_case("cross_attention_key_padding_dropout", 27, (4, 6, 8, 0.5, 2, True), [3, 2, 4], kv_len=4,
                          causal=False, key_padding_mask=padding)
    attention_option_case("key_padding_causal_dropout", 28, (4, 8, 6, 0.2, 4), [3, 4, 4], key_padding_mask=padding)
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "module_torch.json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/reference/make_module_reference.py", "torch_version": torch.__version__,
                   "cases": CASES, "attention_option_cases": ATTENTION_OPTION_CASES}, f, indent=1)
        f.write("\n")
    print(f"wrote {len(CASES)} cases and {len(ATTENTION_OPTION_CASES)} attention option cases to {path}")


if __name__ == "__main__":  # (make_safetensors_reference.py imports the classes)
    main()
