# hf_gpt2.py — GPT-2 in Hugging Face's layout (GPT2LMHeadModel's module tree and state_dict names),
# written from the documented architecture, as `transformers` is not a Debian package; with
# from_pretrained / save_pretrained reading and writing a folder as HF does (config.json and
# model.safetensors; safetensors by hand through run_folder.py, as Debian has no package for it).
#
#   GPT2LMHeadModel
#     transformer.wte (V,C), transformer.wpe (P,C)     token and position embeddings, then dropout
#     transformer.h.i   GPT2Block:  x = x + attn(ln_1(x)),  x = x + mlp(ln_2(x))
#       attn.c_attn   Conv1D(C -> 3C): q, k, v side by side; heads of C/n_head; causal softmax
#                     of q k^T / sqrt(C/n_head); attn.c_proj Conv1D(C -> C)
#       mlp.c_fc      Conv1D(C -> 4C), gelu_new (GELU's tanh form), mlp.c_proj Conv1D(4C -> C)
#     transformer.ln_f, then lm_head: x wte^T (tied to wte, so the state_dict lists it too)
#   Conv1D keeps its weight as (in, out) and computes x W + b (nn.Linear keeps (out, in)).
#   attn.bias (1,1,P,P), the causal mask, and attn.masked_bias are buffers that are not saved (as in
#   newer HF versions; save_pretrained(buffers=True) writes them, as older versions did), and
#   save_pretrained leaves lm_head.weight out (tied), as HF's safetensors files do.
#
#     model = GPT2LMHeadModel.from_pretrained("folder")      # F32, F16 or BF16 weights, read as float32
#     logits = model(torch.tensor([[1, 2, 3]]))              # (B, T, V)
#     logits = model(ids, attention_mask=mask)   # mask (B, T): 1 = a token, 0 = padding (HF's meaning)
#     logits, past = model(prompt, use_cache=True)           # the KV cache, as HF's past_key_values:
#     logits, past = model(next_id, past_key_values=past, use_cache=True)   # one position's work
#     model.save_pretrained("out", prefixed=True, dtype=torch.float16)
import json
import math
import os

import torch
import torch.utils.checkpoint
import torch.nn as nn

from .run_folder import read_safetensors, safetensors_bytes, write_atomically

DEFAULTS = dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, layer_norm_epsilon=1e-5,
                resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1, activation_function="gelu_new", n_inner=None)
TANH_GELUS = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(nn.Module):
    def __init__(self, n_out, n_in):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.02)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


