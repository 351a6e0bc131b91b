# make_lora_reference.py — PyTorch 1.13 trains peft-style LoRA adapters (tapegrad_twin/lora.py) on a
# tiny GPT-2 (tapegrad_twin/hf_gpt2.py) and on a tiny Qwen3 (tapegrad_twin/hf_llama.py) with
# train_gpt's loop (tapegrad_twin/training.py's Run: the same batches, schedule, AdamW groups and
# clipping), as test data for tests/examples/test_lora_runs.cpp and tests/nn/test_lora.cpp. The
# package is examples/pytorch/tapegrad_twin/.
#
#     PYTHONPATH=examples/pytorch /usr/bin/python3 tests/reference/make_lora_reference.py
#
# Writes, under tests/reference/lora/:
#   base/        a Hugging Face GPT-2 folder: config.json (dropout 0), model.safetensors ("transformer."
#                names), vocab.json and merges.txt of tapegrad_twin/small_gpt2_vocab.py's small vocabulary
#                (277 tokens), 2 layers of width 16, 32 positions, random weights (seed 4)
#   qwen3_base/  a Hugging Face Qwen3 folder: config.json, model.safetensors, the same vocabulary's
#                vocab.json and merges.txt; 2 layers, hidden 16, 4 heads on 2 kv heads of head_dim 8
#                (q_proj 16 -> 32: o_proj's adapter is (r, 32)), SwiGLU width 24, tied, random
#                weights (seed 6) and norms
#   text.txt     the text both train on (the first 3000 bytes of tests/reference/parity_corpus.txt)
#   adapters_start.safetensors, adapters_end.safetensors, qwen3_adapters_start.safetensors,
#   qwen3_adapters_end.safetensors
#                the adapters in peft's names (lora.py's adapter_tensors) right after they are added
#                and after the run's STEPS steps, for each base
#   lora_torch.json   the runs' flags (train_gpt's), each step's loss (16 hex digits of the float32
#                loss widened to float64: "losses" GPT-2's, "qwen3_losses"), and "lora_linear":
#                peft's A for in 5, out 7, r 3 after torch.manual_seed(11) (LoraLayer's draws: A, B,
#                then A again)
import json
import os
import shutil
import struct

import torch
import torch.nn as nn

from tapegrad_twin import gpt2_tokenizer
from tapegrad_twin.hf_gpt2 import GPT2LMHeadModel
from tapegrad_twin.hf_llama import LlamaForCausalLM
from tapegrad_twin.lora import adapter_tensors, apply_lora
from tapegrad_twin.run_folder import safetensors_bytes
from tapegrad_twin.small_gpt2_vocab import write_small_vocab
from tapegrad_twin.training import Gpt2FilesTokenizer, Run, options, weight_decay_groups

HERE = os.path.dirname(os.path.abspath(__file__))

OUT = os.path.join(HERE, "lora")
STEPS = 6
# train_gpt's flags for the run (its --init-from and --data are the files above)
FLAGS = {"lora-rank": 4, "lora-alpha": 8, "lora-targets": "attn,mlp", "steps": STEPS, "batch": 2, "context": 16,
         "lr": 1e-2, "min-lr": 1e-3, "warmup": 1, "seed": 5, "weight-decay": 0.1, "grad-clip": 1.0}


def hexd(v):
    return struct.pack(">d", float(v)).hex()


def write_base(folder):
    os.makedirs(folder, exist_ok=True)
    vocab_size = write_small_vocab(folder)
    torch.manual_seed(4)
    config = dict(model_type="gpt2", vocab_size=vocab_size, n_positions=32, n_embd=16, n_layer=2, n_head=2,
                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        model.transformer.wte.weight.normal_(0.0, 0.1)
        model.transformer.wpe.weight.normal_(0.0, 0.05)
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.02)
    model.save_pretrained(folder, prefixed=True)


