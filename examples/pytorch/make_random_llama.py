# make_random_llama.py — a Hugging Face Llama / Qwen folder of a real small model's shape with
# random weights (tapegrad_twin/hf_llama.py's LlamaForCausalLM: Hugging Face's _init_weights, every
# Linear and the embedding ~ N(0, 0.02), norms 1), for benchmarks where the real weights are not at
# hand.
# config.json is the hub model's (its sizes, rope_theta, rope_scaling, tie_word_embeddings), the
# weights are written as BF16 (as the hub ships them), and a tokenizer folder's files are copied
# beside them when one is given or the model's is in .cache/ (.ci/install-deps.sh fetches Qwen3's
# and Llama 3's).
#
#     /usr/bin/python3 examples/pytorch/make_random_llama.py qwen3-0.6b /tmp/qwen3-0.6b-random
#     /usr/bin/python3 examples/pytorch/make_random_llama.py smollm2-135m /tmp/smollm2-random
#     /usr/bin/python3 examples/pytorch/make_random_llama.py llama-3.2-1b /tmp/llama-1b-random --tokenizer DIR
import argparse
import os
import shutil

import torch

from tapegrad_twin.hf_llama import LlamaForCausalLM

CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".cache")
# the hub's config.json fields that shape each model, and where install-deps.sh puts its tokenizer
MODELS = {
    "smollm2-135m": (dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=49152, hidden_size=576,
                          intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                          head_dim=64, max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000.0,
                          rope_scaling=None, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0), None),
    "qwen3-0.6b": (dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=151936, hidden_size=1024,
                        intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                        head_dim=128, max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
                        rope_scaling=None, tie_word_embeddings=True, attention_bias=False, bos_token_id=151643,
                        eos_token_id=151645), "qwen3-tokenizer"),
    "llama-3.2-1b": (dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=128256, hidden_size=2048,
                          intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                          head_dim=64, max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                          rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                            original_max_position_embeddings=8192),
                          tie_word_embeddings=True, attention_bias=False, bos_token_id=128000, eos_token_id=128001),
                     "llama3-tokenizer"),
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def main():
    p = argparse.ArgumentParser(description="Write a Llama / Qwen folder of a real model's shape, random weights.")
    p.add_argument("model", choices=sorted(MODELS))
    p.add_argument("out")
    p.add_argument("--tokenizer", default=None, help="a folder with tokenizer.json (and tokenizer_config.json) to copy")
    p.add_argument("--seed", type=int, default=0)
    o = p.parse_args()
    config, cached = MODELS[o.model]
    torch.manual_seed(o.seed)
    model = LlamaForCausalLM(config)
    model.save_pretrained(o.out, dtype=torch.bfloat16)
    source = o.tokenizer or (os.path.join(CACHE, cached) if cached else None)
    copied = []
    if source and os.path.isfile(os.path.join(source, "tokenizer.json")):
        for name in TOKENIZER_FILES:
            if os.path.isfile(os.path.join(source, name)):
                shutil.copy(os.path.join(source, name), os.path.join(o.out, name))
                copied.append(name)
    elif o.tokenizer:
        raise SystemExit(f"make_random_llama.py: --tokenizer {o.tokenizer}: no tokenizer.json there")
    print(f"wrote {o.out}/: config.json, model.safetensors (BF16, {sum(t.numel() for t in model.hf_state().values()):,} "
          f"parameters){''.join(', ' + n for n in copied)}")


if __name__ == "__main__":
    main()
