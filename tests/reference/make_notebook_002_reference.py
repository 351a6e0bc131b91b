# make_notebook_002_reference.py — what PyTorch 1.13 prints when notebook 002's cells run once, top
# to bottom, in the order the notebook shows them, as examples/notebook_002_multi_head_attention.cpp
# runs them. The notebook never seeds; tapegrad's generator starts from torch.Generator()'s default
# seed, so this run starts from it too, and then every value is determined.
#
#     /usr/bin/python3 tests/reference/make_notebook_002_reference.py
#
# Writes tests/reference/notebook_002_torch.txt (cell markers and outputs, as the example prints them).
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from notebook_output import cell, write_output

DEFAULT_SEED = 67280421310721  # torch.Generator().initial_seed(), tapegrad's Generator::kDefaultSeed


class MultiHeadAttention(nn.Module):
    """The notebook's final version: self-attention, or cross-attention with k_input/v_input."""

    def __init__(self, num_heads, embed_dim, bias=False):
        super().__init__()
        assert embed_dim % num_heads == 0, "embed_dim % num_heads != 0"
        self.num_heads = num_heads
        self.embed_dim = embed_dim
        self.head_dim = embed_dim // num_heads
        self.wq = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.wk = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.wv = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.output_projection = nn.Linear(embed_dim, embed_dim)

    def forward(self, q_input, k_input=None, v_input=None, mask=False):
        batch = q_input.size(0)
        k_input = q_input if k_input is None else k_input
        v_input = q_input if v_input is None else v_input
        T_q, T_k = q_input.size(1), k_input.size(1)
        q = self.wq(q_input).reshape(batch, T_q, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.wk(k_input).reshape(batch, T_k, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v_input).reshape(batch, T_k, self.num_heads, self.head_dim).transpose(1, 2)
        score = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        mask = torch.triu(torch.ones(T_q, T_k), diagonal=1).bool() if mask else torch.zeros(T_q, T_k).bool()
        score = score.masked_fill(mask.unsqueeze(0).unsqueeze(0), float("-inf"))
        attention = torch.softmax(score, dim=-1) @ v
        attention = attention.transpose(1, 2).reshape(batch, T_q, self.embed_dim)
        return self.output_projection(attention)


class FirstMultiHeadAttention(MultiHeadAttention):
    """The notebook's first version: self-attention on sequences of seq_length, mask fixed."""

    def __init__(self, num_heads, embed_dim, seq_length, bias=False, mask=False):
        super().__init__(num_heads, embed_dim, bias)
        self.seq_length = seq_length
        self.require_mask = mask
        print("All parameters are set for multihead attention")

    def forward(self, batched_input_data):
        return super().forward(batched_input_data, mask=self.require_mask)


def sizes(*ts):
    """A tuple of torch.Size as the notebook shows it (IPython's display: one item a line past 80 columns)."""
    one_line = repr(tuple(t.shape for t in ts))
    return one_line if len(one_line) <= 80 else "(" + ",\n ".join(repr(t.shape) for t in ts) + ")"


def main():
    torch.manual_seed(DEFAULT_SEED)
    cell(2)
    cell(16)
    n, seq_len, embed_dim, batch, no_head = 20, 10, 8, 2, 2
    input_data = torch.arange(n * seq_len * embed_dim).float().reshape(n, seq_len, embed_dim)
    print(input_data.shape)
    cell(17)
    wq = nn.Linear(embed_dim, embed_dim, bias=False)
    wk = nn.Linear(embed_dim, embed_dim, bias=False)
    wv = nn.Linear(embed_dim, embed_dim, bias=False)
    print(sizes(wq.weight, wv.weight, wk.weight))
    cell(18)
    q, k, v = wq(input_data[:2]), wk(input_data[:2]), wv(input_data[:2])
    print(sizes(q, k, v))
    cell(22)
    q = q.reshape(batch, no_head, seq_len, embed_dim // no_head)
    k = k.reshape(batch, no_head, seq_len, embed_dim // no_head)
    v = v.reshape(batch, no_head, seq_len, embed_dim // no_head)
    print(sizes(q, k, v))
    cell(33)
    head_dim = embed_dim // no_head
    attention = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(head_dim), dim=-1) @ v
    print(attention)
    cell(41)
    print(attention.shape)
    attention = attention.transpose(2, 1).reshape(batch, seq_len, embed_dim)
    print(attention.shape, end="\n\n")
    cell(47)
    output_projection = nn.Linear(embed_dim, embed_dim)
    output_projection(attention)
    cell("None")
    cell(91)
    FirstMultiHeadAttention(2, 10, 8)
    print()
    cell(95)
    data = torch.randn(100, 10, 8)
    loader = DataLoader(TensorDataset(data), batch_size=2)
    mha = FirstMultiHeadAttention(embed_dim=8, num_heads=2, seq_length=10)
    for batch_of_data in loader:
        out = mha(batch_of_data[0])
        print(out.shape)
        print(out, end="\n\n")
        break
    cell(60)
    input_data = torch.arange(n * seq_len * embed_dim).float().reshape(n, seq_len, embed_dim)
    print(input_data.shape)
    cell(81)
    print(torch.triu(torch.ones(6, 6), diagonal=1).bool())
    cell(82)
    scores = torch.tensor([[0.1, 0.3, 0.5, 0.7], [0.2, 0.4, 0.6, 0.8], [0.9, 0.1, 0.2, 0.3], [0.3, 0.4, 0.5, 0.6]])
    cell(87)
    mask = torch.triu(torch.ones(4, 4), diagonal=1).bool()
    print(mask)
    cell(88)
    print(scores.masked_fill(mask, float("-inf")))
    cell(89)
    print(torch.zeros(5, 5).bool())
    cell(2)
    cell(3)
    mha_layer = MultiHeadAttention(num_heads=8, embed_dim=256)
    decoder_input = torch.randn(32, 15, 256)
    encoder_output = torch.randn(32, 20, 256)
    print("--- Testing Cross-Attention ---")
    print(f"Query Input Shape (from decoder):      {decoder_input.shape}")
    print(f"Key/Value Input Shape (from encoder):  {encoder_output.shape}\n")
    output = mha_layer(q_input=decoder_input, k_input=encoder_output, v_input=encoder_output)
    print(f"Final Output Shape: {output.shape}")
    print("\nNotice the output sequence length matches the query's sequence length.")


if __name__ == "__main__":
    write_output(main, "notebook_002_torch.txt")
