# hf_llama.py — the Llama / Qwen family (model_type llama, qwen2, qwen3) in Hugging Face's layout
# (LlamaForCausalLM's module tree and state_dict names), written from the documented architecture,
# as `transformers` is not a Debian package; from_pretrained / save_pretrained read and write a
# folder as Hugging Face does (config.json and model.safetensors, or an index and its shards).
#
#   LlamaForCausalLM
#     model.embed_tokens (V,C)     no position embedding: RoPE turns q and k instead
#     model.layers.i               x = x + self_attn(input_layernorm(x))
#                                  x = x + mlp(post_attention_layernorm(x))
#       self_attn   q_proj (C -> h*hs), k_proj and v_proj (C -> kvh*hs), o_proj (h*hs -> C);
#                   qwen2: biases on q, k, v; llama, qwen3: on all four when attention_bias;
#                   qwen3: q_norm, k_norm, an RMSNorm over each head's hs features, before RoPE;
#                   query head j reads kv head j // (h // kvh); causal softmax of q k^T / sqrt(hs)
#       mlp         down_proj(silu(gate_proj(x)) * up_proj(x)), no biases
#     model.norm, then lm_head (tied: embed_tokens.weight)
#   RMSNorm(x) = x / sqrt(mean(x^2) + eps) * weight, computed in float32
#   RoPE, rotate-half: x * cos + cat(-x2, x1) * sin with x1, x2 the halves of a head; the angle of
#   position p and feature i (of either half) is p * inv_freq_i, inv_freq_i = theta^(-2i/hs), with
#   rope_scaling "llama3" stretching the long wavelengths; all in float32.
#
#     model = LlamaForCausalLM.from_pretrained("folder")   # F32, F16 or BF16 weights, read as float32
#     logits = model(torch.tensor([[1, 2, 3]]))            # (B, T, V)
#     logits, past = model(prompt, use_cache=True)         # the KV cache: only the kv heads
#     logits, past = model(next_id, past_key_values=past, use_cache=True)
#     model.save_pretrained("out", dtype=torch.bfloat16, shards=2)
import json
import math
import os

import torch
import torch.nn as nn
import torch.utils.checkpoint

from .run_folder import read_safetensors, safetensors_bytes, write_atomically


def read_weights(folder):
    """Every tensor of the folder's model.safetensors, or of the shards its index names, as float32."""
    index = os.path.join(folder, "model.safetensors.index.json")
    files = (sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index)
             else ["model.safetensors"])
    tensors = {}
    for f in files:
        tensors.update(read_safetensors(os.path.join(folder, f))[0])
    return {k: v.float() for k, v in tensors.items()}

FAMILY = ("llama", "qwen2", "qwen3")


def config_defaults(model_type):
    """transformers' defaults of the fields this model reads, for each type."""
    llama = model_type == "llama"
    return dict(vocab_size=32000 if llama else 151936, hidden_size=4096, intermediate_size=11008 if llama else 22016,
                num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=None, head_dim=None,
                max_position_embeddings=2048 if llama else 32768, rms_norm_eps=1e-6, rope_theta=10000.0,
                rope_scaling=None, tie_word_embeddings=False, attention_bias=False, hidden_act="silu",
                attention_dropout=0.0)


class Config:
    def __init__(self, d):
        if d.get("model_type") not in FAMILY:
            raise ValueError(f"model_type {d.get('model_type')!r}: this twin reads {FAMILY}")
        full = config_defaults(d["model_type"])
        full.update(d)
        if "rope_parameters" in d:  # transformers 5's form
            full["rope_theta"] = d["rope_parameters"].get("rope_theta", 10000.0)
            full["rope_scaling"] = d["rope_parameters"]
        for k, v in full.items():
            setattr(self, k, v)
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            self.head_dim = 128 if self.model_type == "qwen3" else self.hidden_size // self.num_attention_heads
        assert self.hidden_act == "silu"
        self.qkv_bias = True if self.model_type == "qwen2" else self.attention_bias
        self.o_bias = False if self.model_type == "qwen2" else self.attention_bias
        self.qk_norm = self.model_type == "qwen3"


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rope_inv_freq(config):
    """inv_freq (hs/2) in float32, with llama3 scaling when the config asks for it."""
    dim = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    s = config.rope_scaling
    kind = (s or {}).get("rope_type", (s or {}).get("type", "default"))
    if kind == "default":
        return inv_freq
    assert kind == "llama3", kind
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old_context = s["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context / low, old_context / high
    wavelen = 2 * math.pi / inv_freq
    stretched = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)  # long waves: / factor
    smooth = (old_context / wavelen - low) / (high - low)
    blended = (1 - smooth) * stretched / factor + smooth * stretched
    medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(medium, blended, stretched)


