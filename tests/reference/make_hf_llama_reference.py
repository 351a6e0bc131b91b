# make_hf_llama_reference.py — tiny random models of the Llama / Qwen family in Hugging Face's
# layout, as test data for models/llama.h and models/hf/hf_llama.h (tests/models/test_llama.cpp).
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_hf_llama_reference.py
#
# The models are examples/pytorch/tapegrad_twin/hf_llama.py's LlamaForCausalLM, every weight, bias and norm
# weight drawn at random from torch.manual_seed(2025) (so a mix-up of any two shows), one of each
# type, each with what sets it apart:
#   llama   grouped-query (4 heads, 2 kv heads), head_dim from hidden_size / heads (8), tied head,
#           rope_theta 500000 with llama3 scaling whose original context (32) puts the first
#           wavelength between the two limits (blended) and the others above (stretched)
#   qwen2   4 heads sharing 1 kv head, biases on q, k and v, an untied head, rope_theta 1e6
#   qwen3   QK-norm, head_dim 12 beside hidden_size 24 (not 24 / 4), a tied head
# Written under tests/reference/hf_llama/<type>/:
#   f32/    config.json, model.safetensors (F32)
#   bf16/   BF16 in two shards with model.safetensors.index.json; the tied models' files also hold
#           lm_head.weight and a model.rotary_emb.inv_freq buffer, as some tools write them
#   logits.safetensors   "ids" (2, 10) int64 and, for each type and folder, "<type>_<folder>": its
#           logits (2, 10, V) in float32 (the folder read back by from_pretrained and run in
#           float32), and "<type>_<folder>_greedy": the ids (2, 10 + 8) of greedy decoding with
#           the KV cache
import json
import os

import torch

from tapegrad_twin.hf_llama import LlamaForCausalLM, greedy
from tapegrad_twin.run_folder import read_safetensors, safetensors_bytes

HERE = os.path.dirname(os.path.abspath(__file__))

OUT = os.path.join(HERE, "hf_llama")
CONFIGS = {
    "llama": {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 1, "eos_token_id": 2,
              "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 48,
              "max_position_embeddings": 64, "model_type": "llama", "num_attention_heads": 4,
              "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-05,
              "rope_scaling": {"factor": 8.0, "high_freq_factor": 8.0, "low_freq_factor": 1.0,
                               "original_max_position_embeddings": 32, "rope_type": "llama3"},
              "rope_theta": 500000.0, "tie_word_embeddings": True, "vocab_size": 61},
    "qwen2": {"architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu", "hidden_size": 32, "intermediate_size": 40,
              "max_position_embeddings": 64, "max_window_layers": 2, "model_type": "qwen2",
              "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-06,
              "rope_theta": 1000000.0, "sliding_window": 64, "tie_word_embeddings": False,
              "use_sliding_window": False, "vocab_size": 61},
    "qwen3": {"architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "head_dim": 12, "hidden_act": "silu",
              "hidden_size": 24, "intermediate_size": 40, "max_position_embeddings": 64, "model_type": "qwen3",
              "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
              "rope_scaling": None, "rope_theta": 1000000.0, "tie_word_embeddings": True,
              "use_sliding_window": False, "vocab_size": 61},
}
IDS = [[5, 60, 0, 17, 42, 42, 3, 58, 31, 7], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]
NEW_TOKENS = 8


def with_extras(folder, model):
    """The tied model's BF16 shards with lm_head.weight and a rotary_emb.inv_freq buffer added."""
    first = os.path.join(folder, "model-00001-of-00002.safetensors")
    tensors, metadata = read_safetensors(first)
    tensors["lm_head.weight"] = model.lm_head.weight.detach().to(torch.bfloat16)
    tensors["model.rotary_emb.inv_freq"] = model.model.inv_freq.clone()
    with open(first, "wb") as f:
        f.write(safetensors_bytes(tensors, metadata))
    index_path = os.path.join(folder, "model.safetensors.index.json")
    index = json.load(open(index_path))
    index["weight_map"]["lm_head.weight"] = "model-00001-of-00002.safetensors"
    index["weight_map"]["model.rotary_emb.inv_freq"] = "model-00001-of-00002.safetensors"
    with open(index_path, "w") as f:
        f.write(json.dumps(index, indent=2) + "\n")


def main():
    torch.manual_seed(2025)
    ids = torch.tensor(IDS)
    out = {"ids": ids}
    for model_type, config in CONFIGS.items():
        model = LlamaForCausalLM(config)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.copy_(1.0 + 0.2 * torch.randn_like(p))
                else:
                    p.copy_(0.3 * torch.randn_like(p))
        for folder, dtype, shards in (("f32", torch.float32, 1), ("bf16", torch.bfloat16, 2)):
            path = os.path.join(OUT, model_type, folder)
            model.save_pretrained(path, dtype=dtype, shards=shards)
            if shards == 2 and config["tie_word_embeddings"]:
                with_extras(path, model)
            read_back = LlamaForCausalLM.from_pretrained(path)
            with torch.no_grad():
                out[f"{model_type}_{folder}"] = read_back(ids)
            out[f"{model_type}_{folder}_greedy"] = greedy(read_back, ids, NEW_TOKENS)
            print(f"wrote {path}: {', '.join(sorted(os.listdir(path)))}")
    with open(os.path.join(OUT, "logits.safetensors"), "wb") as f:
        f.write(safetensors_bytes(out, {"format": "pt"}))
    print(f"wrote {OUT}/logits.safetensors")


if __name__ == "__main__":
    main()
