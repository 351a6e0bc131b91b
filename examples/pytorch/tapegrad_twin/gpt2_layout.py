# gpt2_layout.py — GPT-2's Hugging Face tensor names and orientation <-> gpt_model.py's GPTModel
# state_dict, the table of models/hf/hf_gpt2.h (C = n_embd):
#
#   wte.weight -> tok_emb.weight (and out_head.weight, tied)     wpe.weight -> pos_emb.weight
#   h.i.ln_1 / ln_2 -> trf_blocks.i.norm1 / norm2                 ln_f -> final_norm
#   h.i.attn.c_attn.weight (C,3C): columns [0,C) [C,2C) [2C,3C), each transposed, are
#       att.W_query / W_key / W_value.weight; its bias (3C) is cut the same way
#   h.i.attn.c_proj.weight transposed -> att.out_proj.weight
#   h.i.mlp.c_fc.weight, c_proj.weight transposed -> ff.layers.0.weight, ff.layers.2.weight
#
# Conv1D keeps (in, out) where nn.Linear keeps (out, in): hence the transposes. The names may all
# carry "transformer." in front or none may; lm_head.weight (never prefixed) must equal wte.weight;
# the buffers h.i.attn.bias and h.i.attn.masked_bias are ignored. Writing gives HF's state_dict
# order, without lm_head (tied) and without buffers (att.mask), as tapegrad's hf_gpt2_tensors.
import torch

PREFIX = "transformer."
BLOCK = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
         "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
         "mlp.c_proj.bias")
# per block, HF's tensor -> GPTModel's, for the ones that map one to one (transposed: Conv1D weights)
ONE_TO_ONE = {"ln_1.weight": ("norm1.weight", False), "ln_1.bias": ("norm1.bias", False),
              "ln_2.weight": ("norm2.weight", False), "ln_2.bias": ("norm2.bias", False),
              "attn.c_proj.weight": ("att.out_proj.weight", True), "attn.c_proj.bias": ("att.out_proj.bias", False),
              "mlp.c_fc.weight": ("ff.layers.0.weight", True), "mlp.c_fc.bias": ("ff.layers.0.bias", False),
              "mlp.c_proj.weight": ("ff.layers.2.weight", True), "mlp.c_proj.bias": ("ff.layers.2.bias", False)}
QKV = ("W_query", "W_key", "W_value")


def hf_names(n_layers):
    """HF's names (unprefixed) in GPT2LMHeadModel's state_dict order, buffers and lm_head left out."""
    names = ["wte.weight", "wpe.weight"]
    for i in range(n_layers):
        names += [f"h.{i}.{name}" for name in BLOCK]
    return names + ["ln_f.weight", "ln_f.bias"]


def is_prefixed(tensors):
    return any(name.startswith(PREFIX) for name in tensors)


def unprefixed_tensors(tensors, n_layers, path):
    """The file's GPT-2 weights by unprefixed name, float32; ValueError names a tensor that is
    unknown, missing, or an lm_head.weight that is not wte.weight."""
    prefixed = is_prefixed(tensors)
    wanted = set(hf_names(n_layers))
    buffers = {f"h.{i}.attn.{b}" for i in range(n_layers) for b in ("bias", "masked_bias")}
    out = {}
    for name, t in tensors.items():
        if name == "lm_head.weight":
            continue
        bare = name[len(PREFIX):] if name.startswith(PREFIX) else name
        if name.startswith(PREFIX) != prefixed or bare not in wanted | buffers:
            raise ValueError(f"{path}: unknown tensor \"{name}\" (not a GPT-2 weight of this config.json, or its "
                             "\"transformer.\" prefix differs from the other names')")
        if bare in wanted:
            out[bare] = t.float()
    for bare in hf_names(n_layers):
        if bare not in out:
            raise ValueError(f"{path}: tensor \"{PREFIX if prefixed else ''}{bare}\" is missing")
    head = tensors.get("lm_head.weight")
    if head is not None and not torch.equal(head.float(), out["wte.weight"]):
        raise ValueError(f"{path}: tensor \"lm_head.weight\" differs from wte.weight: GPT-2 is read with the two tied")
    return out


def gpt_state(tensors, model_config, path):
    """The file's tensors (HF's names) as the state_dict of GPTModel(model_config) (its names, its
    orientation, and each block's causal mask, a buffer GPT-2's files do not have)."""
    n_layers, positions = model_config["n_layers"], model_config["context_length"]
    hf = unprefixed_tensors(tensors, n_layers, path)
    state = {"tok_emb.weight": hf["wte.weight"], "pos_emb.weight": hf["wpe.weight"]}
    for i in range(n_layers):
        h, b = f"h.{i}.", f"trf_blocks.{i}."
        weight, bias = hf[h + "attn.c_attn.weight"], hf[h + "attn.c_attn.bias"]
        for part, (w, v) in enumerate(zip(weight.chunk(3, dim=1), bias.chunk(3, dim=0))):
            state[f"{b}att.{QKV[part]}.weight"] = w.t().contiguous()
            state[f"{b}att.{QKV[part]}.bias"] = v.contiguous()
        for name, (mine, transposed) in ONE_TO_ONE.items():
            state[b + mine] = hf[h + name].t().contiguous() if transposed else hf[h + name]
        state[b + "att.mask"] = torch.triu(torch.ones(positions, positions), diagonal=1)
    state["final_norm.weight"], state["final_norm.bias"] = hf["ln_f.weight"], hf["ln_f.bias"]
    state["out_head.weight"] = hf["wte.weight"]  # tied: the same values under both names
    return state


def hf_tensors(state, n_layers, prefixed):
    """GPTModel's state_dict as HF's tensors, in HF's order (the reverse of gpt_state)."""
    out = {"wte.weight": state["tok_emb.weight"], "wpe.weight": state["pos_emb.weight"]}
    for i in range(n_layers):
        h, b = f"h.{i}.", f"trf_blocks.{i}."
        out[h + "attn.c_attn.weight"] = torch.cat([state[f"{b}att.{p}.weight"].t() for p in QKV], dim=1)
        out[h + "attn.c_attn.bias"] = torch.cat([state[f"{b}att.{p}.bias"] for p in QKV], dim=0)
        for name, (mine, transposed) in ONE_TO_ONE.items():
            out[h + name] = state[b + mine].t() if transposed else state[b + mine]
    out["ln_f.weight"], out["ln_f.bias"] = state["final_norm.weight"], state["final_norm.bias"]
    return {(PREFIX if prefixed else "") + name: out[name].contiguous() for name in hf_names(n_layers)}
