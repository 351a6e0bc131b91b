# make_notebook_000_reference.py — what PyTorch 1.13 prints when notebook 000's cells run once, top
# to bottom, in the order the notebook shows them, as examples/notebook_000_attention_step_by_step.cpp
# runs them. The notebook's own outputs are reproducible in cells 3 to 34 (seeds 123 and 789) and
# 45 and 131; cells 26 and 27 (dropout) came from a build of PyTorch with another random stream,
# and cells 46 to 94 from a generator state nobody can rebuild. A run from the top is fully
# determined (the default generator starts from torch.Generator()'s seed, and cell 34 seeds it).
#
#     /usr/bin/python3 tests/reference/make_notebook_000_reference.py
#
# Writes tests/reference/notebook_000_torch.txt (cell markers and outputs, as the example prints them).
import torch
import torch.nn as nn

from notebook_output import cell, write_output

SEPARATOR = "-----------------------------------------------------------------"


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        return attn_weights @ values


class SelfAttention_v2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        return attn_weights @ values


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
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)


class SplitHeadsAttention(nn.Module):
    """MultiHeadAttention (queries, keys and values from Linear layers) and the notebook's two
    variants: keys_from_x=False, values_from_x=True is OptimizedMultiHeadAttention (values = x),
    both True is EfficientMultiHeadAttention (keys = values = x). The layers are made in the
    notebook's order: W_query, [W_key], [W_value], out_proj."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False, keys_from_x=False,
                 values_from_x=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = None if keys_from_x else nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = None if values_from_x else nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = x if self.W_key is None else self.W_key(x)
        queries = self.W_query(x)
        values = x if self.W_value is None else self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


def six_tokens():
    return torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], [0.22, 0.58, 0.33],
                         [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])


def three_tokens_of_six():
    return torch.tensor([[0.2745, 0.6584, 0.2775, 0.8573, 0.6584, 0.2775],
                         [0.8993, 0.0390, 0.9268, 0.7388, 0.8993, 0.0390],
                         [0.7179, 0.7058, 0.9156, 0.4340, 0.7179, 0.9156]])


def main():
    # --- simplified attention mechanism ---
    cell(2)
    cell(2)
    inputs = six_tokens()
    cell(3)
    query = inputs[1]
    attn_scores2 = torch.empty(inputs.shape[0])
    for i, x_i in enumerate(inputs):
        attn_scores2[i] = torch.dot(x_i, query)
    print(attn_scores2)
    cell(4)
    attn_weights_2 = attn_scores2 / attn_scores2.sum()
    print(attn_weights_2)
    print(sum(attn_weights_2))
    cell(5)
    attn_weights_2 = torch.softmax(attn_scores2, dim=0)
    print(attn_weights_2)
    cell(6)
    context_vec2 = torch.zeros(query.shape)
    for i, x_i in enumerate(inputs):
        context_vec2 += attn_weights_2[i] * x_i
    print(context_vec2)
    cell(7)
    context_vec2 = torch.matmul(attn_weights_2, inputs)
    print(context_vec2)
    cell(8)
    attn_scores = torch.empty(6, 6)
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    print(attn_scores)
    cell(9)
    attn_scores = inputs @ inputs.T
    print(attn_scores)
    cell(10)
    attn_weights = torch.softmax(attn_scores, dim=-1)
    print(attn_weights)
    cell(11)
    context_vec = torch.matmul(attn_weights, inputs)
    print(context_vec)

    # --- attention with trainable parameters ---
    cell(12)
    inputs = six_tokens()
    cell(13)
    x_2 = inputs[1]
    d_in = inputs.shape[1]
    d_out = 2
    print("<torch._C.Generator at %s>" % hex(id(torch.manual_seed(123))))
    cell(14)
    w_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    w_key = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    w_value = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
    cell(15)
    query_2 = x_2 @ w_query
    key_2 = x_2 @ w_key  # noqa: F841 (the notebook computes it and does not print it)
    value_2 = x_2 @ w_value  # noqa: F841
    print(query_2)
    cell(16)
    keys = inputs @ w_key
    values = inputs @ w_value
    cell(17)
    attn_score2 = query_2 @ keys.T
    print(attn_score2)
    cell(18)
    d_k = keys.shape[-1]
    attn_weights2 = torch.softmax(attn_score2 / d_k**0.5, dim=-1)
    print(attn_weights2)
    cell(19)
    context_vec2 = attn_weights2 @ values
    print(context_vec2)
    cell(20)
    cell(21)
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(d_in, d_out)
    print(sa_v1(inputs))
    cell(22)
    cell(23)
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(d_in, d_out)
    print(sa_v2(inputs))

    # --- masked attention ---
    cell(24)
    inputs = six_tokens()
    queries = sa_v2.W_query(inputs)
    keys = sa_v2.W_key(inputs)
    attn_scores = queries @ keys.T
    attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
    print(attn_weights)
    print(SEPARATOR)
    context_length = attn_scores.shape[0]
    mask_simple = torch.tril(torch.ones(context_length, context_length))
    print(mask_simple)
    print(SEPARATOR)
    masked_simple = attn_weights * mask_simple
    print(masked_simple)
    print(SEPARATOR)
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    masked_simple_norm = masked_simple / row_sums
    print(masked_simple_norm)
    cell(25)
    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
    masked = attn_scores.masked_fill(mask.bool(), -torch.inf)
    print(masked)
    print(SEPARATOR)
    attn_weights = torch.softmax(masked / keys.shape[-1]**0.5, dim=1)
    print(attn_weights)
    cell(26)
    torch.manual_seed(123)
    dropout = torch.nn.Dropout(0.5)
    example = torch.ones(6, 6)
    print(dropout(example))
    cell(27)
    torch.manual_seed(123)
    print(dropout(attn_weights))

    # --- causal attention with dropout ---
    cell(28)
    batch = torch.stack((inputs, inputs), dim=0)
    print(batch.shape)
    cell(29)
    cell(30)
    torch.manual_seed(123)
    context_length = batch.shape[1]
    ca = CausalAttention(d_in, d_out, context_length, 0.0)
    context_vecs = ca(batch)
    print('context_vecs.shape:', context_vecs.shape)

    # --- wrapper class for multi-head attention ---
    cell(31)
    cell(32)
    torch.manual_seed(123)
    context_length = batch.shape[1]
    d_in, d_out = 3, 2
    mha = MultiHeadAttentionWrapper(d_in, d_out, context_length, 0.0, num_heads=2)
    context_vecs = mha(batch)
    print(context_vecs)

    # --- multi-head attention with weight splits ---
    cell(33)
    cell(34)
    inputs = six_tokens()
    batch = torch.stack((inputs, inputs), dim=0)
    torch.manual_seed(123)
    batch_size, context_length, d_in = batch.shape
    d_out = 2
    mha = SplitHeadsAttention(d_in, d_out, context_length, 0.0, num_heads=2)
    context_vecs = mha(batch)
    print(context_vecs)
    print("context_vecs.shape:", context_vecs.shape)
    cell(35)
    cell(36)
    # The notebook's literal mixes rows of 6 and of 4 numbers, which torch.tensor refuses; its
    # output is that of the first four numbers of each row.
    a = torch.tensor([[[[0.2745, 0.6584, 0.2775, 0.8573],
                        [0.8993, 0.0390, 0.9268, 0.7388],
                        [0.7179, 0.7058, 0.9156, 0.4340]],
                       [[0.0772, 0.3565, 0.1479, 0.5331],
                        [0.4066, 0.2318, 0.4545, 0.9737],
                        [0.4606, 0.5159, 0.4220, 0.5786]]]])
    print("shape of a: ", a.shape)
    print("shape of a.T: ", a.transpose(2, 3).shape)
    print("-----Dot product of a and a.T-----")
    print(a @ a.transpose(2, 3))

    # --- the multi-head class step by step ---
    cell(45)
    input_data = three_tokens_of_six()
    batch = torch.stack((input_data, input_data), dim=0)
    print(batch)
    print("batch shape: ", batch.shape)
    cell(46)
    x = batch
    batch_size, context_length, d_in = batch.shape
    d_out = 6
    w_q = nn.Linear(d_in, d_out, bias=False)
    w_k = nn.Linear(d_in, d_out, bias=False)
    w_v = nn.Linear(d_in, d_out, bias=False)
    queries = w_q(x)
    keys = w_k(x)
    values = w_v(x)
    print("shape: ", queries.shape)
    cell(47)
    print("queries :", queries)
    cell(48)
    num_heads = 2
    head_dim = d_out // num_heads
    queries = queries.view(batch_size, context_length, num_heads, head_dim)
    keys = keys.view(batch_size, context_length, num_heads, head_dim)
    values = values.view(batch_size, context_length, num_heads, head_dim)
    print("shape: ", queries.shape)
    cell(49)
    print("queries :", queries)
    cell(50)
    print("keys :", keys)
    cell(51)
    print("values :", values)
    cell(52)
    queries = queries.transpose(1, 2)
    print(queries)
    cell(53)
    keys = keys.transpose(1, 2)
    values = values.transpose(1, 2)
    cell(56)
    attention_scores = queries @ keys.transpose(2, 3)
    print("attention scores :", attention_scores)
    print("shape:", attention_scores.shape)
    cell(59)
    attention_weights = torch.softmax(attention_scores / keys.shape[-1]**0.5, dim=-1)
    context_vector = attention_weights @ values
    print("context vector :", context_vector)
    print("shape :", context_vector.shape)
    cell(61)
    context_vector = context_vector.transpose(1, 2)
    context_vector = context_vector.contiguous().view(batch_size, context_length, d_out)
    print("context vector", context_vector)

    # --- optimized multi-head attention ---
    cell(81)
    input_data = three_tokens_of_six()
    batch = torch.stack((input_data, input_data), dim=0)
    print(batch)
    print("batch shape: ", batch.shape)
    cell(89)
    x = batch
    batch_size, context_length, d_in = batch.shape
    d_out = 6
    w_q = nn.Linear(d_in, d_out, bias=False)
    w_k = nn.Linear(d_in, d_out, bias=False)
    queries = w_q(x)
    keys = w_k(x)
    V = x
    cell(91)
    num_heads = 2
    head_dim = d_out // num_heads
    queries = queries.view(batch_size, context_length, num_heads, head_dim)
    keys = keys.view(batch_size, context_length, num_heads, head_dim)
    print("shape: ", queries.shape)
    cell(92)
    queries = queries.transpose(1, 2)
    keys = keys.transpose(1, 2)
    attention_scores = queries @ keys.transpose(2, 3)
    print("attention scores :", attention_scores)
    print("shape:", attention_scores.shape)
    cell(93)
    V = V.view(batch_size, context_length, num_heads, head_dim)
    V = V.transpose(1, 2)
    print(V)
    cell(94)
    attention_weights = torch.softmax(attention_scores / keys.shape[-1]**0.5, dim=-1)
    context_vector = attention_weights @ values  # the values of In [46], as in the notebook
    context_vector = context_vector.transpose(1, 2)
    context_vector = context_vector.contiguous().view(batch_size, context_length, d_out)
    print("context vector", context_vector)
    cell("None")
    # The notebook only defines OptimizedMultiHeadAttention; it is built and run once here.
    torch.manual_seed(123)
    optimized = SplitHeadsAttention(d_in, d_out, context_length, 0.0, num_heads=2, values_from_x=True)
    context_vecs = optimized(batch)
    print(context_vecs)
    print("context_vecs.shape:", context_vecs.shape)
    cell(96)
    cell(131)
    inputs = six_tokens()
    batch = torch.stack((inputs, inputs), dim=0)
    torch.manual_seed(123)
    batch_size, context_length, d_in = batch.shape
    d_out = 3
    mha = SplitHeadsAttention(d_in, d_out, context_length, 0.0, num_heads=3, keys_from_x=True, values_from_x=True)
    context_vecs = mha(batch)
    print(context_vecs)
    print("context_vecs.shape:", context_vecs.shape)


if __name__ == "__main__":
    write_output(main, "notebook_000_torch.txt")
