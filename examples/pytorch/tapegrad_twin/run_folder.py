# run_folder.py — a train_gpt run folder (train/run_folder.h) read and written from PyTorch,
# so that a run moves between tapegrad and PyTorch and resumes exactly on either side:
#
#   model.safetensors      the state_dict; metadata {"format": "pt", "step": "<steps done>"}
#   optimizer.safetensors  AdamW's state, "<param>.step" / ".exp_avg" / ".exp_avg_sq" by parameter name;
#                          metadata "step" and the two generators' states as hex (torch.get_rng_state()'s
#                          bytes, which is tapegrad's Generator::get_state layout too)
#   config.json            {"model": ..., "train": every train_gpt flag, "kernels": who saved it}; a run
#                          of an older train_gpt may lack a key of config_keys.json's "older_runs" (its
#                          "precision" is then "fp32"), which reading fills in
#   tokenizer.json         characters or BPE merges (training.py's tokenizer_from_json reads both)
#   loss.csv               step,train_loss,val_loss,lr,tokens_per_s,elapsed_s,train_bpb,val_bpb
#                          (then task_acc,task_acc_norm for a run with --eval-task)
#
# A run from GPT-2 (train_gpt --init-from) is in Hugging Face's layout, and read and written so:
# model.safetensors has GPT-2's names (gpt2_layout.py maps them to GPTModel's and back, with or
# without "transformer." as the run had), config.json is Hugging Face's GPT-2 config with the run's
# own object above as its member "tapegrad" (run_section), and tokenizer.json is {"type": "gpt2",
# "vocab": "vocab.json", "merges": "merges.txt"} with GPT-2's two files beside it
# (gpt2_tokenizer.py), copied as they were. optimizer.safetensors is as in every run.
#
# safetensors is read and written by hand (8-byte header length, JSON header, raw little-endian
# data), as Debian has no Python package for it. Every file is written to a temporary name, synced
# and renamed, and the model/optimizer pair is kept as *.prev before it is replaced, as train_gpt
# does: a run killed while saving still resumes.
import collections
import json
import os
import struct

import torch

from . import gpt2_layout

# examples/pytorch/config_keys.json, beside the package (tests/examples/test_config_keys.cpp reads it there)
CONFIG_KEYS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config_keys.json")
DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "BOOL": torch.bool,
          "F16": torch.float16, "BF16": torch.bfloat16}  # the last two for Hugging Face folders (hf_gpt2.py)
NAMES = {v: k for k, v in DTYPES.items()}
FILES = ("model.safetensors", "optimizer.safetensors", "config.json", "tokenizer.json")
CSV_HEADER = "step,train_loss,val_loss,lr,tokens_per_s,elapsed_s,train_bpb,val_bpb"
PRECISIONS = ("fp32", "bf16")  # train_gpt's --precision
LLAMA_FAMILY = ("llama", "qwen2", "qwen3")  # model_types of train_gpt --arch llama / qwen3 runs (hf_llama.py)
TAPEGRAD_SECTION = "tapegrad"  # a run from GPT-2: config.json's member with the run's own object


class RunError(Exception):
    """A folder or file that is not what a train_gpt run has; the message names it."""


# ---- safetensors ----------------------------------------------------------------------------------

