# make_notebook_001_reference.py — what PyTorch 1.13 prints when notebook 001's cells run once, top
# to bottom, in the order the notebook shows them, as examples/notebook_001_self_attention.cpp runs
# them. The notebook's own outputs cover cells 5 to 44; from cell 45 on they came from a generator
# state nobody can rebuild, while a run from the top (seed 42 in cell 16) is fully determined.
#
#     /usr/bin/python3 tests/reference/make_notebook_001_reference.py
#
# Writes tests/reference/notebook_001_torch.txt (cell markers and outputs, as the example prints them).
import torch
import torch.nn as nn
from torch.nn import functional as F

from notebook_output import cell, write_output


class Head(nn.Module):
    """one head of self-attention, taking query, key and value inputs"""

    def __init__(self, embed_dim, head_size, dropout):
        super().__init__()
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value):
        B, T, C = key.shape
        key = self.key(key)
        query = self.query(query)
        scores = query @ key.transpose(-2, -1) * key.size(-1) ** -0.5
        scores = scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float('-inf'))
        self.attention_weights = self.dropout(F.softmax(scores, dim=-1))
        return self.attention_weights @ self.value(value)


def main():
    cell(1)
    cell(3)
    cell(4)
    cell(5)
    torch.manual_seed(42)
    B, T, C = 4, 8, 2
    x = torch.randn(B, T, C)
    print(x.shape)
    cell(6)
    print(x[0])
    cell(7)
    attention1 = torch.zeros((B, T, C))
    for b in range(B):
        for t in range(T):
            attention1[b, t] = torch.mean(x[b, :t + 1], 0)
    cell(8)
    print(x[0, :3 + 1])
    cell(9)
    print(attention1[0, :3])
    cell(10)
    a = torch.ones(3, 3)
    print(a, end="\n\n")
    cell(11)
    b = torch.randint(0, 10, (3, 2)).float()
    print(b, end="\n\n")
    cell(12)
    c = a @ b
    print(c, end="\n\n")
    cell(13)
    print(torch.tril(torch.ones(8, 8)))
    cell(14)
    torch.manual_seed(42)
    a = torch.tril(torch.ones(8, 8))
    b = torch.randint(0, 10, (8, 2)).float()
    c = a @ b
    print(a, b, c, sep="\n", end="\n\n")
    cell(16)
    torch.manual_seed(42)
    a = torch.tril(torch.ones(8, 8))
    a = a / torch.sum(a, 1, keepdim=True)
    b = torch.randint(0, 10, (8, 2)).float()
    c = a @ b
    print(a, b, c, sep="\n", end="\n\n")
    cell(15)
    tril = torch.tril(torch.ones(T, T))
    cell(16)
    print(tril)
    cell(18)
    scores = tril / torch.sum(tril, axis=1, keepdim=True)
    print(scores)
    cell(19)
    attention2 = scores @ x
    cell(20)
    print(torch.allclose(attention2[0], attention1[0]))
    cell(21)
    print(attention1[0])
    cell(22)
    print(attention2[0])
    cell(23)
    tril = torch.tril(torch.ones(T, T))
    print(tril)
    cell(38)
    scores = torch.zeros(T, T)
    cell(39)
    scores = scores.masked_fill(tril == 0, float('-inf'))
    cell(40)
    print(scores)
    cell(41)
    p_attn = torch.softmax(scores, dim=-1)
    print(p_attn)
    cell(42)
    attention3 = p_attn @ x
    cell(43)
    print(attention3[0])
    cell(44)
    print(torch.allclose(attention2[0], attention3[0]))
    cell(45)
    B, T, C = 4, 8, 2
    x = torch.randn(B, T, C)
    cell(46)
    head_size = 3
    key = nn.Linear(in_features=C, out_features=head_size)
    query = nn.Linear(in_features=C, out_features=head_size)
    value = nn.Linear(in_features=C, out_features=head_size)
    k = key(x)
    q = query(x)
    cell(47)
    print(k.shape)
    cell(53)
    print(k.transpose(-2, -1).shape)
    cell(54)
    matmul_qk = q @ k.transpose(-2, -1)
    cell(55)
    print(matmul_qk.shape)
    cell(59)
    print(matmul_qk[0])
    cell(60)
    scores = matmul_qk * k.size(-1) ** -0.5
    cell(63)
    print(scores[0])
    cell(64)
    tril = torch.tril(torch.ones(T, T))
    scores = scores.masked_fill(tril == 0, float('-inf'))
    print(scores[0])
    cell(65)
    p_attn = torch.softmax(scores, dim=-1)
    print(p_attn[0])
    cell(66)
    print(p_attn.shape)
    cell(67)
    v = value(x)
    print(v.shape)
    cell(68)
    attention = p_attn @ v
    cell(69)
    print(attention.shape)
    cell(46)
    head = Head(embed_dim=C, head_size=head_size, dropout=0.0)
    out = head(x, x, x)
    print(head)
    print(f"output {out.shape}, attention weights {head.attention_weights.shape}")


if __name__ == "__main__":
    write_output(main, "notebook_001_torch.txt")