def write_qwen3_base(folder):
    os.makedirs(folder, exist_ok=True)
    vocab_size = write_small_vocab(folder)
    torch.manual_seed(6)
    model = LlamaForCausalLM(dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=vocab_size,
                                  hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
                                  num_key_value_heads=2, head_dim=8, max_position_embeddings=32, rms_norm_eps=1e-6,
                                  rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=True,
                                  attention_bias=False, attention_dropout=0.0, hidden_act="silu",
                                  initializer_range=0.2))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape))
    model.save_pretrained(folder)


def write_safetensors(path, tensors):
    with open(path, "wb") as f:
        f.write(safetensors_bytes(tensors, {"format": "pt"}))


def lora_run(data, base, model, prefix):
    """train_gpt --init-from base --lora-rank 4 ... (FLAGS) in the twin: the base's weights, then the
    adapters from the seed, STEPS steps; writes OUT/<prefix>adapters_{start,end}.safetensors and
    returns the losses in hex."""
    argv = ["--data", os.path.join(OUT, "text.txt"), "--tokenizer", base, "--eval-batches", "1"]
    for key, value in FLAGS.items():
        if not key.startswith("lora-"):
            argv += ["--" + key, str(value)]
    o = options(argv)
    tokenizer = Gpt2FilesTokenizer(gpt2_tokenizer.Gpt2Tokenizer.from_folder(base))
    run = Run(o, data, tokenizer, model_config=dict(vocab_size=tokenizer.vocab_size, context_length=32, emb_dim=16,
                                                    n_heads=2, n_layers=2, drop_rate=0.0, qkv_bias=True,
                                                    tie_weights=True, layer_norm_eps=1e-5))
    run.model = run.ddp = model.train()  # the base's model in place of the one Run drew
    torch.manual_seed(o.seed)
    apply_lora(run.model, FLAGS["lora-rank"], FLAGS["lora-alpha"], FLAGS["lora-targets"].split(","))
    run.optimizer = torch.optim.AdamW(weight_decay_groups(run.model, o.weight_decay), lr=o.lr)
    write_safetensors(os.path.join(OUT, prefix + "adapters_start.safetensors"), adapter_tensors(run.model))
    losses = [hexd(run.train_step()) for _ in range(STEPS)]
    write_safetensors(os.path.join(OUT, prefix + "adapters_end.safetensors"), adapter_tensors(run.model))
    return losses


def main():
    torch.set_num_threads(1)
    shutil.rmtree(OUT, ignore_errors=True)
    base, text_path = os.path.join(OUT, "base"), os.path.join(OUT, "text.txt")
    write_base(base)
    with open(os.path.join(HERE, "parity_corpus.txt"), "rb") as f:
        data = f.read()[:3000]
    with open(text_path, "wb") as f:
        f.write(data)

    qwen3_base = os.path.join(OUT, "qwen3_base")
    write_qwen3_base(qwen3_base)
    losses = lora_run(data, base, GPT2LMHeadModel.from_pretrained(base), "")
    qwen3_losses = lora_run(data, qwen3_base, LlamaForCausalLM.from_pretrained(qwen3_base), "qwen3_")

    torch.manual_seed(11)  # LoraLayer's draws for in 5, out 7, r 3, without a Conv1D drawn before
    a = nn.Linear(5, 3, bias=False)
    nn.Linear(3, 7, bias=False)
    nn.init.kaiming_uniform_(a.weight, a=5 ** 0.5)
    doc = {"generator": "tests/reference/make_lora_reference.py", "torch_version": torch.__version__, "flags": FLAGS,
           "losses": losses, "qwen3_losses": qwen3_losses,
           "lora_linear": {"seed": 11, "in": 5, "out": 7, "r": 3,
                           "A": {"shape": list(a.weight.shape), "values": [hexd(v) for v in a.weight.flatten().tolist()]}}}
    with open(os.path.join(OUT, "lora_torch.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}/: base/, qwen3_base/, text.txt, [qwen3_]adapters_start/end.safetensors, lora_torch.json; "
          f"losses {[round(struct.unpack('>d', bytes.fromhex(h))[0], 5) for h in losses]}, qwen3 "
          f"{[round(struct.unpack('>d', bytes.fromhex(h))[0], 5) for h in qwen3_losses]}")


if __name__ == "__main__":
    main()
