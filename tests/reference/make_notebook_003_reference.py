# make_notebook_003_reference.py — what PyTorch 1.13 prints for the walk through the book's
# MultiHeadAttention class that examples/notebook_003_mha_line_by_line.cpp makes: the same seed,
# the same steps, the same headings. Notebook 003 is a text without cells, so its example's numbers
# come from here instead of from the notebook.
#
#     /usr/bin/python3 tests/reference/make_notebook_003_reference.py
#
# Writes tests/reference/notebook_003_torch.txt (the printed walk-through, headings included).
import torch

from make_module_reference import MultiHeadAttention  # the book's class (nn/attention.h's twin)
from notebook_output import marker, write_output


def walk(m, x):
    """The forward, one statement per line of the book's code, keeping every intermediate."""
    s = {}
    b, num_tokens, d_in = x.shape
    s["shape"] = (b, num_tokens, d_in)
    s["keys"], s["queries"], s["values"] = m.W_key(x), m.W_query(x), m.W_value(x)
    s["keys_view"] = s["keys"].view(b, num_tokens, m.num_heads, m.head_dim)
    values = s["values"].view(b, num_tokens, m.num_heads, m.head_dim)
    queries = s["queries"].view(b, num_tokens, m.num_heads, m.head_dim)
    s["keys_heads"] = s["keys_view"].transpose(1, 2)
    queries, values = queries.transpose(1, 2), values.transpose(1, 2)
    s["attn_scores"] = queries @ s["keys_heads"].transpose(2, 3)
    s["mask_bool"] = m.mask.bool()[:num_tokens, :num_tokens]
    s["mask_unsqueezed"] = s["mask_bool"].unsqueeze(0).unsqueeze(0)
    s["masked_scores"] = s["attn_scores"].clone()
    s["masked_scores"].masked_fill_(s["mask_unsqueezed"], -torch.inf)
    s["attn_weights"] = torch.softmax(s["masked_scores"] / s["keys_heads"].shape[-1] ** 0.5, dim=-1)
    s["dropped_weights"] = m.dropout(s["attn_weights"])
    s["context_transposed"] = (s["dropped_weights"] @ values).transpose(1, 2)
    s["context_joined"] = s["context_transposed"].contiguous().view(b, num_tokens, m.d_out)
    s["context_vec"] = m.out_proj(s["context_joined"])
    return s


def size(t):
    return str(t.shape)


def main():
    marker("Line 1, Class Definition:")
    marker("Line 2, Constructor:")
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 4, 6, 0.1, 2)
    print(mha)
    marker("Line 3, Superclass Initialization:")
    marker("Line 4, Dimension Assertion:")
    print("MultiHeadAttention: d_out (5) must be divisible by num_heads (2)")  # tapegrad's message
    marker("Lines 6-14, Parameter Definitions:")
    print(mha.d_out, mha.num_heads, mha.head_dim)
    for name, p in mha.named_parameters():
        print(name, size(p))
    print(mha.W_query.weight)
    marker("Line 15-19, Mask Buffer Registration:")
    print(mha.mask)
    marker("Line 20, Forward Method Definition:")
    x = torch.rand(2, 6, 3)
    print(size(x))
    print(x[0])
    state = torch.get_rng_state()
    s = walk(mha, x)
    marker("Line 21, Input Shape Extraction:")
    print(*s["shape"])
    marker("Lines 22-24, Query/Key/Value Projections:")
    print(size(s["keys"]), s["keys"][0], s["queries"][0], s["values"][0], sep="\n")
    marker("Lines 26-28, Reshaping for Multi-Head Attention:")
    print(size(s["keys_view"]), s["keys_view"][0], sep="\n")
    marker("Lines 30-32, Transposition for Attention Calculation:")
    print(size(s["keys_heads"]), s["keys_heads"][0], sep="\n")
    marker("Line 34, Attention Score Calculation:")
    print(size(s["attn_scores"]), s["attn_scores"][0], sep="\n")
    marker("Lines 35-37, Attention Mask Application:")
    print(s["mask_bool"], size(s["mask_unsqueezed"]), s["masked_scores"][0], sep="\n")
    marker("Lines 39-41, Softmax and Dropout on Attention Scores:")
    print(s["attn_weights"][0], s["attn_weights"][0].sum(-1), s["dropped_weights"][0], sep="\n")
    marker("Lines 43, Context Vector Calculation:")
    print(size(s["context_transposed"]), s["context_transposed"][0], sep="\n")
    marker("Line 45, Reshaping Context Vectors:")
    print(size(s["context_joined"]), s["context_joined"][0], sep="\n")
    marker("Line 46, Output Projection:")
    print(size(s["context_vec"]), s["context_vec"], sep="\n")
    marker("The module's forward, in one call:")
    torch.set_rng_state(state)  # dropout draws the same mask again
    kept = []  # the attention weights, as dropout hands them on
    mha.dropout.register_forward_hook(lambda module, inputs, output: kept.append(output.detach()))
    y = mha(x)
    print(torch.allclose(y, s["context_vec"]), torch.allclose(kept[0], s["dropped_weights"]))
    marker("The text's shapes: x of (30, 50, 512), 8 heads:")
    big = MultiHeadAttention(512, 512, 50, 0.1, 8)
    t = walk(big, torch.randn(30, 50, 512))
    for line, key in [("22-24", "keys"), ("26-28", "keys_view"), ("30-32", "keys_heads"), ("34", "attn_scores"),
                      ("43", "context_transposed"), ("45", "context_joined"), ("46", "context_vec")]:
        print(line, size(t[key]))


if __name__ == "__main__":
    write_output(main, "notebook_003_torch.txt")