def read_safetensors(path):
    try:
        raw = open(path, "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + n])
    except (OSError, struct.error, ValueError) as e:
        raise RunError(f"{path}: not a safetensors file ({e})")
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        if info["dtype"] not in DTYPES:
            raise RunError(f"{path}: tensor {name} has dtype {info['dtype']}; these scripts read {sorted(DTYPES)}")
        dtype = DTYPES[info["dtype"]]
        flat = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(info["shape"]).clone()
    return tensors, metadata


def safetensors_bytes(tensors, metadata):
    """The canonical layout tapegrad writes: tensors in the given order, the header padded to 8."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        blob = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()  # numpy has no bfloat16
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


# ---- writing files whole or not at all ------------------------------------------------------------

def write_staged(path, data):
    """Write data under a temporary name beside path and sync it; returns that name."""
    tmp = path + ".tmp-py"
    with open(tmp, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())
    return tmp


def write_atomically(path, data):
    os.replace(write_staged(path, data), path)


def keep_previous_version(path):
    """path's current version as path.prev (a hard link, or a copy), replacing the older .prev."""
    if not os.path.exists(path):
        return
    staging = path + ".prev.tmp"
    if os.path.exists(staging):
        os.remove(staging)
    try:
        os.link(path, staging)
    except OSError:
        with open(path, "rb") as src:
            write_staged(path + ".prev", src.read())
            staging = path + ".prev.tmp-py"
    os.replace(staging, path + ".prev")


# ---- config.json: the keys both sides know ---------------------------------------------------------

def declared_keys():
    """config_keys.json: what examples/pytorch knows of config.json (tests/examples/test_config_keys.cpp
    checks it against train_gpt)."""
    with open(CONFIG_KEYS) as f:
        return json.load(f)


def fill_older_runs_keys(config):
    """The keys an older train_gpt did not write (config_keys.json's "older_runs"), with the value
    its runs trained with, where the run's own object lacks them."""
    section_of_run = run_section(config)
    for section, defaults in declared_keys().get("older_runs", {}).items():
        if isinstance(section_of_run, dict) and isinstance(section_of_run.get(section), dict):
            for key, value in defaults.items():
                section_of_run[section].setdefault(key, value)
    return config


def is_gpt2_layout(config):
    """A run from GPT-2 (train_gpt --init-from): Hugging Face's config.json with the run's own
    object as its member "tapegrad"."""
    return isinstance(config, dict) and config.get("model_type") == "gpt2" and TAPEGRAD_SECTION in config


def is_llama_layout(config):
    """A train_gpt --arch llama or qwen3 run: a Hugging Face config.json of that model_type (the
    model's fields) with the run's own {"train", "kernels"} as its member "tapegrad"."""
    return isinstance(config, dict) and config.get("model_type") in LLAMA_FAMILY and TAPEGRAD_SECTION in config


def run_section(config):
    """The run's own {"model", "train", "kernels"}: the whole config.json, or its "tapegrad" member
    (a llama or qwen3 run's has no "model": the Hugging Face fields are the model)."""
    return config[TAPEGRAD_SECTION] if is_gpt2_layout(config) or is_llama_layout(config) else config


def model_config(config):
    """What the model is built from: the run's "model" (GPTModel's config), or a llama or qwen3
    run's Hugging Face fields (hf_llama.LlamaForCausalLM's)."""
    if is_llama_layout(config):
        return {key: value for key, value in config.items() if key != TAPEGRAD_SECTION}
    return run_section(config)["model"]


def with_run_section(config, section):
    """config.json with section as the run's own object (the last member of a GPT-2 or Llama run's config)."""
    if not (is_gpt2_layout(config) or is_llama_layout(config)):
        return section
    out = {key: value for key, value in config.items() if key != TAPEGRAD_SECTION}
    out[TAPEGRAD_SECTION] = section
    return out


def check_config(config, path):
    """Every key of the run's own object must be one this side implements or knows not to change
    the math."""
    if isinstance(config, dict) and config.get("model_type") == "gpt2" and not is_gpt2_layout(config):
        raise RunError(f"{path}: a Hugging Face GPT-2 folder, not a run: start one with ./build/examples/train_gpt "
                       "--init-from DIR (examples/pytorch/tapegrad_twin/hf_gpt2.py's from_pretrained loads the model)")
    if isinstance(config, dict) and config.get("model_type") in LLAMA_FAMILY and not is_llama_layout(config):
        raise RunError(f"{path}: a Hugging Face {config['model_type']} folder, not a run: "
                       "examples/pytorch/tapegrad_twin/hf_llama.py's from_pretrained loads its model")
    hf = is_gpt2_layout(config) or is_llama_layout(config)
    where = f"{path} (its \"{TAPEGRAD_SECTION}\" member)" if hf else path
    check_run_section(run_section(config), where, has_model=not is_llama_layout(config))


def check_run_section(config, path, has_model=True):
    section = config.get("tapegrad", config)
    if isinstance(section, dict) and isinstance(section.get("train"), dict) and section["train"].get("task", "lm") != "lm":
        raise RunError(f"{path}: a train_gpt --task {section['train']['task']} run (a classifier): examples/pytorch "
                       "trains and reads language models; continue it with ./build/examples/train_gpt --resume, "
                       "score it with ./build/examples/evaluate --task classify")
    keys = declared_keys()
    known_train = set(keys["train"]["math"]) | set(keys["train"]["carried"])
    top = keys["top"] if has_model else [key for key in keys["top"] if key != "model"]
    sections = [("", top)] + ([("model", keys["model"])] if has_model else []) + [("train", sorted(known_train))]
    for section, names in sections:
        found = config if not section else config.get(section)
        if not isinstance(found, dict):
            raise RunError(f"{path}: no \"{section}\" object: not a train_gpt config.json")
        for key in found:
            if key not in names:
                where = f"\"{section}\" key" if section else "key"
                raise RunError(f"{path}: {where} \"{key}\" is unknown to examples/pytorch (a newer train_gpt?); "
                               "it may change the math, so the run is not loaded: update examples/pytorch/")
        for key in names:
            if key not in found:
                raise RunError(f"{path}: \"{section or 'top'}\" has no \"{key}\": not a complete train_gpt config.json")
    precision = config["train"]["precision"]
    if precision not in PRECISIONS:
        raise RunError(f"{path}: \"train\" key \"precision\" is {json.dumps(precision)}, unknown to examples/pytorch "
                       f"(it knows {', '.join(PRECISIONS)}): a newer train_gpt? update examples/pytorch/")


def flags_of(train_config, skip=()):
    """config.json's "train" as command-line flags (a switch is given when true), as train_gpt reads it."""
    flags = []
    for key, value in train_config.items():
        if key in skip:
            continue
        if isinstance(value, bool):
            flags += ["--" + key] if value else []
        else:
            flags += ["--" + key, str(value)]
    return flags


# ---- loss.csv -------------------------------------------------------------------------------------

def read_loss_rows(path, up_to_step):
    """loss.csv's rows (as lists of 8 strings) up to and including up_to_step; a run's --eval-task
    columns (task_acc, task_acc_norm) are left out: the twin scores no task while it trains."""
    rows = []
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0] not in (CSV_HEADER, CSV_HEADER.rsplit(",", 2)[0], CSV_HEADER + ",task_acc,task_acc_norm"):
        raise RunError(f"{path}: line 1: expected the header {CSV_HEADER}")
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split(",")
        cells += [""] * (8 - len(cells))
        try:
            if int(cells[0]) <= up_to_step:
                rows.append(cells[:8])
        except ValueError:
            raise RunError(f"{path}: line {number}: expected {CSV_HEADER}, got '{line}'")
    return rows