def rope_cos_sin(inv_freq, past, T, dtype):
    """cos and sin (T, hs) of positions past .. past+T-1: angles in float32, then cast."""
    positions = torch.arange(past, past + T, dtype=torch.float32)
    freqs = positions[:, None] * inv_freq[None, :]  # (T, hs/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.kvh, self.hs = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        self.q_proj = nn.Linear(c.hidden_size, self.h * self.hs, bias=c.qkv_bias)
        self.k_proj = nn.Linear(c.hidden_size, self.kvh * self.hs, bias=c.qkv_bias)
        self.v_proj = nn.Linear(c.hidden_size, self.kvh * self.hs, bias=c.qkv_bias)
        self.o_proj = nn.Linear(self.h * self.hs, c.hidden_size, bias=c.o_bias)
        if c.qk_norm:
            self.q_norm = RMSNorm(self.hs, c.rms_norm_eps)
            self.k_norm = RMSNorm(self.hs, c.rms_norm_eps)
        self.qk_norm = c.qk_norm
        self.attention_dropout = c.attention_dropout  # on the attention weights, when training

    def forward(self, x, cos, sin, past_kv=None):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hs)
        k = self.k_proj(x).view(B, T, self.kvh, self.hs)
        v = self.v_proj(x).view(B, T, self.kvh, self.hs)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rope(q.transpose(1, 2), cos, sin)  # (B, h, T, hs)
        k = apply_rope(k.transpose(1, 2), cos, sin)  # (B, kvh, T, hs)
        v = v.transpose(1, 2)
        past = 0
        if past_kv is not None:
            past = past_kv[0].shape[2]
            k, v = torch.cat((past_kv[0], k), dim=2), torch.cat((past_kv[1], v), dim=2)
        present = (k, v)  # only the kv heads are kept
        groups = self.h // self.kvh
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)  # (B, h, S, hs)
        S = k.shape[2]
        scores = q @ k.transpose(2, 3) / math.sqrt(self.hs)  # (B, h, T, S)
        hidden = torch.ones(T, S, dtype=torch.bool).triu(past + 1)  # query i at position past + i
        weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
        weights = torch.nn.functional.dropout(weights, self.attention_dropout, self.training)
        context = (weights @ v).transpose(1, 2).reshape(B, T, self.h * self.hs)
        return self.o_proj(context), present


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x, cos, sin, past_kv=None):
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, past_kv)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), present


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.register_buffer("inv_freq", rope_inv_freq(c), persistent=False)
        self.gradient_checkpointing = False  # in training, each layer recomputed in backward


class LlamaForCausalLM(nn.Module):
    def __init__(self, config_dict):
        super().__init__()
        self.config_dict = dict(config_dict)
        self.config = c = Config(config_dict)
        self.model = Model(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        if c.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        with torch.no_grad():  # Hugging Face's _init_weights, in named_parameters() order (as tapegrad's)
            for name, p in self.named_parameters():
                if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.normal_(0.0, config_dict.get("initializer_range", 0.02))

    def forward(self, idx, past_key_values=None, use_cache=False):
        hidden, presents = self.hidden_states(idx, past_key_values)
        logits = self.lm_head(hidden)
        return (logits, presents) if use_cache else logits

    def hidden_states(self, idx, past_key_values=None):
        """The final norm's output (B, T, C), and each layer's (k, v) of all positions."""
        past = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        x = self.model.embed_tokens(idx)
        cos, sin = rope_cos_sin(self.model.inv_freq, past, idx.shape[1], x.dtype)
        presents = []
        for i, layer in enumerate(self.model.layers):
            layer_past = None if past_key_values is None else past_key_values[i]
            if self.model.gradient_checkpointing and self.training:
                x, present = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, layer_past, use_reentrant=False)
            else:
                x, present = layer(x, cos, sin, layer_past)
            presents.append(present)
        return self.model.norm(x), presents

    def hf_state(self):
        """The state_dict as the files hold it: lm_head.weight left out when tied."""
        state = self.state_dict()
        if self.config.tie_word_embeddings:
            del state["lm_head.weight"]
        return state

    @classmethod
    def from_pretrained(cls, folder):
        config = json.load(open(os.path.join(folder, "config.json")))
        model = cls(config)
        state = {k: v for k, v in read_weights(folder).items() if not k.endswith("rotary_emb.inv_freq")}
        if model.config.tie_word_embeddings:
            state.pop("lm_head.weight", None)
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        model.load_state_dict(state, strict=True)
        return model.eval()

    def save_pretrained(self, folder, dtype=torch.float32, shards=1):
        os.makedirs(folder, exist_ok=True)
        config = dict(self.config_dict, torch_dtype=str(dtype).replace("torch.", ""))
        state = {k: v.to(dtype) for k, v in self.hf_state().items()}
        names = list(state)
        if shards == 1:
            write_atomically(os.path.join(folder, "model.safetensors"), safetensors_bytes(state, {"format": "pt"}))
        else:  # names split into `shards` runs, with the index Hugging Face writes beside them
            per = math.ceil(len(names) / shards)
            weight_map = {}
            for s in range(shards):
                file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
                part = {n: state[n] for n in names[s * per:(s + 1) * per]}
                write_atomically(os.path.join(folder, file), safetensors_bytes(part, {"format": "pt"}))
                weight_map.update({n: file for n in part})
            index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in state.values())},
                     "weight_map": weight_map}
            write_atomically(os.path.join(folder, "model.safetensors.index.json"),
                             (json.dumps(index, indent=2) + "\n").encode())
        write_atomically(os.path.join(folder, "config.json"), (json.dumps(config, indent=2) + "\n").encode())


def greedy(model, idx, max_new_tokens):
    """Greedy ids with the KV cache: the prompt once, then one position per step."""
    with torch.no_grad():
        logits, past = model(idx, use_cache=True)
        out = idx
        for _ in range(max_new_tokens):
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            out = torch.cat((out, nxt), dim=1)
            logits, past = model(nxt, past_key_values=past, use_cache=True)
        return out
