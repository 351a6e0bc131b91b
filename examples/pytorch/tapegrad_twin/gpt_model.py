# gpt_model.py — the PyTorch twin of tapegrad's tg::models::GPTModel (models/gpt.h): the same classes,
# parameter names and creation order, so torch.manual_seed(s) gives the same weights as
# tg::manual_seed(s) and state_dicts move both ways with load_state_dict(strict=True).
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, T, _ = x.shape
        split = lambda t: t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        keys, queries, values = split(self.W_key(x)), split(self.W_query(x)), split(self.W_value(x))
        scores = queries @ keys.transpose(2, 3)
        scores.masked_fill_(self.mask.bool()[:T, :T], -torch.inf)
        weights = self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1))
        context = (weights @ values).transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.out_proj(context)


class FeedForward(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(emb_dim, 4 * emb_dim), nn.GELU(approximate="tanh"),
                                    nn.Linear(4 * emb_dim, emb_dim))

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(cfg["emb_dim"], cfg["emb_dim"], cfg["context_length"], cfg["drop_rate"],
                                      cfg["n_heads"], cfg["qkv_bias"])
        self.ff = FeedForward(cfg["emb_dim"])
        self.norm1 = nn.LayerNorm(cfg["emb_dim"], eps=cfg.get("layer_norm_eps", 1e-5))
        self.norm2 = nn.LayerNorm(cfg["emb_dim"], eps=cfg.get("layer_norm_eps", 1e-5))
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        x = x + self.drop_shortcut(self.att(self.norm1(x)))
        return x + self.drop_shortcut(self.ff(self.norm2(x)))


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.final_norm = nn.LayerNorm(cfg["emb_dim"], eps=cfg.get("layer_norm_eps", 1e-5))
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)
        if cfg.get("tie_weights", False):
            self.out_head.weight = self.tok_emb.weight

    def forward(self, idx):
        return self.out_head(self.hidden_states(idx))

    def hidden_states(self, idx):
        """The final norm's output (B, T, C)."""
        T = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))
        x = self.trf_blocks(self.drop_emb(x))
        return self.final_norm(x)


@torch.no_grad()
def sample_next_token(logits, temperature=1.0, top_k=0, top_p=1.0, generator=None):
    """logits (B,V) -> next ids (B,1), the procedure of tapegrad's models/generation/generate.h."""
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)
    logits = logits / temperature
    if 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, -torch.inf)
    probs = torch.softmax(logits, dim=-1)
    if top_p < 1.0:
        values, indices = torch.sort(probs, dim=-1, descending=True)
        kept = values.masked_fill(torch.cumsum(values, dim=-1) - values > top_p, 0.0)
        probs = torch.zeros_like(probs).scatter_add(-1, indices, kept)
    return torch.multinomial(probs, 1, generator=generator)


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=0, top_p=1.0, generator=None, stop_token=-1):
    """idx (B,T) -> (B, T + max_new_tokens); the window slides past the context length. stop_token >= 0:
    it stops after the step in which every row has written that id (models/generation/generate.h's stop_token)."""
    # the positions a forward may see: GPTModel's position table, a Llama's max_position_embeddings
    context = model.pos_emb.weight.shape[0] if hasattr(model, "pos_emb") else model.config.max_position_embeddings
    stopped = torch.zeros(idx.shape[0], dtype=torch.bool, device=idx.device)
    for _ in range(max_new_tokens):
        logits = model(idx[:, -context:])[:, -1, :]
        next_ids = sample_next_token(logits, temperature, top_k, top_p, generator)
        idx = torch.cat([idx, next_ids], dim=1)
        if stop_token >= 0:
            stopped |= next_ids[:, 0] == stop_token
            if bool(stopped.all()):
                break
    return idx