def loss_row(step, train_loss, lr, tokens_per_s, elapsed_s, evaluation=None):
    """A loss.csv row in train_gpt's format (losses with 9 significant digits)."""
    g9 = lambda v: "%.9g" % v  # noqa: E731
    e = evaluation
    return [str(step), g9(train_loss), g9(e.val) if e else "", g9(lr), "%.1f" % tokens_per_s, "%.3f" % elapsed_s,
            g9(e.train_bpb) if e else "", g9(e.val_bpb) if e else ""]


# ---- a whole run ----------------------------------------------------------------------------------

def check_run_folder(folder, names=FILES + ("loss.csv",)):
    """folder has the files names (a whole run by default); a Hugging Face GPT-2 folder that is no
    run is named as such (check_config's message)."""
    if not os.path.isdir(folder):
        raise RunError(f"{folder}: no such folder")
    if os.path.exists(os.path.join(folder, "adapter_config.json")):
        raise RunError(f"{folder}: a LoRA run (its adapters alone, on a base model): continue it with ./build/examples/"
                       f"train_gpt --resume {folder}, or merge it into a folder like its base with --merge-lora OUT, "
                       "which hf_gpt2.py's or hf_llama.py's from_pretrained reads")
    for name in names:
        if not os.path.exists(os.path.join(folder, name)):
            if os.path.exists(os.path.join(folder, "config.json")):
                read_config(folder)  # a GPT-2 folder, not a run: says so
            raise RunError(f"{folder}: not a train_gpt run folder ({name} is missing)")


def read_config(folder):
    path = os.path.join(folder, "config.json")
    try:
        config = json.load(open(path))
    except (OSError, ValueError) as e:
        raise RunError(f"{path}: cannot read it as JSON ({e})")
    if isinstance(config, dict):
        fill_older_runs_keys(config)
    check_config(config, path)
    return config