class GPT2Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        p, c = cfg["n_positions"], cfg["n_embd"]
        self.register_buffer("bias", torch.tril(torch.ones(p, p, dtype=torch.bool)).view(1, 1, p, p), persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.n_head = cfg["n_head"]
        self.c_attn = Conv1D(3 * c, c)
        self.c_proj = Conv1D(c, c)
        self.attn_dropout = nn.Dropout(cfg["attn_pdrop"])
        self.resid_dropout = nn.Dropout(cfg["resid_pdrop"])

    def forward(self, x, attention_mask=None, layer_past=None):
        """With layer_past = (k, v) of the earlier positions (b, h, past, hs), x is the positions
        after them; returns the output and this layer's (k, v) of all positions (HF's "present")."""
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        past = 0
        if layer_past is not None:
            past = layer_past[0].shape[2]
            k, v = torch.cat((layer_past[0], k), dim=2), torch.cat((layer_past[1], v), dim=2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(c // self.n_head)
        seen = self.bias[:, :, past:past + t, :past + t]  # (1, 1, t, past + t): causal
        if attention_mask is not None:  # (b, past + t), 0 = padding: no query sees that key
            seen = seen & attention_mask.bool()[:, None, None, :]
        scores = scores.masked_fill(~seen, torch.finfo(scores.dtype).min)
        weights = self.attn_dropout(torch.softmax(scores, dim=-1))
        out = (weights @ v).transpose(1, 2).reshape(b, t, c)
        return self.resid_dropout(self.c_proj(out)), (k, v)


class GPT2MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = Conv1D(4 * cfg["n_embd"], cfg["n_embd"])
        self.c_proj = Conv1D(cfg["n_embd"], 4 * cfg["n_embd"])
        self.dropout = nn.Dropout(cfg["resid_pdrop"])

    def forward(self, x):
        return self.dropout(self.c_proj(gelu_new(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])
        self.attn = GPT2Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])
        self.mlp = GPT2MLP(cfg)

    def forward(self, x, attention_mask=None, layer_past=None):
        """x after the block, and its attention's (k, v) of all positions."""
        attended, present = self.attn(self.ln_1(x), attention_mask, layer_past)
        x = x + attended
        return x + self.mlp(self.ln_2(x)), present


class GPT2Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["n_positions"], cfg["n_embd"])
        self.drop = nn.Dropout(cfg["embd_pdrop"])
        self.h = nn.ModuleList(GPT2Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(cfg["n_embd"], eps=cfg["layer_norm_epsilon"])
        self.gradient_checkpointing = False  # in training, each block recomputed in backward

    def forward(self, idx, attention_mask=None, past_key_values=None):
        """The final norm's output; with past_key_values (a (k, v) per block, of the positions before
        idx), also the blocks' (k, v) of all positions, as HF's use_cache."""
        past = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(past, past + idx.shape[1])))
        presents = []
        for i, block in enumerate(self.h):
            layer_past = None if past_key_values is None else past_key_values[i]
            if self.gradient_checkpointing and self.training:
                x, present = torch.utils.checkpoint.checkpoint(block, x, attention_mask, layer_past, use_reentrant=False)
            else:
                x, present = block(x, attention_mask, layer_past)
            presents.append(present)
        return self.ln_f(x), presents


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        cfg = dict(DEFAULTS, **config)
        if cfg.get("model_type") != "gpt2" or cfg["activation_function"] not in TANH_GELUS:
            raise ValueError(f"not a GPT-2 config this twin runs: {cfg.get('model_type')}, {cfg['activation_function']}")
        if cfg["n_inner"] not in (None, 4 * cfg["n_embd"]):
            raise ValueError(f"n_inner {cfg['n_inner']}: this twin has 4 * n_embd")
        self.config = dict(config)
        self.transformer = GPT2Model(cfg)
        self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx, attention_mask=None, past_key_values=None, use_cache=False):
        """Logits (B, T, V); with use_cache, (logits, the (k, v) of every block for all positions),
        which the next call takes as past_key_values: a step then runs only the new positions."""
        hidden, presents = self.transformer(idx, attention_mask, past_key_values)
        logits = self.lm_head(hidden)
        return (logits, presents) if use_cache else logits

    @classmethod
    def from_pretrained(cls, folder):
        """config.json and model.safetensors, names with or without "transformer.", any float dtype."""
        with open(os.path.join(folder, "config.json")) as f:
            model = cls(json.load(f))
        tensors, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
        state = {(k if k.startswith("transformer.") or k == "lm_head.weight" else "transformer." + k): v.float()
                 for k, v in tensors.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}
        state.setdefault("lm_head.weight", state["transformer.wte.weight"])
        model.load_state_dict(state, strict=True)
        return model.eval()

    def hf_tensors(self, prefixed=True, dtype=torch.float32, buffers=False, lm_head=False):
        """The tensors save_pretrained writes, in state_dict order: no lm_head unless asked (files of
        other tools have it); with buffers, each block's attn.bias and attn.masked_bias after its
        ln_1, as older HF versions saved them."""
        out = {}
        for name, t in self.state_dict().items():
            if name == "lm_head.weight" and not lm_head:
                continue
            key = name if prefixed or name == "lm_head.weight" else name[len("transformer."):]
            if buffers and name.endswith(".attn.c_attn.weight"):
                attn = dict(self.named_buffers())
                for buffer in ("bias", "masked_bias"):
                    out[key.replace("c_attn.weight", buffer)] = attn[name.replace("c_attn.weight", buffer)]
            out[key] = t.to(dtype)
        return out

    def save_pretrained(self, folder, prefixed=False, dtype=torch.float32, buffers=False):
        os.makedirs(folder, exist_ok=True)
        config = dict(self.config, architectures=["GPT2LMHeadModel"], model_type="gpt2")
        config["torch_dtype"] = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[dtype]
        tensors = self.hf_tensors(prefixed, dtype, buffers)
        write_atomically(os.path.join(folder, "model.safetensors"), safetensors_bytes(tensors, {"format": "pt"}))
        write_atomically(os.path.join(folder, "config.json"), json.dumps(config, indent=2) + "\n")