def newest_consistent_pair(folder):
    """The newest model/optimizer files of the same step, among the current and the .prev ones."""
    best = None
    for m in ("model.safetensors", "model.safetensors.prev"):
        for o in ("optimizer.safetensors", "optimizer.safetensors.prev"):
            mp, op = os.path.join(folder, m), os.path.join(folder, o)
            if not (os.path.exists(mp) and os.path.exists(op)):
                continue
            model, mmeta = read_safetensors(mp)
            opt, ometa = read_safetensors(op)
            if mmeta.get("step") is not None and mmeta.get("step") == ometa.get("step"):
                step = int(mmeta["step"])
                if best is None or step > best[0]:
                    best = (step, model, opt, ometa)
    if best is None:
        raise RunError(f"{folder}: model.safetensors and optimizer.safetensors are of different steps and no earlier "
                       "pair matches: the checkpoint is inconsistent")
    return best


Checkpoint = collections.namedtuple("Checkpoint", "step model optimizer metadata hf_prefixed")


def model_state_of(tensors, config, path):
    """model.safetensors' tensors as GPTModel's state_dict, and whether they had GPT-2's
    "transformer." prefix: a run from GPT-2 keeps Hugging Face's names (gpt2_layout.py)."""
    if is_llama_layout(config):  # Hugging Face's names are the twin's; a tied head is left out of the file
        if config.get("tie_word_embeddings") and "lm_head.weight" not in tensors:
            tensors = dict(tensors, **{"lm_head.weight": tensors["model.embed_tokens.weight"]})
        return tensors, False
    if not is_gpt2_layout(config):
        return tensors, False
    try:
        return gpt2_layout.gpt_state(tensors, run_section(config)["model"], path), \
            gpt2_layout.is_prefixed(tensors)
    except ValueError as e:
        raise RunError(str(e))


def read_model_state(folder, config):
    """folder/model.safetensors as GPTModel's state_dict (for writing text)."""
    path = os.path.join(folder, "model.safetensors")
    return model_state_of(read_safetensors(path)[0], config, path)[0]


def load_checkpoint(folder):
    """The run's newest consistent step: its model's state_dict (GPTModel's names), optimizer
    tensors and metadata, and whether a run from GPT-2 names its tensors "transformer.*"."""
    check_run_folder(folder)
    step, tensors, optimizer, metadata = newest_consistent_pair(folder)
    model, prefixed = model_state_of(tensors, read_config(folder), os.path.join(folder, "model.safetensors"))
    return Checkpoint(step, model, optimizer, metadata, prefixed)


def model_file_tensors(model_state, config, hf_prefixed):
    """What model.safetensors holds: the state_dict, or for a run from GPT-2 its tensors under
    Hugging Face's names (with "transformer." when hf_prefixed), as train_gpt saves such a run."""
    if is_llama_layout(config):  # as transformers saves: a tied lm_head.weight left out
        tied = config.get("tie_word_embeddings")
        return {name: t for name, t in model_state.items() if not (tied and name == "lm_head.weight")}
    if not is_gpt2_layout(config):
        return model_state
    return gpt2_layout.hf_tensors(model_state, run_section(config)["model"]["n_layers"], hf_prefixed)


def save_run(folder, config, tokenizer_files, model_state, optimizer_tensors, metadata, loss_rows,
                    hf_prefixed=False):
    """The run folder as train_gpt writes it: config and tokenizer files (tokenizer.json, and GPT-2's
    vocab.json and merges.txt: {name: text or bytes}), then the model/optimizer pair (the previous
    pair kept as *.prev first), then loss.csv."""
    os.makedirs(folder, exist_ok=True)
    step = metadata["step"]
    files = dict({"config.json": json.dumps(config, indent=1) + "\n"}, **tokenizer_files)
    staged = [(os.path.join(folder, name), write_staged(os.path.join(folder, name), data))
              for name, data in files.items()]
    model_path, opt_path = os.path.join(folder, "model.safetensors"), os.path.join(folder, "optimizer.safetensors")
    model_tensors = model_file_tensors(model_state, config, hf_prefixed)
    staged_model = write_staged(model_path, safetensors_bytes(model_tensors, {"format": "pt", "step": step}))
    staged_opt = write_staged(opt_path, safetensors_bytes(optimizer_tensors, metadata))
    for path, tmp in staged:
        os.replace(tmp, path)
    keep_previous_version(model_path)
    keep_previous_version(opt_path)
    os.replace(staged_opt, opt_path)
    os.replace(staged_model, model_path)
    write_atomically(os.path.join(folder, "loss.csv"), "\n".join([CSV_HEADER] + [",".join(r) for r in loss_rows]) + "\n")
