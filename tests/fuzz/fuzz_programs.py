#!/usr/bin/env python3
"""tests/fuzz/fuzz_programs.py — every kind of file a user hands the programs, mutated, fed to the
real examples/train_gpt and examples/generate; each run must end in a clean error or a right answer.

    python3 tests/fuzz/fuzz_programs.py BUILD_DIR [--seed S] [--mutants N] [--surface NAME]
                                        [--mutant K] [--keep DIR] [--budget-s SECONDS]

It first makes the folders it mutates with the programs themselves (a character-level run, a BPE
run, a run from GPT-2 and a LoRA run, each a few steps of train_gpt on a tiny model), plus a tiny
Hugging Face GPT-2 folder that it writes itself (config.json, model.safetensors, vocab.json,
merges.txt: the format is small enough to write with the standard library), tiny Llama, Qwen2 and
Qwen3 folders (config.json, model.safetensors or two shards and model.safetensors.index.json, a
byte-level BPE tokenizer.json and a tokenizer_config.json with a chat template; Qwen's vocabulary
padded past its tokenizer as Qwen's models ship), and the runs of those (a Qwen3 run from scratch, a
Qwen2 fine-tune, a Llama LoRA run, a Qwen3 LoRA run on conversations). Then, for each surface
(below), N mutants: a copy of a folder with one thing changed, and one program run on it.

Surfaces: gpt2-config (a GPT-2 folder's config.json), run-config (a run's config.json), tokenizer
(vocab.json, merges.txt, encoder.json/vocab.bpe, tapegrad's tokenizer.json), jsonl (instruction
data), adapters (adapter_config.json, adapters.safetensors), run-folder (files missing, extra,
corrupt, non-finite weights, loss.csv, .prev, stale .tmp- files), prompt (--prompt, --prompt-ids,
--instruction), output (where the programs write: FIFOs, folders, files in the way); and of the
Llama / Qwen family: hf-config (a Llama / Qwen2 / Qwen3 config.json), hf-weights (model.safetensors,
the shards and model.safetensors.index.json), hf-tokenizer (tokenizer.json, tokenizer_config.json),
chat-messages (generate --chat-messages' file), chat-stdin (generate --chat on standard input: long
lines, binary, /reset, /quit, end of input with or without a newline), chat-jsonl (conversations
to fine-tune on or --eval-only), flags (--arch, --kv-heads, --lora-rank, --lora-alpha,
--lora-targets, --decay-start, --decay-lr, --overwrite), merge-lora (--merge-lora's targets, with and
without --overwrite: another model's folder, the run, the base, a FIFO, a user's file), hf-run-config
(a Llama / Qwen run's config.json edited, then resumed); and tasks (evaluate's HellaSwag, ARC, MMLU
and choices files, examples/data/'s samples mutated, with --shots and --limit; instruction answers;
--eval-task fine-tunes; and classification: train_gpt --task classify on a mutated messages.tsv
with mutated --columns, --balance, --train-layers, --lora-rank and the split files, or evaluate --task classify reading it).

Each run is classified:
  clean error   exit 1 or 2, stderr one line "program: ..." (not an allocation of over 1 GiB refused)
  unclear error exit 1 or 2 with another stderr (reported; does not fail the stage)
  accepted      exit 0 and the output passed the checks below
  crash         a signal, a sanitizer report, or any other exit code; or an error decoding an id the
                model drew that its tokenizer lacks ("id N is no token of this tokenizer", N not one of
                --prompt-ids)
  hang          ran past --timeout-s
  over 1 GiB    peak RSS (os.wait4's ru_maxrss) over 1 GiB, the sanitizer's memory cap hit, or tapegrad's
                "cannot allocate N bytes" with N over 1 GiB (a tiny file asked for that much)
  silent wrong  exit 0 with a wrong output, or a user's file lost: --eval-only's JSON line not valid
                JSON or a loss that is not finite; a loss.csv with "nan"/"inf" or a row that is not
                numbers; a written model, adapters or logits file with a non-finite value; an input
                folder changed by a run that failed (or by generate / --eval-only at all); a FIFO or
                a user's file replaced; a tokenizer whose files differ only in line ends (or names)
                giving another token count than the original; a --merge-lora folder that keeps
                files of the model it held before (a mixed folder), or that generate cannot read;
                a generate --chat session that ends (exit 0 or an error) before it has read all of
                its standard input or up to /quit: a bad turn is reported and the session goes on,
                or the user's later turns are lost (the prompts "> " on standard error are counted).
Memory cap: in a normal build, RLIMIT_AS (--mem-cap-mb, 3 GiB); under AddressSanitizer, which
reserves terabytes of address space, ASAN_OPTIONS hard_rss_limit_mb=1024 and max_allocation_size_mb
=1024 (the report is counted as "over 1 GiB"). Peak RSS is measured for every run either way.

Mutant K of surface S under seed N is the same on every machine: a failing one is printed with its
seed, surface, index and description, its folder is kept (--keep, default a temporary folder that
is not deleted when something fails), and `--seed N --surface S --mutant K` runs it again. Exit
status: 0 when every run was a clean error, an unclear error or accepted; 1 otherwise.
"""

import argparse
import array
import hashlib
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

GIB_KB = 1024 * 1024  # ru_maxrss is in KiB on Linux
SURFACES = ["gpt2-config", "run-config", "tokenizer", "jsonl", "adapters", "run-folder", "prompt", "output",
            "hf-config", "hf-weights", "hf-tokenizer", "chat-messages", "chat-stdin", "chat-jsonl", "flags", "merge-lora",
            "hf-run-config", "tasks"]
CLASSES = ["clean error", "unclear error", "accepted", "crash", "hang", "over 1 GiB", "silent wrong"]
FAILING = {"crash", "hang", "over 1 GiB", "silent wrong"}

# The tiny models' flags: as tests/examples/test_gpt2_runs.cpp's kSmall, one thread.
SMALL = ["--batch", "2", "--eval-every", "2", "--eval-batches", "1", "--sample-tokens", "4", "--threads", "1",
         "--warmup", "0"]
SCRATCH = ["--emb-dim", "8", "--heads", "2", "--layers", "1", "--context", "8"]


# ---------------------------------------------------------------------------------------------
# Running a program: time limit, memory cap, peak RSS, classification.


class Run:
    """One finished program run."""

    def __init__(self, command, rc, signal_number, timed_out, maxrss_kb, stdout, stderr, seconds):
        self.command, self.rc, self.signal_number, self.timed_out = command, rc, signal_number, timed_out
        self.maxrss_kb, self.stdout, self.stderr, self.seconds = maxrss_kb, stdout, stderr, seconds


def sanitized(program):
    """Whether the program was linked with AddressSanitizer (-DTG_SANITIZE=ON, or any other way)."""
    return b"__asan_init" in Path(program).read_bytes()


class Runner:
    def __init__(self, build_dir, timeout_s, mem_cap_mb):
        self.train_gpt = str(Path(build_dir).resolve() / "examples" / "train_gpt")
        self.generate = str(Path(build_dir).resolve() / "examples" / "generate")
        self.evaluate = str(Path(build_dir).resolve() / "examples" / "evaluate")
        for program in (self.train_gpt, self.generate, self.evaluate):
            if not os.access(program, os.X_OK):
                sys.exit(f"fuzz_programs: {program} is not built (cmake --build {build_dir} --target train_gpt generate "
                         "evaluate)")
        self.sanitized = sanitized(self.train_gpt)
        self.timeout_s, self.mem_cap_mb = timeout_s, mem_cap_mb
        self.env = dict(os.environ, OMP_NUM_THREADS="1", BLIS_NUM_THREADS="1")
        if self.sanitized:
            self.env["ASAN_OPTIONS"] = ("detect_leaks=1:abort_on_error=1:hard_rss_limit_mb=1024:"
                                        "max_allocation_size_mb=1024:allocator_may_return_null=0")
            self.env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"

    def _limit_memory(self):
        if not self.sanitized:
            cap = self.mem_cap_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def run(self, command, cwd, stdout_path, stderr_path, stdin_path=None):
        """Runs command; its stdout and stderr go to files (no pipe to fill up), its standard input is
        stdin_path's bytes (a file: read at the program's pace, then end of input) or nothing."""
        started = time.monotonic()
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err, \
                open(stdin_path or os.devnull, "rb") as stdin:
            process = subprocess.Popen(command, cwd=cwd, stdin=stdin, stdout=out, stderr=err,
                                       env=self.env, preexec_fn=self._limit_memory, start_new_session=True)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > self.timeout_s:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.005)
        process.returncode = 0  # reaped here, not by Popen
        seconds = time.monotonic() - started
        rc = os.waitstatus_to_exitcode(status)
        return Run(command, rc if rc >= 0 else None, -rc if rc < 0 else None, timed_out, usage.ru_maxrss,
                   Path(stdout_path).read_bytes().decode("utf-8", "replace"),
                   Path(stderr_path).read_bytes().decode("utf-8", "replace"), seconds)


SANITIZER_MEMORY_CAP = ("AddressSanitizer: hard rss limit exhausted", "AddressSanitizer: requested allocation size",
                        "AddressSanitizer: out of memory", "AddressSanitizer: allocator is out of memory",
                        "AddressSanitizer: allocation-size-too-big", "AddressSanitizer: rss-limit-exceeded")
# tapegrad's own message when an allocation fails (a clean error, but of a file that asked for over 1 GiB)
ALLOCATION_FAILED = re.compile(r"cannot allocate (\d+) bytes")
# decoding an id the tokenizer lacks: on an id the model drew (not one of --prompt-ids), a program's own bug,
# as when a vocabulary padded past the tokenizer (Qwen's) is sampled from
NOT_A_TOKEN = re.compile(r"id (\d+) is no token of this tokenizer")


def drawn_id_not_a_token(run):
    """The id of a NOT_A_TOKEN error that is none of the run's --prompt-ids, or None."""
    found = NOT_A_TOKEN.search(run.stderr)
    if not found:
        return None
    given = run.command[run.command.index("--prompt-ids") + 1].split(",") if "--prompt-ids" in run.command else []
    return None if found.group(1) in [i.strip() for i in given] else found.group(1)
SANITIZER_REPORT = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer")


def one_line_error(run, program):
    lines = run.stderr.strip().split("\n")
    return len(lines) == 1 and lines[0].startswith(program + ": ") and len(lines[0]) > len(program) + 2


def classify(run, program, wrong):
    """(class, why) of a run; wrong: the silent-wrong checks' findings (strings)."""
    if run.timed_out:
        return "hang", f"no exit in {run.seconds:.0f} s"
    if any(s in run.stderr for s in SANITIZER_MEMORY_CAP):
        return "over 1 GiB", "the sanitizer's memory cap: " + first_report_line(run.stderr)
    if any(s in run.stderr for s in SANITIZER_REPORT):
        return "crash", "sanitizer: " + first_report_line(run.stderr)
    if run.signal_number is not None:
        return "crash", f"signal {signal.Signals(run.signal_number).name}: " + last_line(run.stderr)
    if run.maxrss_kb > GIB_KB:
        return "over 1 GiB", f"peak RSS {run.maxrss_kb // 1024} MiB"
    asked = ALLOCATION_FAILED.search(run.stderr)
    if asked and int(asked.group(1)) > GIB_KB * 1024:
        return "over 1 GiB", f"asked for {int(asked.group(1)) / 2 ** 30:.3g} GiB: " + last_line(run.stderr)
    if run.rc not in (0, 1, 2):
        return "crash", f"exit code {run.rc}: " + last_line(run.stderr)
    if run.rc != 0 and drawn_id_not_a_token(run) is not None:
        return "crash", "an id the model drew is no token of its tokenizer: " + last_line(run.stderr)
    if wrong:
        return "silent wrong", "; ".join(wrong)
    if run.rc == 0:
        return "accepted", ""
    if one_line_error(run, program):
        return "clean error", run.stderr.strip()
    return "unclear error", f"exit {run.rc}, stderr: " + repr(run.stderr.strip()[-300:])


def first_report_line(text):
    for line in text.split("\n"):
        if any(s in line for s in SANITIZER_REPORT + SANITIZER_MEMORY_CAP):
            return line.strip()[:300]
    return last_line(text)


def last_line(text):
    lines = [l for l in text.strip().split("\n") if l.strip()]
    return lines[-1][:300] if lines else "(no output)"


# ---------------------------------------------------------------------------------------------
# Files: safetensors, JSON with duplicate keys kept, folder snapshots.


def read_safetensors(path):
    """[(name, dtype, shape, bytes)] and the metadata of a safetensors file (assumed valid)."""
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    tensors = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors.append((name, info["dtype"], info["shape"], data[8 + n + begin:8 + n + end]))
    return tensors, header.get("__metadata__")


def write_safetensors(path, tensors, metadata=None):
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def non_finite_tensors(path):
    """The names of path's F32 tensors with a nan or an inf (path: a valid safetensors file)."""
    tensors, _ = read_safetensors(path)
    bad = []
    for name, dtype, _, blob in tensors:
        if dtype == "F32" and not all(math.isfinite(v) for v in array.array("f", blob)):
            bad.append(name)
    return bad


class Obj(list):
    """A JSON object as its (key, value) pairs, in order, duplicates kept."""


class Raw:
    """JSON text put in as it is (maybe not JSON at all)."""

    def __init__(self, text):
        self.text = text


def parse_json(text):
    return json.loads(text, object_pairs_hook=Obj)


def dump_json(node):
    if isinstance(node, Raw):
        return node.text
    if isinstance(node, Obj):
        return "{" + ", ".join(json.dumps(k) + ": " + dump_json(v) for k, v in node) + "}"
    if isinstance(node, list):
        return "[" + ", ".join(dump_json(v) for v in node) + "]"
    return json.dumps(node)


def json_paths(node, prefix=()):
    """Every place in a JSON tree: (path, container kind), arrays' first 3 items only."""
    places = []
    if isinstance(node, Obj):
        for i, (key, value) in enumerate(node):
            places.append((prefix + (i,), key))
            places += json_paths(value, prefix + (i,))
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):
            places.append((prefix + (i,), f"[{i}]"))
            places += json_paths(value, prefix + (i,))
    return places


def container_of(root, path):
    node = root
    for i in path[:-1]:
        node = node[i][1] if isinstance(node, Obj) else node[i]
    return node


def path_name(root, path):
    names, node = [], root
    for i in path:
        if isinstance(node, Obj):
            names.append(str(node[i][0]))
            node = node[i][1]
        else:
            names.append(f"[{i}]")
            node = node[i]
    return ".".join(names)


def strict_json(text):
    """Python's json reads NaN and Infinity; JSON has neither."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def snapshot(folder):
    """{relative path: (kind, sha256 of contents)} of every entry under folder."""
    entries = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                entries[os.path.relpath(path, folder)] = ("file", hashlib.sha256(Path(path).read_bytes()).hexdigest())
            else:
                entries[os.path.relpath(path, folder)] = ("fifo" if stat.S_ISFIFO(mode) else
                                                          "link" if stat.S_ISLNK(mode) else
                                                          "dir" if stat.S_ISDIR(mode) else "other", "")
    return entries


def changes(before, after):
    """What changed of what was there before (a stale .tmp- file removed is no loss)."""
    lost = []
    for path, (kind, digest) in before.items():
        if ".tmp" in path:
            continue
        now = after.get(path)
        if now is None:
            lost.append(f"{path} removed")
        elif now != (kind, digest):
            lost.append(f"{path} changed" if now[0] == kind else f"{path} was a {kind}, is a {now[0]}")
    return lost


# ---------------------------------------------------------------------------------------------
# Mutations of bytes, lines and JSON values.

BAD_VALUES = [  # (description, JSON text)
    ("huge 1e9", "1000000000"), ("huge 2^31", "2147483648"), ("huge 2^63", "9223372036854775808"),
    ("huge 1e300", "1e300"), ("overflowing 1e400", "1e400"), ("negative -1", "-1"), ("-2^63", "-9223372036854775808"),
    ("zero", "0"), ("float 2.5 for an int", "2.5"), ("tiny 1e-320", "1e-320"), ("-0.0", "-0.0"),
    ("a string \"2\"", "\"2\""), ("an empty string", "\"\""), ("null", "null"), ("true", "true"), ("false", "false"),
    ("[]", "[]"), ("{}", "{}"), ("a 100000-character string", json.dumps("x" * 100000)),
    ("NaN (not JSON)", "NaN"), ("Infinity (not JSON)", "Infinity"), ("1 with a leading zero 01", "01"),
    ("an unterminated string", "\"abc"), ("nested 20000 deep", "[" * 20000 + "]" * 20000),
    ("a string with invalid UTF-8", "\"\xff\xfe\""), ("a string with \\u0000", "\"a\\u0000b\""),
    ("a lone surrogate \\ud800", "\"\\ud800\""),
]


def bad_value(rng):
    return rng.choice(BAD_VALUES)


def mutate_json_text(rng, text, name):
    """One change to a JSON file's text: (new text, description)."""
    try:
        root = parse_json(text)
    except ValueError:
        root = None
    places = json_paths(root) if root is not None else []
    roll = rng.random()
    if places and roll < 0.6:
        path, _ = rng.choice(places)
        what, value = bad_value(rng)
        container = container_of(root, path)
        if isinstance(container, Obj):
            container[path[-1]] = (container[path[-1]][0], Raw(value))
        else:
            container[path[-1]] = Raw(value)
        return dump_json(root), f"{name}: {path_name(parse_json(text), path)} = {what}"
    if places and roll < 0.8:
        objects = [p for p, _ in places if isinstance(container_of(root, p), Obj)]
        if objects:
            path = rng.choice(objects)
            container, label = container_of(root, path), path_name(root, path)
            key, value = container[path[-1]]
            op = rng.randrange(3)
            if op == 0:
                del container[path[-1]]
                return dump_json(root), f"{name}: {label} missing"
            if op == 1:
                what, bad = bad_value(rng)
                container.insert(path[-1] + 1, (key, Raw(bad)))
                return dump_json(root), f"{name}: {label} duplicated, the second one {what}"
            container.insert(path[-1], (key, Raw(bad_value(rng)[1])))
            return dump_json(root), f"{name}: {label} duplicated, the first one bad, the second the original"
    return mutate_whole_text(rng, text, name, json_file=True)


def mutate_whole_text(rng, text, name, json_file=False):
    """A change to a text file as a whole: (new text, description)."""
    data = text.encode("utf-8", "surrogateescape")
    choices = ["truncated", "empty", "random bytes", "a UTF-8 BOM", "garbage appended", "invalid UTF-8 inserted",
               "a NUL byte inserted", "CRLF line ends", "CR line ends", "1 MB appended on one line"]
    if json_file:
        choices += ["a top-level array", "nested 100000 deep", "a JSON number"]
    what = rng.choice(choices)
    if what == "truncated":
        cut = rng.randrange(max(1, len(data)))
        return data[:cut].decode("utf-8", "surrogateescape"), f"{name}: truncated to {cut} of {len(data)} bytes"
    if what == "empty":
        return "", f"{name}: empty"
    if what == "random bytes":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).decode("utf-8", "surrogateescape"), \
            f"{name}: random bytes"
    if what == "a UTF-8 BOM":
        return "\ufeff" + text, f"{name}: a UTF-8 BOM in front"
    if what == "garbage appended":
        return text + rng.choice(["}", "]", "x", "{\"a\": 1}", "\n\n\n", ",", "\x00"]), f"{name}: garbage appended"
    if what in ("invalid UTF-8 inserted", "a NUL byte inserted"):
        at = rng.randrange(len(data) + 1)
        piece = b"\x00" if what.startswith("a NUL") else rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"])
        return (data[:at] + piece + data[at:]).decode("utf-8", "surrogateescape"), f"{name}: {what} at byte {at}"
    if what == "CRLF line ends":
        return text.replace("\n", "\r\n"), f"{name}: CRLF line ends"
    if what == "CR line ends":
        return text.replace("\n", "\r"), f"{name}: CR line ends"
    if what == "1 MB appended on one line":
        return text + "x" * (1 << 20), f"{name}: 1 MB appended on one line"
    if what == "a top-level array":
        return "[" + text + "]", f"{name}: inside a top-level array"
    if what == "nested 100000 deep":
        return "[" * 100000 + "]" * 100000, f"{name}: nested 100000 deep"
    return "42", f"{name}: the number 42 instead of an object"


def mutate_lines(rng, text, name):
    """A change to a line-oriented file (merges.txt, loss.csv, .jsonl): (new text, description)."""
    lines = text.split("\n")
    body = [i for i, l in enumerate(lines) if l] or [0]
    what = rng.choice(["blank line", "line deleted", "line duplicated", "lines swapped", "line cut", "token changed",
                       "extra field", "whole"])
    i = rng.choice(body)
    if what == "blank line":
        lines.insert(i, rng.choice(["", " ", "\t", "\r"]))
        return "\n".join(lines), f"{name}: a blank line before line {i + 1}"
    if what == "line deleted":
        del lines[i]
        return "\n".join(lines), f"{name}: line {i + 1} deleted"
    if what == "line duplicated":
        lines.insert(i, lines[i])
        return "\n".join(lines), f"{name}: line {i + 1} twice"
    if what == "lines swapped":
        j = rng.choice(body)
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), f"{name}: lines {i + 1} and {j + 1} swapped"
    if what == "line cut":
        cut = rng.randrange(max(1, len(lines[i])))
        lines[i] = lines[i][:cut]
        return "\n".join(lines), f"{name}: line {i + 1} cut after {cut} characters"
    if what == "token changed":
        words = lines[i].replace(",", " ").split() or [""]
        word, new = rng.choice(words), rng.choice(["", "nan", "inf", "-1", "1e999", "x", "\xff", "\u0120"])
        lines[i] = lines[i].replace(word, new, 1)
        return "\n".join(lines), f"{name}: line {i + 1}'s {word!r} changed to {new!r}"
    if what == "extra field":
        lines[i] += rng.choice([",1", " x", ",", "  ", ",nan"])
        return "\n".join(lines), f"{name}: line {i + 1} gets an extra field"
    return mutate_whole_text(rng, text, name)


def mutate_safetensors(rng, path, name):
    """One change to a safetensors file, in place: description. Half of them keep the file valid and
    put a non-finite or huge value in a tensor (which must be refused, or never reach an output)."""
    data = bytearray(Path(path).read_bytes())
    n = struct.unpack("<Q", data[:8])[0]
    roll = rng.random()
    if roll < 0.4:
        tensors, metadata = read_safetensors(path)
        floats = [i for i, t in enumerate(tensors) if t[1] == "F32" and t[3]]
        i = rng.choice(floats)
        tname, dtype, shape, blob = tensors[i]
        values = array.array("f", blob)
        value = rng.choice([float("nan"), float("inf"), -float("inf"), 3e38])
        k = rng.randrange(len(values))
        values[k] = value
        tensors[i] = (tname, dtype, shape, values.tobytes())
        write_safetensors(path, tensors, metadata)
        return f"{name}: {tname}[{k}] = {value}"
    if roll < 0.55:
        cut = rng.randrange(len(data))
        Path(path).write_bytes(bytes(data[:cut]))
        return f"{name}: truncated to {cut} of {len(data)} bytes"
    if roll < 0.75:
        digits = [i for i in range(8, 8 + n) if chr(data[i]).isdigit()]
        i = rng.choice(digits)
        data[i] = ord(rng.choice("0123456789"))
        Path(path).write_bytes(bytes(data))
        return f"{name}: header digit at byte {i} changed"
    if roll < 0.85:
        header = data[8:8 + n].decode()
        for old, new in [('"F32"', '"F16"'), ('"F32"', '"I64"'), ('"F32"', '"BOOL"'), ('"F32"', '"F99"')]:
            if old in header and rng.random() < 0.5:
                header = header.replace(old, new, 1)
                break
        else:
            header = header.replace('"shape":[', '"shape":[1,', 1)
        Path(path).write_bytes(struct.pack("<Q", len(header)) + header.encode() + bytes(data[8 + n:]))
        return f"{name}: a tensor's dtype or shape changed in the header"
    for _ in range(rng.randrange(1, 5)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    Path(path).write_bytes(bytes(data))
    return f"{name}: bytes flipped"


# ---------------------------------------------------------------------------------------------
# The folders that get mutated, made once.

TEXT = "the fox saw the owl, and the owl saw the fox. " * 120  # a val split of over 256 GPT-2 tokens
MERGES = ["\u0120 t", "h e", "\u0120t he", "\u0120 a", "o w", "\u0120 s", "a w"]


def bytes_to_unicode():
    """GPT-2's byte alphabet: each byte as one printable character."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def write_tiny_gpt2(folder, rng):
    """A Hugging Face GPT-2 folder: 2 layers, width 8, 256 positions, the 256 bytes + 7 merges + <|endoftext|>."""
    folder.mkdir(parents=True)
    alphabet = bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    for i, merge in enumerate(MERGES):
        vocab[merge.replace(" ", "")] = 256 + i
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n", encoding="utf-8")
    V, P, C, L = len(vocab), 256, 8, 2  # 256 positions: an instruction in the Alpaca template fits
    config = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
              "bos_token_id": V - 1, "embd_pdrop": 0.1, "eos_token_id": V - 1, "layer_norm_epsilon": 1e-5,
              "model_type": "gpt2", "n_embd": C, "n_head": 2, "n_inner": None, "n_layer": L, "n_positions": P,
              "resid_pdrop": 0.1, "vocab_size": V, "torch_dtype": "float32"}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    def tensor(name, shape, fill=None):
        count = math.prod(shape)
        values = [fill] * count if fill is not None else [rng.gauss(0, 0.02) for _ in range(count)]
        return (name, "F32", list(shape), array.array("f", values).tobytes())

    tensors = [tensor("wte.weight", (V, C)), tensor("wpe.weight", (P, C))]
    for i in range(L):
        h = f"h.{i}."
        tensors += [tensor(h + "ln_1.weight", (C,), 1.0), tensor(h + "ln_1.bias", (C,), 0.0),
                    tensor(h + "attn.c_attn.weight", (C, 3 * C)), tensor(h + "attn.c_attn.bias", (3 * C,), 0.0),
                    tensor(h + "attn.c_proj.weight", (C, C)), tensor(h + "attn.c_proj.bias", (C,), 0.0),
                    tensor(h + "ln_2.weight", (C,), 1.0), tensor(h + "ln_2.bias", (C,), 0.0),
                    tensor(h + "mlp.c_fc.weight", (C, 4 * C)), tensor(h + "mlp.c_fc.bias", (4 * C,), 0.0),
                    tensor(h + "mlp.c_proj.weight", (4 * C, C)), tensor(h + "mlp.c_proj.bias", (C,), 0.0)]
    tensors += [tensor("ln_f.weight", (C,), 1.0), tensor("ln_f.bias", (C,), 0.0)]
    write_safetensors(folder / "model.safetensors", tensors, {"format": "pt"})


# Hugging Face Llama / Qwen2 / Qwen3 folders (models/hf/hf_llama.h), each with a byte-level BPE
# tokenizer.json and a tokenizer_config.json with a chat template (tokenizers/hf_tokenizer.h,
# tokenizers/chat_template.h): tiny, written with the standard library like the GPT-2 folder.

HF_FAMILIES = ["llama", "qwen2", "qwen3"]
HF_SPECIAL = {  # the added tokens, after the bytes and the merges
    "llama": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    "qwen3": ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"],
}
# The Split patterns tapegrad reads (hf_tokenizer.cpp), as the real files spell them.
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
# Short chat templates with the parts chat_format_of_template recognises each family by.
HF_CHAT_TEMPLATE = {
    "llama": "{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' "
             "+ m['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
             "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
    "qwen2": "{% for m in messages %}{% if loop.first and m['role'] != 'system' %}{{ '<|im_start|>system\\nYou are "
             "Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
             "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
             "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    "qwen3": "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
             "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% if enable_thinking is "
             "defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}",
}


def hf_tokenizer_files(family):
    """tokenizer.json's and tokenizer_config.json's texts of a family (the 256 bytes, the merges, its special
    tokens), and its number of tokens."""
    alphabet = bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    for i, merge in enumerate(MERGES):
        vocab[merge.replace(" ", "")] = 256 + i
    added = [{"id": len(vocab) + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(HF_SPECIAL[family])]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    split = {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT if family == "llama" else QWEN2_SPLIT},
             "behavior": "Isolated", "invert": False}
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                 "normalizer": None if family == "llama" else {"type": "NFC"},
                 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, byte_level]},
                 "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                    "use_regex": False},
                 "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
                 "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                           "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                           "ignore_merges": family == "llama", "vocab": vocab, "merges": MERGES}}
    special = HF_SPECIAL[family]
    config = {"add_bos_token": family == "llama", "bos_token": special[0] if family == "llama" else None,
              "eos_token": special[-1] if family == "llama" else "<|im_end|>", "pad_token": special[1 if family == "llama" else 0],
              "model_max_length": 256, "chat_template": HF_CHAT_TEMPLATE[family], "clean_up_tokenization_spaces": False,
              "tokenizer_class": "PreTrainedTokenizerFast"}
    return json.dumps(tokenizer, ensure_ascii=False, indent=2), json.dumps(config, indent=2), len(vocab) + len(added)


def hf_llama_tensors(family, config, rng):
    """The weights in models/hf/hf_llama.h's layout (hf_llama_layout): random, norms 1; the rows of ids past
    the tokenizer (Qwen pads its vocabulary) are 0, so that a greedy choice never falls on one."""
    C, I, L = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    hs = config.get("head_dim", C // config["num_attention_heads"])
    q, kv, V = config["num_attention_heads"] * hs, config["num_key_value_heads"] * hs, config["vocab_size"]
    used = config["tapegrad_fuzz_tokens"]

    def tensor(name, shape, fill=None, padded=False):
        count = math.prod(shape)
        values = [fill] * count if fill is not None else [rng.gauss(0, 0.02) for _ in range(count)]
        if padded:
            values[used * shape[1]:] = [0.0] * ((V - used) * shape[1])
        return (name, "F32", list(shape), array.array("f", values).tobytes())

    tensors = [tensor("model.embed_tokens.weight", (V, C), padded=True)]
    for i in range(L):
        a = f"model.layers.{i}.self_attn."
        tensors.append(tensor(a + "q_proj.weight", (q, C)))
        if family == "qwen2":
            tensors.append(tensor(a + "q_proj.bias", (q,)))
        tensors.append(tensor(a + "k_proj.weight", (kv, C)))
        if family == "qwen2":
            tensors.append(tensor(a + "k_proj.bias", (kv,)))
        tensors.append(tensor(a + "v_proj.weight", (kv, C)))
        if family == "qwen2":
            tensors.append(tensor(a + "v_proj.bias", (kv,)))
        tensors.append(tensor(a + "o_proj.weight", (C, q)))
        if family == "qwen3":
            tensors += [tensor(a + "q_norm.weight", (hs,), 1.0), tensor(a + "k_norm.weight", (hs,), 1.0)]
        m = f"model.layers.{i}."
        tensors += [tensor(m + "mlp.gate_proj.weight", (I, C)), tensor(m + "mlp.up_proj.weight", (I, C)),
                    tensor(m + "mlp.down_proj.weight", (C, I)), tensor(m + "input_layernorm.weight", (C,), 1.0),
                    tensor(m + "post_attention_layernorm.weight", (C,), 1.0)]
    tensors.append(tensor("model.norm.weight", (C,), 1.0))
    if not config["tie_word_embeddings"]:
        tensors.append(tensor("lm_head.weight", (V, C), padded=True))
    return tensors


def write_tiny_hf_llama(folder, family, rng, sharded=False):
    """A Hugging Face folder of model_type family: 2 layers, width 16, 2 heads of 8 (1 key/value head), 256
    positions; Qwen's vocabulary padded past the tokenizer's to a multiple of 32, as Qwen's models ship;
    sharded: the weights in two shards and model.safetensors.index.json."""
    folder.mkdir(parents=True)
    tokenizer, tokenizer_config, tokens = hf_tokenizer_files(family)
    (folder / "tokenizer.json").write_text(tokenizer, encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(tokenizer_config, encoding="utf-8")
    special = HF_SPECIAL[family]
    V = tokens if family == "llama" else -(-tokens // 32) * 32 + 32
    eos = tokens - 1 if family == "llama" else 256 + len(MERGES) + special.index("<|im_end|>")
    config = {"architectures": [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                                 "qwen3": "Qwen3ForCausalLM"}[family]],
              "hidden_act": "silu", "hidden_size": 16, "intermediate_size": 32, "max_position_embeddings": 256,
              "model_type": family, "num_attention_heads": 2, "num_hidden_layers": 2, "num_key_value_heads": 1,
              "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": family != "qwen2",
              "vocab_size": V, "bos_token_id": 256 + len(MERGES), "eos_token_id": eos, "torch_dtype": "float32"}
    if family == "llama":
        config.update(attention_bias=False, rope_theta=500000.0, initializer_range=0.02,
                      rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                    "original_max_position_embeddings": 32, "rope_type": "llama3"})
    elif family == "qwen2":
        config.update(use_sliding_window=False, sliding_window=64, max_window_layers=2)
    else:
        config.update(attention_bias=False, head_dim=8, use_sliding_window=False, rope_scaling=None)
    tensors = hf_llama_tensors(family, dict(config, tapegrad_fuzz_tokens=tokens), rng)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if not sharded:
        write_safetensors(folder / "model.safetensors", tensors, {"format": "pt"})
        return
    half = len(tensors) // 2
    shards = {"model-00001-of-00002.safetensors": tensors[:half], "model-00002-of-00002.safetensors": tensors[half:]}
    weight_map = {}
    for file, part in shards.items():
        write_safetensors(folder / file, part, {"format": "pt"})
        weight_map.update({t[0]: file for t in part})
    index = {"metadata": {"total_size": sum(len(t[3]) for t in tensors)}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


INSTRUCTIONS = [
    {"instruction": "Give the plural of the word.", "input": "fox", "output": "foxes"},
    {"instruction": "Say what the owl saw.", "output": "the fox"},
    {"instruction": "Repeat the word.", "input": "owl", "output": "owl owl"},
    {"instruction": "Give the plural of the word.", "input": "owl", "output": "owls"},
]
CHATS = [  # train_gpt --data-format chat: one conversation a line
    {"messages": [{"role": "user", "content": "Give the plural of fox."}, {"role": "assistant", "content": "foxes"}]},
    {"messages": [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "What saw the owl?"},
                  {"role": "assistant", "content": "the fox"}]},
    {"messages": [{"role": "user", "content": "Repeat owl."}, {"role": "assistant", "content": "owl owl"},
                  {"role": "user", "content": "Again."}, {"role": "assistant", "content": "owl owl"}]},
]
CHAT_MESSAGES = [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "What saw the owl?"},
                 {"role": "assistant", "content": "the fox"}, {"role": "user", "content": "And the fox?"}]


class Base:
    """The folders and files the mutants start from, in base_dir, made by the programs."""

    def __init__(self, runner, base_dir):
        self.dir, self.runner = base_dir, runner
        self.text = base_dir / "text.txt"
        self.text.write_text(TEXT)
        self.jsonl = base_dir / "instructions.jsonl"
        self.jsonl.write_text("".join(json.dumps(e) + "\n" for e in INSTRUCTIONS * 3))
        self.gpt2 = base_dir / "gpt2"
        write_tiny_gpt2(self.gpt2, random.Random(7))
        self.runs = {}
        made = [("char_run", SCRATCH + ["--data", str(self.text)]),
                ("bpe_run", SCRATCH + ["--data", str(self.text), "--tokenizer", "bpe", "--vocab-size", "270"]),
                # its context, the folder's 256: its --eval-only scores instruction examples too
                ("gpt2_run", ["--init-from", str(self.gpt2), "--data", str(self.text)]),
                ("lora_run", ["--init-from", str(self.gpt2), "--data", str(self.text), "--context", "8",
                              "--lora-rank", "2"])]
        # Llama / Qwen2 / Qwen3 folders (one file, and sharded), a chat file, and their runs
        self.hf = {f: base_dir / f for f in HF_FAMILIES}
        self.hf_sharded = {f: base_dir / f"{f}_sharded" for f in HF_FAMILIES}
        for i, family in enumerate(HF_FAMILIES):
            write_tiny_hf_llama(self.hf[family], family, random.Random(11 + i))
            write_tiny_hf_llama(self.hf_sharded[family], family, random.Random(11 + i), sharded=True)
        self.chats = base_dir / "chats.jsonl"
        self.chats.write_text("".join(json.dumps(c) + "\n" for c in CHATS * 4))
        self.chat_messages = base_dir / "chat.json"
        self.chat_messages.write_text(json.dumps(CHAT_MESSAGES, indent=2) + "\n")
        # (no samples at the end from a Qwen folder: its ids past the tokenizer, Qwen's padding, can be drawn)
        made += [("qwen3_run", SCRATCH + ["--arch", "qwen3", "--kv-heads", "1", "--data", str(self.text)]),
                 ("qwen2_run", ["--init-from", str(self.hf["qwen2"]), "--data", str(self.text), "--context", "16",
                                "--sample-tokens", "0"]),
                 ("llama_lora_run", ["--init-from", str(self.hf["llama"]), "--data", str(self.text), "--context", "16",
                                     "--lora-rank", "2", "--lora-targets", "attn,mlp"]),
                 ("qwen3_chat_run", ["--init-from", str(self.hf_sharded["qwen3"]), "--data", str(self.chats),
                                     "--lora-rank", "2", "--sample-tokens", "0"]),
                 ("classify_run", SCRATCH + ["--task", "classify", "--data", str(EXAMPLE_DATA / "messages.tsv"),
                                             "--columns", "label,text"])]
        for name, flags in made:
            out = base_dir / name
            self.must_succeed(runner, [runner.train_gpt] + SMALL + flags + ["--steps", "2", "--out", str(out)], name)
            self.runs[name] = out
        # the token count of the text with the original tokenizer files
        r = self.must_succeed(runner, [runner.train_gpt, "--eval-only", "--init-from", str(self.gpt2), "--data",
                                       str(self.text)], "gpt2-eval")
        self.gpt2_tokens = json.loads(r.stdout.split("\n")[0])["tokens"]
        self.hf_tokens = {}
        for family in HF_FAMILIES:
            r = self.must_succeed(runner, [runner.train_gpt, "--eval-only", "--init-from", str(self.hf[family]),
                                           "--data", str(self.text)], f"{family}-eval")
            self.hf_tokens[family] = json.loads(r.stdout.split("\n")[0])["tokens"]

    def folder(self, name):
        """A base folder by name: a run, "gpt2", "llama", "qwen2", "qwen3", or one of those three "_sharded"."""
        if name in self.runs:
            return self.runs[name]
        if name == "gpt2":
            return self.gpt2
        return self.hf_sharded[name[:-len("_sharded")]] if name.endswith("_sharded") else self.hf[name]

    def must_succeed(self, runner, command, name):
        r = runner.run(command, self.dir, self.dir / f"{name}.out", self.dir / f"{name}.err")
        if r.rc != 0:
            sys.exit(f"fuzz_programs: making the base folder {name} failed ({r.rc}, signal {r.signal_number}):\n"
                     f"  {' '.join(command)}\n{r.stdout}{r.stderr}")
        return r


# ---------------------------------------------------------------------------------------------
# A mutant: a folder, a command, and what its output must satisfy.


class Mutant:
    def __init__(self, surface, index, folder):
        self.surface, self.index, self.folder = surface, index, folder
        self.description = ""
        self.command = []
        self.program = ""
        self.watch = None  # the folder a failing run (or a read-only command) must leave as it was
        self.read_only = False  # generate and --eval-only change nothing in their input
        self.fifos = []  # FIFOs given as outputs: drained while it runs; they must stay FIFOs
        self.user_files = {}  # path -> bytes a user had, which no run may change
        self.checks = []  # functions(run) -> list of findings
        self.stdin = None  # bytes: generate --chat's standard input (its session is checked: chat_session_findings)


def copy_base(base, name, mutant):
    """A copy of a base folder in the mutant's: a run, "gpt2", or a Llama / Qwen folder ("qwen3", "qwen3_sharded")."""
    target = mutant.folder / name
    shutil.copytree(base.folder(name), target, symlinks=True)
    return target


def program_name(command):
    return Path(command[0]).name


# What the outputs must satisfy (each returns findings: an empty list is fine).

def eval_json_is_right(expected_tokens=None):
    def check(run):
        # the JSON line (a note on skipped instruction examples may come before it)
        line = next((l for l in run.stdout.split("\n") if l.startswith("{")), run.stdout.split("\n")[0])
        try:
            e = strict_json(line)
        except ValueError as error:
            return [f"--eval-only's line is not JSON ({error}): {line[:200]!r}"]
        found = [f"--eval-only's {k} is {e.get(k)!r}" for k in ("loss", "perplexity", "bpb")
                 if not isinstance(e.get(k), (int, float)) or not math.isfinite(e[k])]
        if expected_tokens is not None and e.get("tokens") != expected_tokens:
            found.append(f"the tokenizer gave {e.get('tokens')} tokens, the original files {expected_tokens}")
        return found
    return check


def run_folder_is_right(out, weights="model.safetensors"):
    def check(run):
        found = []
        loss = out / "loss.csv"
        if loss.exists():
            for n, row in enumerate(loss.read_text(errors="replace").split("\n")[1:], start=2):
                if not row:
                    continue
                try:
                    values = [float(v) for v in row.split(",") if v != ""]
                except ValueError:
                    found.append(f"loss.csv line {n} is not numbers: {row!r}")
                    break
                # a non-finite number in a row of this run's steps (the base runs did 2)
                if values and values[0] > 2 and not all(math.isfinite(v) for v in values):
                    found.append(f"loss.csv line {n} is {row!r}")
                    break
        for name in (weights, "optimizer.safetensors"):
            path = out / name
            if path.exists():
                try:
                    bad = non_finite_tensors(path)
                except (ValueError, KeyError, struct.error) as error:
                    found.append(f"{name} written unreadable: {error}")
                    continue
                if bad:
                    found.append(f"{name} written with non-finite values in {', '.join(bad[:3])}")
        config = out / "config.json"
        if config.exists():
            try:
                strict_json(config.read_text())
            except ValueError as error:
                found.append(f"config.json written as no JSON: {error}")
        return found
    return check


def logits_are_finite(path):
    def check(run):
        if not path.exists():
            return []  # an output a FIFO took, or one not asked for
        if not path.is_file():
            return []
        bad = non_finite_tensors(path)
        return [f"--logits-out {path.name} has non-finite logits"] if bad else []
    return check


# The commands on a folder.

def on_run_folder(base, mutant, run, rng, what=None):
    """One of the programs on a run folder (char_run, bpe_run, gpt2_run, lora_run): --eval-only, resume (in
    place or into another --out), generate, or --merge-lora; what: which (None: a random one)."""
    t, g = base.runner.train_gpt, base.runner.generate
    lora = (run / "adapter_config.json").exists()
    weights = "adapters.safetensors" if lora else "model.safetensors"
    choices = ["eval", "resume", "resume-out", "generate"] + (["merge"] if lora else [])
    what = what or rng.choice(choices)
    if what == "eval":
        mutant.command = [t, "--eval-only", "--resume", str(run)]
        mutant.read_only = True
        mutant.checks.append(eval_json_is_right())
    elif what == "resume":
        mutant.command = [t, "--resume", str(run), "--steps", "3"]
        mutant.checks.append(run_folder_is_right(run, weights))
    elif what == "resume-out":
        out = mutant.folder / "resumed"
        mutant.command = [t, "--resume", str(run), "--steps", "3", "--out", str(out)]
        mutant.checks.append(run_folder_is_right(out, weights))
    elif what == "generate":
        logits = mutant.folder / "logits.safetensors"
        mutant.command = [g, "--ckpt", str(run), "--prompt-ids", "1,2", "--tokens", "2", "--logits-out", str(logits)] + \
            weights_flags(rng)
        mutant.read_only = True
        mutant.checks.append(logits_are_finite(logits))
    else:
        merged = mutant.folder / "merged"
        mutant.command = [t, "--resume", str(run), "--merge-lora", str(merged)]
        mutant.read_only = True
        mutant.checks.append(run_folder_is_right(merged))
    mutant.watch = run


def weights_flags(rng):
    """How generate holds the weights it reads: as the folder has them (a BF16 folder's stay bfloat16),
    widened to float32, or quantized to int8 (a non-finite weight must then be a clean error)."""
    return rng.choice([[], ["--dtype", "float32"], ["--quantize", "int8"]])


def on_hf_folder(base, mutant, folder, rng, expected_tokens=None, what=None, chat=False):
    """One of the programs on a Hugging Face folder (GPT-2's, or a Llama / Qwen one): --eval-only (the one
    when expected_tokens is given), a fine-tune step, a LoRA step, or generate (on --prompt-ids); with chat
    (a folder with a chat template) also generate on --prompt text, or --chat-messages; what: which (None:
    a random one)."""
    t, g = base.runner.train_gpt, base.runner.generate
    if expected_tokens is not None:
        what = "eval"
    what = what or rng.choice(["eval", "train", "generate", "lora"] + (["text", "chat"] if chat else []))
    logits = mutant.folder / "logits.safetensors"
    if what == "eval":
        mutant.command = [t, "--eval-only", "--init-from", str(folder), "--data", str(base.text)]
        mutant.checks.append(eval_json_is_right(expected_tokens))
    elif what in ("train", "lora"):
        out = mutant.folder / "run"  # a Llama / Qwen folder's context is 256 tokens: 32 are enough
        mutant.command = [t, "--init-from", str(folder), "--data", str(base.text), "--steps", "1", "--out", str(out)] + \
            (["--lora-rank", "2"] if what == "lora" else []) + SMALL + (["--context", "32"] if chat else [])
        mutant.checks.append(run_folder_is_right(out, "adapters.safetensors" if what == "lora" else "model.safetensors"))
    elif what == "generate":
        mutant.command = [g, "--ckpt", str(folder), "--prompt-ids", "1,2", "--tokens", "2", "--logits-out", str(logits)] + \
            weights_flags(rng)
        mutant.checks.append(logits_are_finite(logits))
    elif what == "text":  # the tokenizer's encoding (BOS first where it says so), then greedy steps
        mutant.command = [g, "--ckpt", str(folder), "--prompt", "the fox saw", "--tokens", "2", "--temperature", "0",
                          "--logits-out", str(logits)]
        mutant.checks.append(logits_are_finite(logits))
    else:
        mutant.command = [g, "--ckpt", str(folder), "--chat-messages", str(base.chat_messages), "--tokens", "3",
                          "--temperature", "0"]
    mutant.read_only = True
    mutant.watch = folder


# ---------------------------------------------------------------------------------------------
# The surfaces' generators: each fills in a Mutant.

def gen_gpt2_config(base, mutant, rng):
    folder = copy_base(base, "gpt2", mutant)
    config = folder / "config.json"
    text, mutant.description = mutate_json_text(rng, config.read_text(), "gpt2/config.json")
    config.write_bytes(text.encode("utf-8", "surrogateescape"))
    on_hf_folder(base, mutant, folder, rng)


GPT_RUNS = ["char_run", "bpe_run", "gpt2_run", "lora_run"]
HF_RUNS = ["qwen3_run", "qwen2_run", "llama_lora_run", "qwen3_chat_run"]  # Llama / Qwen runs: HF config.json + "tapegrad"


def gen_run_config(base, mutant, rng, names=GPT_RUNS):
    name = rng.choice(names)
    run = copy_base(base, name, mutant)
    config = run / "config.json"
    text, mutant.description = mutate_json_text(rng, config.read_text(), f"{name}/config.json")
    config.write_bytes(text.encode("utf-8", "surrogateescape"))
    on_run_folder(base, mutant, run, rng)


def same_json(text, original):
    try:
        return strict_json(text) == strict_json(original)
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
        return False


def same_lines(text, original):
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n") == original.rstrip("\n")


def gen_tokenizer(base, mutant, rng):
    what = rng.choice(["vocab.json", "merges.txt", "merges line ends", "OpenAI names", "char tokenizer.json",
                       "bpe tokenizer.json", "gpt2_run tokenizer.json"])
    if what in ("vocab.json", "merges.txt", "merges line ends", "OpenAI names"):
        folder = copy_base(base, "gpt2", mutant)
        expected = None
        if what == "vocab.json":
            path = folder / "vocab.json"
            original = path.read_text(encoding="utf-8")
            text, mutant.description = mutate_json_text(rng, original, "gpt2/vocab.json")
            if same_json(text, original):  # only its white space changed: the same tokens
                expected = base.gpt2_tokens
        elif what == "merges.txt":
            path = folder / "merges.txt"
            original = path.read_text(encoding="utf-8")
            text, mutant.description = mutate_lines(rng, original, "gpt2/merges.txt")
            if same_lines(text, original):  # only its line ends changed: the same tokens
                expected = base.gpt2_tokens
        elif what == "merges line ends":  # the same merges: the same tokens, or a clean error
            path = folder / "merges.txt"
            ends = rng.choice(["\r\n", "\r"])
            text = path.read_text(encoding="utf-8").replace("\n", ends)
            if rng.random() < 0.5:
                text = text.rstrip(ends)
            mutant.description = f"gpt2/merges.txt with {ends!r} line ends (the same merges)"
            expected = base.gpt2_tokens
        else:  # encoder.json + vocab.bpe: the same files under OpenAI's names
            (folder / "vocab.json").rename(folder / "encoder.json")
            (folder / "merges.txt").rename(folder / "vocab.bpe")
            path = folder / "vocab.bpe"
            text = path.read_text(encoding="utf-8")
            mutant.description = "gpt2 with encoder.json + vocab.bpe (OpenAI's names, the same contents)"
            expected = base.gpt2_tokens
            if rng.random() < 0.5:
                text, change = mutate_lines(rng, text, "gpt2/vocab.bpe")
                mutant.description += ", then " + change
                expected = None
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        on_hf_folder(base, mutant, folder, rng, expected)
        return
    name = {"char tokenizer.json": "char_run", "bpe tokenizer.json": "bpe_run"}.get(what, "gpt2_run")
    run = copy_base(base, name, mutant)
    path = run / "tokenizer.json"
    text, mutant.description = mutate_json_text(rng, path.read_text(encoding="utf-8"), f"{name}/tokenizer.json")
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    on_run_folder(base, mutant, run, rng)


def mutate_jsonl_line(rng, lines, name):
    """One line of a JSONL file's lines changed as JSON (mutate_json_text), kept on one line: (text, description)."""
    i = rng.randrange(len(lines) - 1)
    lines[i], change = mutate_json_text(rng, lines[i], f"line {i + 1}")
    lines[i] = lines[i].replace("\n", " ")
    return "\n".join(lines), f"{name} {change}"


def gen_jsonl(base, mutant, rng):
    data = mutant.folder / "data.jsonl"
    lines = base.jsonl.read_text().split("\n")
    roll = rng.random()
    if roll < 0.45:  # one example's JSON changed
        text, mutant.description = mutate_jsonl_line(rng, lines, "data.jsonl")
    else:
        text, mutant.description = mutate_lines(rng, base.jsonl.read_text(), "data.jsonl")
    data.write_bytes(text.encode("utf-8", "surrogateescape"))
    t = base.runner.train_gpt
    what = rng.choice(["train", "eval-gpt2", "eval-run"])
    if what == "train":
        out = mutant.folder / "run"
        mutant.command = [t, "--init-from", str(base.gpt2), "--data", str(data), "--steps", "1", "--out", str(out)] + SMALL
        mutant.checks.append(run_folder_is_right(out))
    elif what == "eval-gpt2":
        mutant.command = [t, "--eval-only", "--init-from", str(base.gpt2), "--data", str(data)]
        mutant.checks.append(eval_json_is_right())
    else:
        mutant.command = [t, "--eval-only", "--resume", str(base.runs["gpt2_run"]), "--data", str(data)]
        mutant.checks.append(eval_json_is_right())
    mutant.watch, mutant.read_only = base.dir / "gpt2", True


def gen_adapters(base, mutant, rng):
    run = copy_base(base, "lora_run", mutant)
    if rng.random() < 0.5:
        path = run / "adapter_config.json"
        if rng.random() < 0.3:  # the fields a user edits, by name
            root = parse_json(path.read_text())
            keys = [k for k, _ in root]
            key = rng.choice([k for k in ("r", "lora_alpha", "target_modules", "base_model_name_or_path", "peft_type",
                                          "fan_in_fan_out", "bias", "lora_dropout") if k in keys])
            i = keys.index(key)
            what, value = rng.choice(BAD_VALUES + [("a missing folder", json.dumps(str(base.dir / "nowhere"))),
                                                   ("a relative path", "\"gpt2\""),
                                                   ("the run itself", json.dumps(str(run))),
                                                   ("[\"c_attn\", \"nothing\"]", "[\"c_attn\", \"nothing\"]"),
                                                   ("r 3 (not the saved rank)", "3")])
            root[i] = (key, Raw(value))
            text, mutant.description = dump_json(root), f"lora_run/adapter_config.json: {key} = {what}"
        else:
            text, mutant.description = mutate_json_text(rng, path.read_text(), "lora_run/adapter_config.json")
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    else:
        mutant.description = mutate_safetensors(rng, run / "adapters.safetensors", "lora_run/adapters.safetensors")
    on_run_folder(base, mutant, run, rng)


def gen_run_folder(base, mutant, rng):
    name = rng.choice(["char_run", "bpe_run", "gpt2_run", "lora_run"])
    run = copy_base(base, name, mutant)
    files = sorted(p.name for p in run.iterdir() if p.is_file())
    weights = "adapters.safetensors" if name == "lora_run" else "model.safetensors"
    what = rng.choice(["missing", "empty", "garbage", "a folder", "weights", "optimizer", "loss.csv", "loss.csv",
                       "prev", "stale tmp", "dangling link", "summary.json"])
    label = f"{name}/"
    if what == "missing":
        victim = rng.choice(files)
        (run / victim).unlink()
        mutant.description = f"{label}{victim} missing"
    elif what == "empty":
        victim = rng.choice(files)
        (run / victim).write_bytes(b"")
        mutant.description = f"{label}{victim} empty"
    elif what == "garbage":
        victim = rng.choice(files)
        (run / victim).write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))))
        mutant.description = f"{label}{victim} random bytes"
    elif what == "a folder":
        victim = rng.choice(files)
        (run / victim).unlink()
        (run / victim).mkdir()
        mutant.description = f"{label}{victim} a folder"
    elif what == "weights":
        mutant.description = mutate_safetensors(rng, run / weights, label + weights)
    elif what == "optimizer":
        mutant.description = mutate_safetensors(rng, run / "optimizer.safetensors", label + "optimizer.safetensors")
    elif what == "loss.csv":
        path = run / "loss.csv"
        text, mutant.description = mutate_lines(rng, path.read_text(), label + "loss.csv")
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    elif what == "prev":  # .prev files: of the same step, of another, or garbage
        kind = rng.choice(["copies", "model prev only", "garbage prev", "prev newer"])
        if kind == "copies":
            for f in (weights, "optimizer.safetensors"):
                shutil.copy(run / f, run / (f + ".prev"))
        elif kind == "model prev only":
            shutil.copy(run / weights, run / (weights + ".prev"))
        elif kind == "garbage prev":
            (run / (weights + ".prev")).write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
            shutil.copy(run / "optimizer.safetensors", run / "optimizer.safetensors.prev")
        else:  # the current pair unreadable: the .prev pair must be taken, or an error
            for f in (weights, "optimizer.safetensors"):
                shutil.copy(run / f, run / (f + ".prev"))
            (run / weights).write_bytes((run / weights).read_bytes()[:100])
        mutant.description = f"{label}.prev files: {kind}"
    elif what == "stale tmp":
        victim = rng.choice(files)
        (run / f"{victim}.tmp-{rng.randrange(10 ** 6)}").write_bytes(b"half-written")
        mutant.description = f"{label}a stale {victim}.tmp- file"
    elif what == "dangling link":
        victim = rng.choice(files)
        (run / victim).unlink()
        os.symlink(str(base.dir / "nowhere"), run / victim)
        mutant.description = f"{label}{victim} a dangling symlink"
    else:
        path = run / "summary.json"
        if path.exists():
            text, mutant.description = mutate_json_text(rng, path.read_text(), label + "summary.json")
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
        else:
            mutant.description = f"{label} unchanged (no summary.json)"
    on_run_folder(base, mutant, run, rng)


def random_text(rng):
    kind = rng.choice(["ascii", "bytes", "invalid", "long", "unicode", "empty", "control"])
    if kind == "ascii":
        return "".join(rng.choice("the fox owl saw,.") for _ in range(rng.randrange(1, 20))).encode(), "ASCII text"
    if kind == "bytes":
        return bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 30))), "random bytes"
    if kind == "invalid":
        return rng.choice([b"\xff", b"the \xc3", b"\xed\xa0\x80", b"\xc0\xaf fox", b"\xf8\x88\x80\x80\x80"]), \
            "invalid UTF-8"
    if kind == "long":
        return b"the fox " * rng.choice([3, 100, 5000]), "a long prompt"
    if kind == "unicode":
        return rng.choice(["\u00e9t\u00e9", "\U0001F98A", "\u202e", "\ufeffthe"]).encode(), "non-ASCII UTF-8"
    if kind == "empty":
        return b"", "empty"
    return bytes(rng.choice([1, 7, 9, 10, 13, 27, 127]) for _ in range(5)), "control characters"


def gen_prompt(base, mutant, rng):
    name = rng.choice(["char_run", "bpe_run", "gpt2_run", "lora_run", "gpt2"])
    ckpt = base.runs.get(name, base.gpt2)
    g = base.runner.generate
    what = rng.choice(["prompt", "prompt", "prompt-ids", "prompt-ids", "instruction"])
    command = [g, "--ckpt", str(ckpt), "--tokens", str(rng.choice([0, 2, 30]))]
    if what == "prompt":
        text, kind = random_text(rng)
        command += ["--prompt", os.fsdecode(text)]
        mutant.description = f"{name}: --prompt {kind} {text[:40]!r}"
    elif what == "prompt-ids":
        ids = rng.choice(["1,2", "", ",", "1,,2", " 1", "1 ", "-1", "0x10", "1e3", "+3", "263", "264", "99999999999",
                          "9223372036854775808", "1.0", "\xff", ",".join(["1"] * rng.choice([16, 17, 1000]))])
        command += ["--prompt-ids", ids]
        if rng.random() < 0.5:
            logits = mutant.folder / "logits.safetensors"
            command += ["--logits-out", str(logits)]
            mutant.checks.append(logits_are_finite(logits))
        mutant.description = f"{name}: --prompt-ids {ids[:40]!r}"
    else:
        text, kind = random_text(rng)
        command += ["--instruction", os.fsdecode(text)]
        if rng.random() < 0.5:
            more, kind2 = random_text(rng)
            command += ["--input", os.fsdecode(more)]
            kind += f", --input {kind2}"
        mutant.description = f"{name}: --instruction {kind} {text[:40]!r}"
    mutant.command = command
    mutant.watch, mutant.read_only = ckpt, True


def output_target(rng, mutant, base, kind=None):
    """A path to write to, with something of the user's there or in the way: (path, description); kind:
    which (None: a random one)."""
    kind = kind or rng.choice(["fifo", "fifo", "folder with a file", "regular file", "under a file", "missing folder",
                               "empty name", "dangling link"])
    target = mutant.folder / "target"
    if kind == "fifo":
        os.mkfifo(target)
        mutant.fifos.append(target)
    elif kind == "folder with a file":
        target.mkdir()
        (target / "keep.txt").write_text("the user's notes")
        mutant.user_files[target / "keep.txt"] = b"the user's notes"
    elif kind == "regular file":
        target.write_text("the user's file")
        mutant.user_files[target] = None  # may be overwritten by a run that succeeds, not by one that fails
    elif kind == "under a file":
        (mutant.folder / "file").write_text("a file")
        target = mutant.folder / "file" / "target"
    elif kind == "missing folder":
        target = mutant.folder / "no" / "such" / "target"
    elif kind == "empty name":
        target = ""  # not Path(""), which is "."
    else:
        os.symlink(str(mutant.folder / "nowhere" / "x"), target)
    return target, kind


def gen_output(base, mutant, rng):
    t, g = base.runner.train_gpt, base.runner.generate
    target, kind = output_target(rng, mutant, base)
    what = rng.choice(["logits-out", "write-corpus", "out", "merge-lora", "fifo in --out"])
    if what == "logits-out":
        mutant.command = [g, "--ckpt", str(base.runs["char_run"]), "--prompt-ids", "1,2", "--tokens", "1",
                          "--logits-out", str(target)]
    elif what == "write-corpus":
        mutant.command = [t, "--write-corpus", str(target)]
    elif what == "out":
        mutant.command = [t, "--data", str(base.text), "--steps", "1", "--out", str(target)] + SCRATCH + SMALL
    elif what == "merge-lora":
        mutant.command = [t, "--resume", str(base.runs["lora_run"]), "--merge-lora", str(target)]
    else:  # a run folder whose output file is a FIFO the user made
        run = copy_base(base, "char_run", mutant)
        victim = rng.choice(["samples.txt", "summary.json", "loss.svg"])
        (run / victim).unlink()
        os.mkfifo(run / victim)
        mutant.fifos = [run / victim]
        mutant.user_files = {}
        mutant.command = [t, "--resume", str(run), "--steps", "3"]
        kind, target = f"{victim} a FIFO", run / victim
    mutant.description = f"{what} onto {kind} ({target})"


# ---------------------------------------------------------------------------------------------
# Llama / Qwen2 / Qwen3 folders and what reads them: config.json, the weights (one file or shards and
# their index), tokenizer.json and tokenizer_config.json, chat message files, generate --chat on
# standard input, chat JSONL, --arch and the LoRA flags, --merge-lora's targets, a run's edited config.

HF_CONFIG_VALUES = [("rope_theta 1e-300 (logits nan)", "rope_theta", "1e-300"),
                    ("rope_scaling of rope_type yarn", "rope_scaling", '{"rope_type": "yarn", "factor": 4.0}'),
                    ("rope_scaling factor 0", "rope_scaling",
                     '{"rope_type": "llama3", "factor": 0, "low_freq_factor": 1, "high_freq_factor": 4, '
                     '"original_max_position_embeddings": 32}'),
                    ("model_type gpt2", "model_type", '"gpt2"'), ("model_type mistral", "model_type", '"mistral"'),
                    ("hidden_act gelu", "hidden_act", '"gelu"'), ("head_dim 3", "head_dim", "3"),
                    ("num_key_value_heads 3", "num_key_value_heads", "3"), ("vocab_size 10", "vocab_size", "10"),
                    ("tie_word_embeddings flipped", "tie_word_embeddings", None),
                    ("use_sliding_window true", "use_sliding_window", "true"), ("mlp_bias true", "mlp_bias", "true"),
                    ("attention_bias true", "attention_bias", "true"),
                    ("rope_parameters too", "rope_parameters", '{"rope_theta": 10.0, "rope_type": "default"}')]
HF_CONFIG_FIELDS = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                    "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta",
                    "rope_scaling", "tie_word_embeddings", "bos_token_id", "eos_token_id", "torch_dtype"]


def hf_folder_name(rng, sharded=None):
    family = rng.choice(HF_FAMILIES)
    return family + ("_sharded" if (rng.random() < 0.3 if sharded is None else sharded) else "")


def edit_hf_config(rng, path, label):
    """A change to a Llama / Qwen config.json: a field a user edits set to a bad or odd value, or any change
    (mutate_json_text): description."""
    if rng.random() < 0.5:
        text, description = mutate_json_text(rng, path.read_text(), label)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        return description
    if rng.random() < 0.5:
        what, field, raw = rng.choice(HF_CONFIG_VALUES)
        if raw is None:
            raw = "false" if '"tie_word_embeddings": true' in path.read_text() else "true"
    else:
        field = rng.choice(HF_CONFIG_FIELDS)
        what, raw = bad_value(rng)
    set_json_field(path, field, raw)
    return f"{label}: {field} = {what}"


def gen_hf_config(base, mutant, rng):
    name = hf_folder_name(rng)
    folder = copy_base(base, name, mutant)
    mutant.description = edit_hf_config(rng, folder / "config.json", f"{name}/config.json")
    on_hf_folder(base, mutant, folder, rng, chat=True)


def shard_files(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("model-"))


def gen_hf_weights(base, mutant, rng):
    name = hf_folder_name(rng)
    folder = copy_base(base, name, mutant)
    index = folder / "model.safetensors.index.json"
    weights = shard_files(folder) or ["model.safetensors"]
    roll = rng.random()
    if roll < 0.45:
        victim = rng.choice(weights)
        mutant.description = mutate_safetensors(rng, folder / victim, f"{name}/{victim}")
    elif roll < 0.65 and index.exists():
        text, mutant.description = mutate_json_text(rng, index.read_text(), f"{name}/model.safetensors.index.json")
        index.write_bytes(text.encode("utf-8", "surrogateescape"))
    else:
        what = rng.choice(["missing", "empty", "a folder", "dangling link", "weight_map outside", "weight_map swapped",
                           "both kinds", "index alone", "bf16"])
        victim = rng.choice(weights)
        if what == "missing":
            (folder / victim).unlink()
        elif what == "empty":
            (folder / victim).write_bytes(b"")
        elif what == "a folder":
            (folder / victim).unlink()
            (folder / victim).mkdir()
        elif what == "dangling link":
            (folder / victim).unlink()
            os.symlink(str(base.dir / "nowhere"), folder / victim)
        elif what in ("weight_map outside", "weight_map swapped") and index.exists():
            root = json.loads(index.read_text())
            names = sorted(root["weight_map"])
            key = rng.choice(names)
            if what == "weight_map outside":  # a shard outside the folder: another model's file
                root["weight_map"][key] = rng.choice(["../" + name.split("_")[0] + "/model.safetensors",
                                                      str(base.folder(name.split("_")[0]) / "model.safetensors"),
                                                      "/dev/zero", "."])
            else:  # a name put in the shard that does not hold it
                other = [f for f in shard_files(folder) if f != root["weight_map"][key]]
                root["weight_map"][key] = other[0] if other else "model.safetensors"
            index.write_text(json.dumps(root, indent=2))
            what += f" ({key})"
        elif what == "both kinds":  # an index and a model.safetensors: of another family's model
            other = rng.choice([f for f in HF_FAMILIES if not name.startswith(f)])
            shutil.copy(base.folder(other) / "model.safetensors", folder / "model.safetensors")
            if not index.exists():
                shutil.copytree(base.folder(other + "_sharded"), mutant.folder / "other")
                for f in ["model.safetensors.index.json"] + shard_files(mutant.folder / "other"):
                    shutil.copy(mutant.folder / "other" / f, folder / f)
            what += f" (the other one {other}'s)"
        elif what == "index alone" and index.exists():
            for f in shard_files(folder):
                (folder / f).unlink()
        else:  # a tensor stored in BF16 (its top 16 bits): read as float32, the same model to rounding
            tensors, metadata = read_safetensors(folder / victim)
            i = rng.randrange(len(tensors))
            tname, _, shape, blob = tensors[i]
            words = array.array("H", blob)
            tensors[i] = (tname, "BF16", shape, array.array("H", words[1::2]).tobytes())
            write_safetensors(folder / victim, tensors, metadata)
            what += f" ({tname})"
        mutant.description = f"{name}/{victim}: {what}"
    on_hf_folder(base, mutant, folder, rng, chat=True)


HF_TOKENIZER_CONFIG_VALUES = [("bos_token null", "bos_token", "null"), ("eos_token <|nothing|>", "eos_token", '"<|nothing|>"'),
                              ("eos_token as an object", "eos_token", '{"content": "<|im_end|>", "special": true}'),
                              ("add_bos_token true", "add_bos_token", "true"), ("chat_template empty", "chat_template", '""'),
                              ("chat_template unknown", "chat_template", '"{{ messages }}"'),
                              ("chat_template a list", "chat_template", '[{"name": "default", "template": "x"}]'),
                              ("chat_template 1 MB", "chat_template", json.dumps("{{ x }}" * 150000))]


def added_tokens(path, tokens):
    """tokenizer.json's added_tokens made tokens: [(id, content)], after those there."""
    root = parse_json(path.read_text(encoding="utf-8"))
    i = next(i for i, (k, _) in enumerate(root) if k == "added_tokens")
    entries = [json.dumps({"id": t, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                           "normalized": False, "special": True}) for t, c in tokens]
    root[i] = ("added_tokens", Raw(dump_json(root[i][1])[:-1] + "".join(", " + e for e in entries) + "]"))
    path.write_bytes(dump_json(root).encode("utf-8", "surrogateescape"))


def gen_hf_tokenizer(base, mutant, rng):
    name = hf_folder_name(rng, sharded=False)
    folder = copy_base(base, name, mutant)
    expected = None
    roll = rng.random()
    if roll < 0.45:
        path = folder / "tokenizer.json"
        original = path.read_text(encoding="utf-8")
        text, mutant.description = mutate_json_text(rng, original, f"{name}/tokenizer.json")
        if same_json(text, original):  # only its white space changed: the same tokens
            expected = base.hf_tokens[name]
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    elif roll < 0.8:
        path = folder / "tokenizer_config.json"
        if rng.random() < 0.5:
            text, mutant.description = mutate_json_text(rng, path.read_text(encoding="utf-8"),
                                                        f"{name}/tokenizer_config.json")
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
        else:
            what, field, raw = rng.choice(HF_TOKENIZER_CONFIG_VALUES)
            set_json_field(path, field, raw)
            mutant.description = f"{name}/tokenizer_config.json: {what}"
    else:
        what = rng.choice(["tokenizer_config.json missing", "tokenizer.json missing", "an added token's id taken",
                           "an added token past vocab_size", "an added token of 0 bytes", "1000 added tokens"])
        path = folder / "tokenizer.json"
        if what.endswith("missing"):
            (folder / what.split()[0]).unlink()
        elif what == "an added token's id taken":
            added_tokens(path, [(rng.choice([0, 100, 262, 263]), "<|taken|>")])
        elif what == "an added token past vocab_size":
            added_tokens(path, [(rng.choice([319, 320, 1000, 2 ** 31, -1]), "<|far|>")])
        elif what == "an added token of 0 bytes":
            added_tokens(path, [(270, "")])
        else:
            added_tokens(path, [(270 + i, f"<|x{i}|>") for i in range(1000)])
        mutant.description = f"{name}: {what}"
    on_hf_folder(base, mutant, folder, rng, expected, chat=True)


CHAT_CKPTS = ["qwen3", "qwen2", "llama", "qwen3_chat_run", "char_run", "gpt2", "lora_run"]


def chat_command(base, mutant, rng, name=None, temperature="0", options=True):
    """generate on a folder that chats: (command, folder name); options: maybe --chat-format and --no-thinking."""
    name = name or rng.choice(CHAT_CKPTS)
    ckpt = base.folder(name)
    command = [base.runner.generate, "--ckpt", str(ckpt), "--tokens", "3", "--temperature", temperature]
    if options and rng.random() < 0.15:
        command += ["--chat-format", rng.choice(["qwen3", "qwen2.5", "llama3", "llama3.1", "tapegrad", "chatml", ""])]
    if options and rng.random() < 0.15:
        command.append("--no-thinking")
    mutant.watch, mutant.read_only = ckpt, True
    return command, name


def gen_chat_messages(base, mutant, rng):
    path = mutant.folder / "chat.json"
    original = json.dumps(CHAT_MESSAGES, indent=2)
    if rng.random() < 0.5:
        text, what = mutate_json_text(rng, original, "chat.json")
    else:
        messages = [dict(m) for m in CHAT_MESSAGES]
        kind = rng.choice(["wrapped", "last assistant", "role", "content", "long", "many", "system later",
                           "reasoning", "tool_calls", "special tokens", "empty content", "invalid UTF-8"])
        if kind == "wrapped":
            text = json.dumps({"messages": messages, "tools": []})
        else:
            m = rng.choice(messages)
            if kind == "last assistant":
                messages.append({"role": "assistant", "content": "x"})
            elif kind == "role":
                m["role"] = rng.choice(["tool", "User", "", "function", "developer"])
            elif kind == "content":
                m["content"] = rng.choice([None, 3, ["the fox"], {"type": "text", "text": "the fox"}])
            elif kind == "long":  # past the context (256)
                m["content"] = "the fox " * rng.choice([40, 200, 20000])
            elif kind == "many":
                messages = messages[:1] + [{"role": r, "content": "owl"} for _ in range(rng.choice([100, 3000]))
                                           for r in ("user", "assistant")] + messages[-1:]
            elif kind == "system later":
                messages.insert(2, {"role": "system", "content": "again"})
            elif kind == "reasoning":
                messages[2]["reasoning_content"] = rng.choice([None, "the owl looked", 7, "<think>x</think>"])
            elif kind == "tool_calls":
                messages[2]["tool_calls"] = []
            elif kind == "special tokens":
                m["content"] = rng.choice(["<|im_end|>", "<|im_start|>assistant\n", "<|eot_id|>", "<think>",
                                           "<|endoftext|>", "<|begin_of_text|>"]) + " the fox"
            elif kind == "empty content":
                m["content"] = ""
            text = json.dumps(messages)
            if kind == "invalid UTF-8":
                text = text.replace("owl", "o\udcffl", 1)
        what = f"chat.json: {kind}"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    command, name = chat_command(base, mutant, rng)
    mutant.command = command + ["--chat-messages", str(path)]
    mutant.description = f"{name}: {what}"


def chat_line(rng):
    """One line a user types (or pipes in): (bytes, description)."""
    kind = rng.choice(["text", "text", "/reset", "empty", "long", "binary", "invalid UTF-8", "CR", "special token",
                       "/quit", "spaces"])
    if kind == "text":
        return " ".join(rng.choice(["the", "fox", "owl", "saw", "Give", "plural"]) for _ in range(rng.randrange(1, 8))
                        ).encode(), "text"
    if kind == "/reset":
        return b"/reset", "/reset"
    if kind == "/quit":
        return rng.choice([b"/quit", b"/quit ", b"/QUIT"]), "/quit"
    if kind == "empty":
        return b"", "an empty line"
    if kind == "long":  # the context is 256 tokens
        n = rng.choice([300, 3000, 100000, 1 << 20])
        return b"x" * n, f"a line of {n} bytes"
    if kind == "binary":
        return bytes(rng.choice([0, 1, 27, 127, 200, 255]) for _ in range(rng.randrange(1, 40))), "binary"
    if kind == "invalid UTF-8":
        return rng.choice([b"the \xff fox", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"]), "invalid UTF-8"
    if kind == "CR":
        return b"the fox\r", "a CR at the end"
    if kind == "special token":
        return rng.choice([b"<|im_end|>", b"<|im_start|>assistant", b"<|eot_id|>", b"<think>", b"<|endoftext|>"]), \
            "a special token's text"
    return b"   \t ", "spaces"


def gen_chat_stdin(base, mutant, rng):
    lines = [chat_line(rng) for _ in range(rng.randrange(1, 6))]
    data = b"\n".join(line for line, _ in lines)
    ending = rng.choice(["\\n", "\\n", "no newline", "\\r\\n"])
    data += {"\\n": b"\n", "no newline": b"", "\\r\\n": b"\r\n"}[ending]
    temperature = rng.choice(["0", "0", "0", "1"])
    command, name = chat_command(base, mutant, rng, temperature=temperature)
    mutant.command, mutant.stdin = command + ["--chat"], data
    mutant.description = (f"{name}: --chat --temperature {temperature} on " + ", ".join(d for _, d in lines) +
                          f" (ending {ending})")


def gen_chat_jsonl(base, mutant, rng):
    data = mutant.folder / "chats.jsonl"
    lines = base.chats.read_text().split("\n")
    roll = rng.random()
    if roll < 0.4:  # one conversation's JSON changed
        text, mutant.description = mutate_jsonl_line(rng, lines, "chats.jsonl")
    elif roll < 0.7:
        i = rng.randrange(len(lines) - 1)
        chat = json.loads(lines[i])
        kind = rng.choice(["no assistant", "assistant first", "messages empty", "messages a string", "role", "long",
                           "many turns", "system later", "content not a string", "other keys"])
        m = chat["messages"]
        if kind == "no assistant":
            chat["messages"] = [x for x in m if x["role"] != "assistant"]
        elif kind == "assistant first":
            chat["messages"] = [{"role": "assistant", "content": "hello"}] + m
        elif kind == "messages empty":
            chat["messages"] = []
        elif kind == "messages a string":
            chat["messages"] = "the fox"
        elif kind == "role":
            m[-1]["role"] = rng.choice(["tool", "", "Assistant", "bot"])
        elif kind == "long":  # over the context: skipped
            m[-1]["content"] = "owl " * rng.choice([100, 10000])
        elif kind == "many turns":
            chat["messages"] = [{"role": r, "content": "owl"} for _ in range(rng.choice([50, 2000]))
                                for r in ("user", "assistant")]
        elif kind == "system later":
            m.append({"role": "system", "content": "again"})
        elif kind == "content not a string":
            m[0]["content"] = rng.choice([None, 1, ["owl"]])
        else:
            chat.update(id=7, tools=[], source="the fox")
        lines[i] = json.dumps(chat)
        text, mutant.description = "\n".join(lines), f"chats.jsonl line {i + 1}: {kind}"
    else:
        text, mutant.description = mutate_lines(rng, base.chats.read_text(), "chats.jsonl")
    data.write_bytes(text.encode("utf-8", "surrogateescape"))
    chat_jsonl_command(base, mutant, rng, data)


def chat_jsonl_command(base, mutant, rng, data, what=None):
    """A fine-tune step on the conversations (from a Llama / Qwen folder, or GPT-2's), or --eval-only on them."""
    t = base.runner.train_gpt
    name = rng.choice(["qwen3", "qwen2", "llama", "gpt2"])
    folder = base.folder(name)
    what = what or rng.choice(["train", "train", "eval", "eval-run"])
    fmt = ["--data-format", "chat"] if rng.random() < 0.3 else []
    if what == "train":
        out = mutant.folder / "run"
        mutant.command = [t, "--init-from", str(folder), "--data", str(data), "--steps", "1", "--out", str(out)] + \
            SMALL + ["--sample-tokens", "0"] + fmt + (["--lora-rank", "2"] if rng.random() < 0.3 else [])
        mutant.checks.append(run_folder_is_right(out, "adapters.safetensors" if "--lora-rank" in mutant.command
                                                 else "model.safetensors"))
    elif what == "eval":
        mutant.command = [t, "--eval-only", "--init-from", str(folder), "--data", str(data)] + fmt
        mutant.checks.append(eval_json_is_right())
    else:
        name, folder = "qwen3_chat_run", base.folder("qwen3_chat_run")
        mutant.command = [t, "--eval-only", "--resume", str(folder), "--data", str(data)] + fmt
        mutant.checks.append(eval_json_is_right())
    mutant.watch, mutant.read_only = folder, True
    mutant.description += f" ({what} from {name})"


FLAG_VALUES = ["", "0", "1", "-1", "2.5", "1e9", "1000000", "nan", "inf", "-inf", "0x10", " 2", "2 ", "1e-300",
               "9223372036854775808", os.fsdecode(b"\xff")]
ARCH_VALUES = ["llama", "qwen2", "qwen3", "gpt2", "", "LLAMA", "qwen", "mistral", "llama ", "qwen3,llama",
               os.fsdecode(b"qwen\xff")]
LORA_TARGETS = ["attn", "mlp", "attn,mlp", "mlp,attn", "attn,attn", "attn,,mlp", "", ",", "q_proj", "all", "ATTN",
                "attn mlp", os.fsdecode(b"\xff")]


def gen_flags(base, mutant, rng):
    t = base.runner.train_gpt
    out = mutant.folder / "run"
    what = rng.choice(["arch", "arch", "lora", "lora", "lora on resume", "arch on init", "schedule", "schedule on resume"])
    if what == "arch":  # a run from scratch
        flags = ["--arch", rng.choice(ARCH_VALUES)]
        if rng.random() < 0.6:
            flags += ["--kv-heads", rng.choice(FLAG_VALUES + ["2", "3"])]
        if rng.random() < 0.3:
            flags += ["--heads", rng.choice(["1", "3", "4", "8"])]
        mutant.command = [t, "--data", str(base.text), "--steps", "1", "--out", str(out)] + SCRATCH + SMALL + flags
        mutant.checks.append(run_folder_is_right(out))
    elif what == "arch on init":  # --arch beside --init-from: the folder's model_type is the architecture
        name = hf_folder_name(rng, sharded=False)
        flags = ["--arch", rng.choice(ARCH_VALUES)] + (["--kv-heads", rng.choice(["1", "2"])] if rng.random() < 0.5 else [])
        mutant.command = [t, "--init-from", str(base.folder(name)), "--data", str(base.text), "--steps", "1", "--out",
                          str(out), "--context", "32"] + SMALL + flags
        mutant.checks.append(run_folder_is_right(out))
        mutant.watch, mutant.read_only = base.folder(name), True
    elif what == "lora":
        name = rng.choice(HF_FAMILIES + ["gpt2"])
        flags = ["--lora-rank", rng.choice(FLAG_VALUES + ["2", "16", "100"])]
        if rng.random() < 0.5:
            flags += ["--lora-alpha", rng.choice(FLAG_VALUES)]
        if rng.random() < 0.5:
            flags += ["--lora-targets", rng.choice(LORA_TARGETS)]
        mutant.command = [t, "--init-from", str(base.folder(name)), "--data", str(base.text), "--steps", "1", "--out",
                          str(out), "--context", "32"] + SMALL + flags
        mutant.checks.append(run_folder_is_right(out, "adapters.safetensors"))
        mutant.watch, mutant.read_only = base.folder(name), True
    elif what == "schedule":  # a run from scratch with the decay's start and rate given (and --overwrite, alone)
        flags = ["--decay-start", rng.choice(FLAG_VALUES + ["1", "3"])]
        if rng.random() < 0.6:
            flags += ["--decay-lr", rng.choice(FLAG_VALUES + ["1e-3", "-2"])]
        if rng.random() < 0.3:
            flags += ["--overwrite"]
        mutant.command = [t, "--data", str(base.text), "--steps", "3", "--out", str(out)] + SCRATCH + SMALL + flags
        mutant.checks.append(run_folder_is_right(out))
    elif what == "schedule on resume":  # another --steps, the decay flags given beside it (only --steps may change)
        run = copy_base(base, rng.choice(["char_run", "qwen2_run", "llama_lora_run"]), mutant)
        flags = ["--steps", rng.choice(["1", "2", "3", "8", "12", "0", "-1"])]
        for flag, values in (("--decay-start", FLAG_VALUES + ["2"]), ("--decay-lr", FLAG_VALUES + ["1e-4"]),
                             ("--overwrite", None)):
            if rng.random() < 0.4:
                flags += [flag] + ([rng.choice(values)] if values else [])
        mutant.command = [t, "--resume", str(run)] + flags
        mutant.checks.append(run_folder_is_right(run, "adapters.safetensors" if "lora" in run.name else "model.safetensors"))
        mutant.watch = run
    else:  # a LoRA run resumed with other LoRA flags (or --arch)
        run = copy_base(base, "llama_lora_run", mutant)
        flag = rng.choice(["--lora-rank", "--lora-alpha", "--lora-targets", "--arch"])
        value = rng.choice({"--lora-targets": LORA_TARGETS, "--arch": ARCH_VALUES}.get(flag, FLAG_VALUES + ["4"]))
        flags = [flag, value]
        mutant.command = [t, "--resume", str(run), "--steps", "3", flag, value]
        mutant.checks.append(run_folder_is_right(run, "adapters.safetensors"))
        mutant.watch = run
    mutant.description = f"{what}: {' '.join(repr(f) if not f or ' ' in f else f for f in flags)}"


MODEL_FILES = re.compile(r"^(config\.json|generation_config\.json|model.*\.safetensors.*|tokenizer.*\.json|"
                         r"vocab\.json|merges\.txt|adapter.*)$")


def file_identities(folder):
    """{name: (inode, mtime)} of the files in folder: a file written again (AtomicFile: a new file renamed
    over the old) has another identity even with the same bytes."""
    if not os.path.isdir(folder) or os.path.islink(folder):
        return {}
    return {e.name: (e.stat().st_ino, e.stat().st_mtime_ns) for e in os.scandir(folder) if e.is_file()}


def merged_folder_is_right(base, target, before, scratch):
    """After --merge-lora exits 0: no model file of what the folder held before (before: file_identities)
    left in it untouched (a model mixed with another), no non-finite weight, and generate reads the folder."""
    def check(run):
        found = []
        if not target.is_dir():
            return [f"--merge-lora exited 0 and {target.name} is no folder"]
        after = file_identities(target)
        stale = [name for name, identity in before.items() if MODEL_FILES.match(name) and after.get(name) == identity]
        if stale:
            found.append(f"the merged folder keeps the other model's {', '.join(sorted(stale)[:4])}: a mixed folder")
        found += run_folder_is_right(target)(run)
        logits = scratch / "merged_logits.safetensors"
        r = base.runner.run([base.runner.generate, "--ckpt", str(target), "--prompt-ids", "1,2", "--tokens", "0",
                             "--logits-out", str(logits)], scratch, scratch / "check.out", scratch / "check.err")
        if r.rc != 0:
            found.append(f"generate cannot read the merged folder: {last_line(r.stderr)}")
        else:
            found += logits_are_finite(logits)(r)
        return found
    return check


def isolated_lora_run(base, mutant, name):
    """A copy of a LoRA run and of its base folder, side by side in mutant.folder/inputs, the run's
    adapter_config.json naming the copy: a merge into the base touches no other mutant's. (run, base copy)."""
    inputs = mutant.folder / "inputs"
    run, base_copy = inputs / name, inputs / "base_model"
    shutil.copytree(base.folder(name), run, symlinks=True)
    path = run / "adapter_config.json"
    shutil.copytree(json.loads(path.read_text())["base_model_name_or_path"], base_copy, symlinks=True)
    set_json_field(path, "base_model_name_or_path", json.dumps(str(base_copy)))
    return run, base_copy


MERGE_TARGETS = ["new", "another model", "another model", "fifo", "folder with a file", "regular file", "empty folder",
                 "the run", "the base", "a link to the base", "inside the run", "dangling link", "under a file",
                 "missing folder"]


def gen_merge_lora(base, mutant, rng, name=None, kind=None):
    name = name or rng.choice(["llama_lora_run", "qwen3_chat_run", "lora_run"])
    kind = kind or rng.choice(MERGE_TARGETS)
    run, base_copy = isolated_lora_run(base, mutant, name)
    target = mutant.folder / "target"
    if kind.startswith("another model"):  # a folder holding a Hugging Face model already: replaced whole, or refused
        other = kind.split(":")[1] if ":" in kind else rng.choice(["gpt2", "qwen2_sharded", "llama", "qwen3_sharded"])
        shutil.copytree(base.folder(other), target)
        kind = f"another model ({other})"
    elif kind == "empty folder":
        target.mkdir()
    elif kind == "the run":
        target = run
    elif kind == "the base":
        target = base_copy
    elif kind == "a link to the base":
        os.symlink(str(base_copy), target)
    elif kind == "inside the run":
        target = run / "merged"
    elif kind != "new":
        target, kind = output_target(rng, mutant, base, kind)
    before = file_identities(target)
    overwrite = rng.random() < 0.4  # the model a folder holds replaced whole; the run, its base and a file never
    mutant.command = [base.runner.train_gpt, "--resume", str(run), "--merge-lora", str(target)] + \
        (["--overwrite"] if overwrite else [])
    if kind not in ("the run", "the base", "a link to the base"):
        mutant.checks.append(merged_folder_is_right(base, target, before, mutant.folder))
    mutant.watch, mutant.read_only = run.parent, True  # the run and its base: a merge changes neither
    mutant.description = f"{name} --merge-lora onto {kind}" + (" --overwrite" if overwrite else "")


def gen_hf_run_config(base, mutant, rng):
    gen_run_config(base, mutant, rng, HF_RUNS)


# ---------------------------------------------------------------------------------------------
# Fixed mutants: the first ones of each surface, the same under every seed, so that the classes
# of bugs found once stay covered however few random mutants a run has time for.

def set_json_field(path, dotted, raw):
    """Sets (or adds) the field "a.b.c" of a JSON file to the JSON text raw."""
    root = parse_json(Path(path).read_text(encoding="utf-8"))
    keys = dotted.split(".")
    node = root
    for key in keys[:-1]:
        node = next(v for k, v in node if k == key)
    for i, (k, _) in enumerate(node):
        if k == keys[-1]:
            node[i] = (k, Raw(raw))
            break
    else:
        node.append((keys[-1], Raw(raw)))
    Path(path).write_bytes(dump_json(root).encode("utf-8", "surrogateescape"))


def fixed_gpt2_config(field, raw, what):
    def make(base, mutant, rng):
        folder = copy_base(base, "gpt2", mutant)
        set_json_field(folder / "config.json", field, raw)
        mutant.description = f"gpt2/config.json: {field} = {raw[:30]}"
        on_hf_folder(base, mutant, folder, rng, what=what)
    return make


def fixed_run_config(name, field, raw, what):
    def make(base, mutant, rng):
        run = copy_base(base, name, mutant)
        set_json_field(run / "config.json", field, raw)
        mutant.description = f"{name}/config.json: {field} = {raw[:30]}"
        on_run_folder(base, mutant, run, rng, what)
    return make


def fixed_merges_line_ends(ends, openai_names=False):
    def make(base, mutant, rng):
        folder = copy_base(base, "gpt2", mutant)
        path = folder / "merges.txt"
        path.write_bytes(path.read_bytes().replace(b"\n", ends.encode()))
        if openai_names:
            (folder / "vocab.json").rename(folder / "encoder.json")
            path.rename(folder / "vocab.bpe")
        mutant.description = (f"gpt2/merges.txt with {ends!r} line ends (the same merges)" +
                              (", as encoder.json + vocab.bpe" if openai_names else ""))
        on_hf_folder(base, mutant, folder, rng, expected_tokens=base.gpt2_tokens)
    return make


def fixed_tokenizer_json(name, field, raw, what):
    def make(base, mutant, rng):
        path = copy_base(base, name, mutant) / field[0]
        set_json_field(path, field[1], raw)
        mutant.description = f"{name}/{field[0]}: {field[1]} = {raw[:30]}"
        if name == "gpt2":
            on_hf_folder(base, mutant, path.parent, rng, what=what)
        else:
            on_run_folder(base, mutant, path.parent, rng, what)
    return make


def fixed_file(name, file, change, description, what):
    """change(path): bytes -> bytes, on a run folder's file."""
    def make(base, mutant, rng):
        run = copy_base(base, name, mutant)
        path = run / file
        path.write_bytes(change(path.read_bytes()))
        mutant.description = f"{name}/{file}: {description}"
        on_run_folder(base, mutant, run, rng, what)
    return make


def put_value(path, value):
    """A valid safetensors file with value as the first F32 tensor's first number."""
    tensors, metadata = read_safetensors(path)
    i = next(i for i, t in enumerate(tensors) if t[1] == "F32")
    values = array.array("f", tensors[i][3])
    values[0] = value
    tensors[i] = tensors[i][:3] + (values.tobytes(),)
    write_safetensors(path, tensors, metadata)


def fixed_value(name, file, value, what):
    def make(base, mutant, rng):
        run = copy_base(base, name, mutant)
        put_value(run / file, value)
        mutant.description = f"{name}/{file}: the first weight = {value}"
        on_run_folder(base, mutant, run, rng, what)
    return make


def fixed_run_folder(name, change, description, what):
    """change(run folder): anything."""
    def make(base, mutant, rng):
        run = copy_base(base, name, mutant)
        change(run)
        mutant.description = f"{name}: {description}"
        on_run_folder(base, mutant, run, rng, what)
    return make


def fixed_prompt(name, flags, description):
    def make(base, mutant, rng):
        ckpt = base.runs.get(name, base.gpt2)
        mutant.command = [base.runner.generate, "--ckpt", str(ckpt), "--tokens", "2"] + flags
        mutant.description = f"{name}: {description}"
        mutant.watch, mutant.read_only = ckpt, True
    return make


def fixed_jsonl(change, description):
    def make(base, mutant, rng):
        data = mutant.folder / "data.jsonl"
        data.write_bytes(change(base.jsonl.read_bytes()))
        out = mutant.folder / "run"
        mutant.command = [base.runner.train_gpt, "--init-from", str(base.gpt2), "--data", str(data), "--steps", "1",
                          "--out", str(out)] + SMALL
        mutant.checks.append(run_folder_is_right(out))
        mutant.description = f"data.jsonl: {description}"
        mutant.watch, mutant.read_only = base.gpt2, True
    return make


def fixed_output(what, kind_wanted):
    def make(base, mutant, rng):
        class Forced:  # output_target's and gen_output's choices, forced
            def choice(self, options):
                return kind_wanted if kind_wanted in options else what if what in options else options[0]
        gen_output(base, mutant, Forced())
    return make


def with_blank_line(data):
    lines = data.split(b"\n")
    return b"\n".join(lines[:2] + [b""] + lines[2:])


FIXED = {
    "gpt2-config": [fixed_gpt2_config("n_layer", "1000000000", "generate"),
                    fixed_gpt2_config("n_embd", "2147483648", "eval"),
                    fixed_gpt2_config("vocab_size", "-1", "train"),
                    fixed_gpt2_config("n_head", "0", "generate"),
                    fixed_gpt2_config("n_positions", "1e300", "eval"),
                    fixed_gpt2_config("n_embd", "2.5", "eval"),
                    fixed_gpt2_config("layer_norm_epsilon", "1e400", "generate"),
                    fixed_gpt2_config("n_inner", "1000000000", "eval")],
    "run-config": [fixed_run_config("char_run", "model.n_layers", "1000000000", "eval"),
                   fixed_run_config("char_run", "model.emb_dim", "0", "generate"),
                   fixed_run_config("char_run", "train.batch", "1000000000", "resume"),
                   fixed_run_config("bpe_run", "model.vocab_size", "-1", "eval"),
                   fixed_run_config("char_run", "model.context_length", "9223372036854775808", "generate"),
                   fixed_run_config("char_run", "train.lr", "1e400", "resume"),
                   fixed_run_config("char_run", "model.n_heads", "3", "eval"),
                   fixed_run_config("gpt2_run", "n_layer", "1000000000", "generate")],
    "tokenizer": [fixed_merges_line_ends("\r"), fixed_merges_line_ends("\r\n"), fixed_merges_line_ends("\n", True),
                  fixed_merges_line_ends("\r\n", True),
                  fixed_tokenizer_json("gpt2", ("vocab.json", "h"), "1000000000", "generate"),
                  fixed_tokenizer_json("char_run", ("tokenizer.json", "symbols"), "[104, 104]", "eval")],
    "jsonl": [fixed_jsonl(with_blank_line, "a blank line"),
              fixed_jsonl(lambda d: d.replace(b"\n", b"\r\n"), "CRLF line ends"),
              fixed_jsonl(lambda d: d.replace(b', "output"', b', "out"', 1), "the first example's output missing"),
              fixed_jsonl(lambda d: b"", "empty")],
    "adapters": [fixed_tokenizer_json("lora_run", ("adapter_config.json", "r"), "1000000000", "generate"),
                 fixed_tokenizer_json("lora_run", ("adapter_config.json", "lora_alpha"), "1e400", "eval"),
                 fixed_value("lora_run", "adapters.safetensors", float("nan"), "merge"),
                 fixed_tokenizer_json("lora_run", ("adapter_config.json", "target_modules"), "[\"nothing\"]",
                                      "generate")],
    "run-folder": [fixed_file("char_run", "loss.csv", with_blank_line, "a blank line", "resume"),
                   fixed_file("char_run", "loss.csv", lambda d: d + b"\n", "a blank line at the end", "resume"),
                   fixed_value("char_run", "model.safetensors", float("nan"), "eval"),
                   fixed_value("gpt2_run", "model.safetensors", float("inf"), "generate"),
                   fixed_value("char_run", "optimizer.safetensors", float("nan"), "resume"),
                   fixed_run_folder("char_run", lambda r: (r / "model.safetensors.tmp-12345").write_bytes(b"half"),
                                    "a stale model.safetensors.tmp-12345", "resume"),
                   fixed_run_folder("char_run", lambda r: (r / "config.json").unlink(), "config.json missing", "eval")],
    "prompt": [fixed_prompt("char_run", ["--prompt", os.fsdecode(b"the \xff fox")], "--prompt with invalid UTF-8"),
               fixed_prompt("gpt2", ["--prompt-ids", ",".join(["1"] * 1000)], "--prompt-ids: 1000 ids (context 256)"),
               fixed_prompt("gpt2", ["--instruction", os.fsdecode(b"\xc3")], "--instruction with invalid UTF-8"),
               fixed_prompt("gpt2", ["--prompt-ids", "99999999999"], "--prompt-ids 99999999999")],
    "output": [fixed_output("logits-out", "fifo"), fixed_output("write-corpus", "fifo"),
               fixed_output("fifo in --out", "fifo"), fixed_output("merge-lora", "fifo"),
               fixed_output("out", "regular file")],
}


GENERATORS = {"gpt2-config": gen_gpt2_config, "run-config": gen_run_config, "tokenizer": gen_tokenizer,
              "jsonl": gen_jsonl, "adapters": gen_adapters, "run-folder": gen_run_folder, "prompt": gen_prompt,
              "output": gen_output}


def fixed_hf_config(name, field, raw, what, without_tokenizer=False):
    def make(base, mutant, rng):
        folder = copy_base(base, name, mutant)
        set_json_field(folder / "config.json", field, raw)
        mutant.description = f"{name}/config.json: {field} = {raw[:30]}"
        if without_tokenizer:  # generate prints the ids, greedy ones
            for f in ("tokenizer.json", "tokenizer_config.json"):
                (folder / f).unlink()
            mutant.description += ", no tokenizer files"
        on_hf_folder(base, mutant, folder, rng, what=what, chat=True)
        if without_tokenizer:
            mutant.command += ["--temperature", "0"]
    return make


def fixed_hf_folder(name, change, description, what):
    """change(folder, base): anything, on a copy of a Llama / Qwen folder."""
    def make(base, mutant, rng):
        folder = copy_base(base, name, mutant)
        change(folder, base)
        mutant.description = f"{name}: {description}"
        on_hf_folder(base, mutant, folder, rng, what=what, chat=True)
    return make


def weights_a_fifo(folder, base):
    (folder / "model.safetensors").unlink()
    os.mkfifo(folder / "model.safetensors")


def index_beside_single(folder, base):
    """The folder's model.safetensors and the same model's shards and index beside it."""
    sharded = base.folder(folder.name + "_sharded")
    for f in ["model.safetensors.index.json"] + shard_files(sharded):
        shutil.copy(sharded / f, folder / f)


def index_names_missing_shard(folder, base):
    root = json.loads((folder / "model.safetensors.index.json").read_text())
    key = sorted(root["weight_map"])[0]
    root["weight_map"][key] = "model-00003-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(root))


def fixed_tokenizer_from_scratch(name, change, description):
    """change(tokenizer.json's path) on a copy of a folder's, then a run from scratch with it as --tokenizer:
    the model's vocabulary is the tokenizer's, however many tokens it has."""
    def make(base, mutant, rng):
        path = copy_base(base, name, mutant) / "tokenizer.json"
        change(path)
        out = mutant.folder / "run"
        mutant.command = [base.runner.train_gpt, "--data", str(base.text), "--tokenizer", str(path), "--steps", "1",
                          "--out", str(out)] + SCRATCH + SMALL
        mutant.checks.append(run_folder_is_right(out))
        mutant.watch, mutant.read_only = path.parent, True
        mutant.description = f"{name}/tokenizer.json: {description}, as the --tokenizer of a run from scratch"
    return make


def fixed_chat_stdin(name, data, description, temperature="0"):
    def make(base, mutant, rng):
        command, _ = chat_command(base, mutant, rng, name, temperature, options=False)
        mutant.command, mutant.stdin = command + ["--chat"], data
        mutant.description = f"{name}: --chat --temperature {temperature} on {description}"
    return make


def fixed_chat_messages(name, messages, description):
    def make(base, mutant, rng):
        path = mutant.folder / "chat.json"
        path.write_bytes(messages if isinstance(messages, bytes) else json.dumps(messages).encode())
        command, _ = chat_command(base, mutant, rng, name, options=False)
        mutant.command = command + ["--chat-messages", str(path)]
        mutant.description = f"{name}: chat.json {description}"
    return make


def fixed_chat_jsonl(change, description, what):
    """change(the base chats.jsonl's text): the new text."""
    def make(base, mutant, rng):
        data = mutant.folder / "chats.jsonl"
        data.write_bytes(change(base.chats.read_text()).encode("utf-8", "surrogateescape"))
        mutant.description = f"chats.jsonl: {description}"

        class First:  # chat_jsonl_command's choices: the first (qwen3), and what
            def choice(self, options):
                return options[0]

            def random(self):
                return 1.0
        chat_jsonl_command(base, mutant, First(), data, what)
    return make


def many_turns(n):
    turns = [{"role": r, "content": "owl"} for _ in range(n // 2) for r in ("user", "assistant")]
    return lambda text: json.dumps({"messages": turns}) + "\n" + text


def fixed_flags(name, flags, adapters=True):
    """train_gpt from a folder (or from scratch: name None) with these flags."""
    def make(base, mutant, rng):
        out = mutant.folder / "run"
        start = ["--init-from", str(base.folder(name)), "--context", "32"] if name else SCRATCH
        mutant.command = [base.runner.train_gpt, "--data", str(base.text), "--steps", "1", "--out", str(out)] + \
            start + SMALL + flags
        mutant.checks.append(run_folder_is_right(out, "adapters.safetensors" if adapters else "model.safetensors"))
        if name:
            mutant.watch, mutant.read_only = base.folder(name), True
        mutant.description = f"{name or 'from scratch'}: {' '.join(flags)}"
    return make


def fixed_merge(name, kind):
    def make(base, mutant, rng):
        gen_merge_lora(base, mutant, rng, name, kind)
    return make


# evaluate's data files: the samples examples/data/ ships, one per format, mutated.
TASK_SAMPLES = {"hellaswag": "hellaswag_sample.jsonl", "arc": "arc_sample.jsonl",
                "mmlu": "high_school_physics_test.csv", "choices": "choices_sample.jsonl"}
EXAMPLE_DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


def task_columns_are_right(run_dir):
    """After a train_gpt --eval-task run exits 0: loss.csv ends in task_acc,task_acc_norm, and every
    evaluated row (val_loss given) has both in [0, 1]."""
    def check(run):
        lines = (run_dir / "loss.csv").read_text(errors="replace").splitlines() if (run_dir / "loss.csv").is_file() else []
        if not lines or not lines[0].endswith(",task_acc,task_acc_norm"):
            return [f"loss.csv's header is {(lines[0] if lines else None)!r}: no task columns"]
        for n, line in enumerate(lines[1:], start=2):
            cells = line.split(",")
            if len(cells) != 10 or not cells[2]:
                continue
            try:
                values = [float(cells[8]), float(cells[9])]
            except ValueError:
                return [f"loss.csv line {n}: task columns {cells[8:]!r}"]
            if not all(0 <= v <= 1 for v in values):
                return [f"loss.csv line {n}: task columns {values!r} outside [0, 1]"]
        return []
    return check


def evaluate_result_is_right(out, shares, row_problem):
    """After evaluate exits 0: its last stdout line is JSON with items > 0 and each of shares in [0, 1],
    and --out holds one JSON line per item; row_problem(item) says what is wrong with one (None: nothing)."""
    def check(run):
        lines = [l for l in run.stdout.split("\n") if l.strip()]
        try:
            summary = strict_json(lines[-1] if lines else "")
        except ValueError as error:
            return [f"evaluate's last line is not JSON ({error}): {(lines[-1] if lines else '')[:200]!r}"]
        found = [f"evaluate's {k} is {summary.get(k)!r}" for k in shares
                 if not isinstance(summary.get(k), (int, float)) or not 0 <= summary[k] <= 1]
        items = summary.get("items")
        if not isinstance(items, int) or items < 1:
            return found + [f"evaluate's items is {items!r}"]
        rows = out.read_text(errors="replace").splitlines() if out.is_file() else []
        if len(rows) != items:
            found.append(f"--out has {len(rows)} lines for {items} items")
        for n, row in enumerate(rows[:items], start=1):
            try:
                problem = row_problem(strict_json(row))
            except (ValueError, KeyError, TypeError) as error:
                problem = f"not an item ({error})"
            if problem:
                found.append(f"--out line {n}: {problem}")
                break
        return found
    return check


def task_result_is_right(out):
    """evaluate_result_is_right for a multiple-choice task: acc and acc_norm, and each item a finite
    log-likelihood per choice."""
    def row_problem(item):
        lls = item["loglikelihoods"]
        ok = lls and all(isinstance(v, (int, float)) and math.isfinite(v) for v in lls)
        return None if ok else f"log-likelihoods {lls!r}"
    return evaluate_result_is_right(out, ("acc", "acc_norm"), row_problem)


def fixed_task(task, change, what):
    def make(base, mutant, rng):
        name = TASK_SAMPLES[task]
        data = mutant.folder / name
        data.write_text(change((EXAMPLE_DATA / name).read_text(encoding="utf-8")), encoding="utf-8")
        out = mutant.folder / "items.jsonl"
        mutant.command = [base.runner.evaluate, "--ckpt", str(base.folder("gpt2")), "--task", task, "--data", str(data),
                          "--out", str(out), "--threads", "1"]
        mutant.checks.append(task_result_is_right(out))
        mutant.watch, mutant.read_only = base.folder("gpt2"), True
        mutant.description = f"{task}: {what}"
    return make


def answers_result_is_right(out):
    """evaluate_result_is_right for --task instructions: exact_match and f1, and each item an answer
    with its scores."""
    def row_problem(item):
        ok = isinstance(item["answer"], str) and item["exact_match"] in (0, 1) and 0 <= item["f1"] <= 1
        return None if ok else f"answer {item!r}"[:200]
    return evaluate_result_is_right(out, ("exact_match", "f1"), row_problem)


def gen_answers(base, mutant, rng):
    """evaluate --task instructions on a mutated instruction or chat file."""
    name = rng.choice(["instructions.jsonl", "chats.jsonl"])
    original = (EXAMPLE_DATA / name).read_text(encoding="utf-8")
    if rng.random() < 0.5:
        text, mutant.description = mutate_jsonl_line(rng, original.split("\n"), name)
    else:
        text, mutant.description = mutate_lines(rng, original, name)
    data = mutant.folder / name
    data.write_bytes(text.encode("utf-8", "surrogateescape"))
    model = rng.choice(["gpt2", "qwen3", "gpt2_run"])
    out = mutant.folder / "answers.jsonl"
    flags = ["--limit", rng.choice(["2", "3", "1"])]
    if rng.random() < 0.4:
        flags += ["--max-tokens", rng.choice(["1", "4", "0", "-1", "x"])]
    if rng.random() < 0.3:
        flags += ["--judge", str(base.folder(rng.choice(["qwen3", "gpt2"])))]
    mutant.command = [base.runner.evaluate, "--ckpt", str(base.folder(model)), "--task", "instructions", "--data",
                      str(data), "--out", str(out), "--threads", "1", "--max-tokens", "6"] + flags
    mutant.checks.append(answers_result_is_right(out))
    mutant.watch, mutant.read_only = base.folder(model), True
    mutant.description = f"instructions on {model}: {mutant.description} {' '.join(flags)}"


def classify_result_is_right(out):
    """evaluate_result_is_right for --task classify: acc, and each text a label, a class given and a
    probability per class that sum to 1."""
    def row_problem(item):
        p = item["probabilities"]
        ok = p and all(isinstance(v, (int, float)) and 0 <= v <= 1 for v in p) and abs(sum(p) - 1) < 1e-6
        return None if ok else f"probabilities {p!r}"
    return evaluate_result_is_right(out, ("acc",), row_problem)


def gen_classify(base, mutant, rng):
    """A classification fine-tune (train_gpt --task classify) on a mutated messages.tsv, from scratch or
    from GPT-2 or Qwen3, its flags mutated too; half the time evaluate --task classify reads the run."""
    name = "messages.tsv"
    text, mutant.description = mutate_lines(rng, (EXAMPLE_DATA / name).read_text(encoding="utf-8"), name)
    data = mutant.folder / name
    data.write_bytes(text.encode("utf-8", "surrogateescape"))
    columns = rng.choice(["label,text", "label,text", "label,text", "text,label", "label", "label,text,x", "",
                          "label,label", "x,text"])
    flags = ["--columns", columns] if columns or rng.random() < 0.5 else []
    if rng.random() < 0.5:
        flags.append("--balance")
    if rng.random() < 0.4:
        flags += ["--train-layers", rng.choice(["last", "all", "lora", "none", ""])]
    model = rng.choice(["scratch", "gpt2", "qwen3"])
    start = SCRATCH if model == "scratch" else ["--init-from", str(base.folder(model)), "--context", "32"]
    if rng.random() < 0.2:  # the splits as files: the mutated file, the shipped one, a missing one
        shipped, missing = str(EXAMPLE_DATA / name), str(mutant.folder / "none.tsv")
        flags += rng.choice([["--val-data", str(data), "--test-data", shipped], ["--val-data", shipped],
                             ["--test-data", str(data), "--val-data", missing]])
    if rng.random() < 0.3:  # LoRA on the classifier (--train-layers lora when not given)
        flags += ["--lora-rank", rng.choice(["2", "2", "0", "-1", "100000"])]
    run = mutant.folder / "run"
    mutant.command = [base.runner.train_gpt, "--task", "classify", "--data", str(data), "--steps", "2",
                      "--out", str(run)] + start + SMALL + flags
    mutant.checks.append(run_folder_is_right(run))
    mutant.description = f"classify from {model}: {mutant.description} {' '.join(flags)}"
    if model != "scratch":
        mutant.watch, mutant.read_only = base.folder(model), True
    if rng.random() < 0.5:  # the file scored by the base classifier (trained on the shipped one)
        out = mutant.folder / "items.jsonl"
        split = ["--split", rng.choice(["test", "val", "train", "all", "x"])] if rng.random() < 0.3 else []
        mutant.command = [base.runner.evaluate, "--ckpt", str(base.folder("classify_run")), "--task", "classify",
                          "--data", str(data), "--out", str(out), "--threads", "1"] + split + \
            (flags[:2] if flags[:1] == ["--columns"] else [])
        mutant.checks = [classify_result_is_right(out)]
        mutant.watch, mutant.read_only = base.folder("classify_run"), True
        mutant.description = f"classify: evaluate on {mutant.description} {' '.join(split)}"


def gen_tasks(base, mutant, rng):
    if rng.random() < 0.2:
        return gen_answers(base, mutant, rng)
    if rng.random() < 0.25:
        return gen_classify(base, mutant, rng)
    task = rng.choice(sorted(TASK_SAMPLES))
    name = TASK_SAMPLES[task]
    original = (EXAMPLE_DATA / name).read_text(encoding="utf-8")
    if name.endswith(".jsonl") and rng.random() < 0.5:  # one item's JSON changed
        text, mutant.description = mutate_jsonl_line(rng, original.split("\n"), name)
    else:
        text, mutant.description = mutate_lines(rng, original, name)
    data = mutant.folder / name  # the name keeps MMLU's subject
    data.write_bytes(text.encode("utf-8", "surrogateescape"))
    if rng.random() < 0.25:  # the same file as a fine-tune's --eval-task, scored at each evaluation
        model = rng.choice(["gpt2", "qwen3"])
        run = mutant.folder / "run"
        flags = ["--eval-task", rng.choice([f"{task}:{data}", f"{task}:{data}", f"{task}:{data}", f"{task}{data}",
                                            f"{task}:", f"piqa:{data}"])]
        if rng.random() < 0.4:
            flags += ["--eval-task-limit", rng.choice(["1", "0", "3", "-1", "1e9", "x"])]
        mutant.command = [base.runner.train_gpt, "--init-from", str(base.folder(model)), "--data", str(base.text),
                          "--steps", "2", "--out", str(run), "--context", "32"] + SMALL + flags
        mutant.checks.append(run_folder_is_right(run))
        mutant.checks.append(task_columns_are_right(run))
        mutant.watch, mutant.read_only = base.folder(model), True
        mutant.description = f"{task} as --eval-task of a {model} fine-tune: {mutant.description} {' '.join(flags)}"
        return
    model = rng.choice(["gpt2", "llama", "qwen3", "gpt2_run"])
    out = mutant.folder / "items.jsonl"
    flags = []
    if rng.random() < 0.3:
        flags += ["--shots", rng.choice(["1", "2", "100", "-1", "nan"])]
    if rng.random() < 0.2:
        flags += ["--limit", rng.choice(["1", "0", "3", "1e9", "x"])]
    mutant.command = [base.runner.evaluate, "--ckpt", str(base.folder(model)), "--task", task, "--data", str(data),
                      "--out", str(out), "--threads", "1"] + flags
    mutant.checks.append(task_result_is_right(out))
    mutant.watch, mutant.read_only = base.folder(model), True
    mutant.description = f"{task} on {model}: {mutant.description}" + (f" {' '.join(flags)}" if flags else "")


FIXED.update({
    "hf-config": [fixed_hf_config("llama", "rope_theta", "1e-300", "generate", without_tokenizer=True),
                  fixed_hf_config("qwen3", "rope_theta", "1e-300", "text"),
                  fixed_hf_config("qwen2", "num_hidden_layers", "1000000000", "eval"),
                  fixed_hf_config("qwen3_sharded", "hidden_size", "2147483648", "generate"),
                  fixed_hf_config("llama", "num_key_value_heads", "3", "generate"),
                  fixed_hf_config("qwen3", "head_dim", "0", "chat"),
                  fixed_hf_config("qwen2", "vocab_size", "100000000", "eval"),
                  fixed_hf_config("llama", "rms_norm_eps", "1e400", "text"),
                  fixed_hf_config("qwen3", "max_position_embeddings", "1e300", "train")],
    "hf-weights": [fixed_hf_folder("qwen3", weights_a_fifo, "model.safetensors a FIFO", "generate"),
                   fixed_hf_folder("qwen2", index_beside_single, "model.safetensors and a sharded index", "eval"),
                   fixed_hf_folder("llama_sharded", index_names_missing_shard, "the index names a missing shard",
                                   "generate"),
                   fixed_hf_folder("qwen3_sharded",
                                   lambda f, b: put_value(f / "model-00002-of-00002.safetensors", float("nan")),
                                   "a nan in the second shard", "generate"),
                   fixed_hf_folder("llama_sharded",
                                   lambda f, b: (f / "model-00001-of-00002.safetensors").write_bytes(
                                       (f / "model-00001-of-00002.safetensors").read_bytes()[:1000]),
                                   "the first shard cut at 1000 bytes", "lora")],
    "hf-tokenizer": [fixed_hf_folder("qwen3", lambda f, b: added_tokens(f / "tokenizer.json", [(2 ** 25, "<|far|>")]),
                                     "tokenizer.json: an added token of id 2^25", "text"),
                     fixed_tokenizer_from_scratch("llama", lambda p: added_tokens(p, [(268 + i, f"t{i}")
                                                                                     for i in range(20000)]),
                                                  "20000 added tokens sharing a first byte"),
                     fixed_hf_folder("qwen2", lambda f, b: set_json_field(f / "tokenizer_config.json", "chat_template",
                                                                       "null"), "no chat template", "chat"),
                     fixed_hf_folder("llama", lambda f, b: set_json_field(f / "tokenizer_config.json", "bos_token", "null"),
                                     "bos_token null with add_bos_token true", "text"),
                     fixed_hf_folder("qwen3", lambda f, b: (f / "tokenizer.json").write_text(
                         json.dumps(json.loads((f / "tokenizer.json").read_text()), separators=(",", ":"))),
                         "tokenizer.json on one line (the same tokenizer)", "eval")],
    "chat-messages": [fixed_chat_messages("qwen3", CHAT_MESSAGES[:-1], "ending with the assistant's turn"),
                      fixed_chat_messages("qwen2", [{"role": "user", "content": "the fox " * 500}],
                                          "a user turn of 4000 characters (context 256)"),
                      fixed_chat_messages("llama", {"messages": []}, "{\"messages\": []}"),
                      fixed_chat_messages("qwen3", b"[{\"role\": \"user\", \"content\": \"\xff\"}]",
                                          "content with invalid UTF-8"),
                      fixed_chat_messages("char_run", CHAT_MESSAGES, "on a char run (tapegrad's template)")],
    "chat-stdin": [fixed_chat_stdin("qwen3", b"hello\nthe fox\nsaw the owl\n", "three lines", temperature="1"),
                   fixed_chat_stdin("qwen3", b"x" * 2000 + b"\nthe fox\n", "a line longer than the context, then one"),
                   fixed_chat_stdin("llama", b"the \xff fox\n\x00\x01\x02\nthe owl\n", "invalid UTF-8 and binary lines"),
                   fixed_chat_stdin("qwen2", b"the fox\n/reset\nthe owl", "/reset, and no newline at the end"),
                   fixed_chat_stdin("qwen3_chat_run", b"", "no input at all"),
                   fixed_chat_stdin("qwen3", b"y" * (1 << 20) + b"\n/quit\n", "a 1 MB line, then /quit")],
    "chat-jsonl": [fixed_chat_jsonl(many_turns(40000), "a conversation of 40000 turns first", "eval"),
                   fixed_chat_jsonl(lambda t: t.replace("\n", "\r\n"), "CRLF line ends", "train"),
                   fixed_chat_jsonl(lambda t: "\n" + t, "a blank first line", "train"),
                   fixed_chat_jsonl(lambda t: "", "empty", "eval"),
                   fixed_chat_jsonl(lambda t: t.replace('{"role": "assistant", "content": "foxes"}', '{"role": "user", '
                                                        '"content": "foxes"}'), "a conversation without an answer",
                                    "train")],
    "flags": [fixed_flags("llama", ["--lora-rank", "1000000"]),
              fixed_flags(None, ["--arch", "mistral"], adapters=False),
              fixed_flags(None, ["--arch", "qwen3", "--kv-heads", "3"], adapters=False),
              fixed_flags("qwen3", ["--lora-rank", "2", "--lora-alpha", "nan"]),
              fixed_flags("qwen2", ["--lora-rank", "2", "--lora-targets", "attn,,mlp"]),
              fixed_flags("qwen3", ["--arch", "gpt2"], adapters=False)],
    "merge-lora": [fixed_merge("llama_lora_run", "another model:qwen2_sharded"), fixed_merge("qwen3_chat_run", "fifo"),
                   fixed_merge("llama_lora_run", "the base"), fixed_merge("qwen3_chat_run", "a link to the base"),
                   fixed_merge("llama_lora_run", "folder with a file"), fixed_merge("lora_run", "another model:qwen3")],
    "hf-run-config": [fixed_run_config("qwen3_run", "rope_theta", "1e-300", "generate"),
                      fixed_run_config("llama_lora_run", "num_hidden_layers", "1000000000", "generate"),
                      fixed_run_config("qwen2_run", "tapegrad.train.context", "100000", "resume"),
                      fixed_run_config("qwen3_run", "vocab_size", "16", "eval"),
                      fixed_run_config("llama_lora_run", "tapegrad.train.lora-rank", "1000000", "resume"),
                      fixed_run_config("qwen3_run", "model_type", "\"gpt2\"", "eval"),
                      fixed_run_config("qwen3_chat_run", "tapegrad.train.data-format", "\"text\"", "eval"),
                      fixed_run_config("qwen2_run", "tapegrad.train.arch", "\"llama\"", "resume")],
    "tasks": [fixed_task("mmlu", lambda t: t.replace("\n", ",extra\n", 1), "a first row of 7 columns"),
              fixed_task("hellaswag", lambda t: t.replace('"label": ', '"label": 9, "was": ', 1), "a label of 9"),
              fixed_task("arc", lambda t: t.replace("\n", "\n" + open(EXAMPLE_DATA / "hellaswag_sample.jsonl").readline(), 1),
                         "a hellaswag line among ARC's")],
})

GENERATORS.update({"hf-config": gen_hf_config, "hf-weights": gen_hf_weights, "hf-tokenizer": gen_hf_tokenizer,
                   "chat-messages": gen_chat_messages, "chat-stdin": gen_chat_stdin, "chat-jsonl": gen_chat_jsonl,
                   "flags": gen_flags, "merge-lora": gen_merge_lora, "hf-run-config": gen_hf_run_config,
                   "tasks": gen_tasks})


# ---------------------------------------------------------------------------------------------
# Running a mutant.

class FifoDrain:
    """Reads a FIFO while the program runs, so that a program writing into it is not blocked."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self):
        while not self.stop.is_set():
            try:
                if not os.read(self.fd, 65536):
                    time.sleep(0.01)
            except BlockingIOError:
                time.sleep(0.01)

    def close(self):
        self.stop.set()
        self.thread.join()
        os.close(self.fd)


def file_kind(path):
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    return "fifo" if stat.S_ISFIFO(mode) else "dir" if stat.S_ISDIR(mode) else "link" if stat.S_ISLNK(mode) else "file"


def chat_lines_to_read(data):
    """How many times generate --chat must prompt for data: once a line, up to and with a "/quit" line;
    without one, once more for the end of input."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    for i, line in enumerate(lines):
        if line == b"/quit":
            return i + 1
    return len(lines) + 1


def chat_session(stderr):
    """(prompts, the rest): generate --chat writes "> " to standard error before it reads a line, a banner
    line when the session starts and a line on /reset; the rest is what a run's error is judged on."""
    prompts, rest = 0, []
    for line in stderr.split("\n"):
        while line.startswith("> "):
            prompts += 1
            line = line[2:]
        if line and not line.startswith(("generate: chatting with ", "generate: note: ")) and \
                line != "(a new conversation)":
            rest.append(line)
    return prompts, "\n".join(rest)


def chat_session_findings(mutant, run):
    """A session that started must read its input to the end (or to /quit) and exit 0: a bad turn is
    reported and the session goes on; a session that ends early loses the user's later turns."""
    prompts, run.stderr = chat_session(run.stderr)
    wanted = chat_lines_to_read(mutant.stdin)
    if prompts == 0 or prompts >= wanted or run.timed_out:
        return []
    how = "exited 0" if run.rc == 0 else f"ended (exit {run.rc}: {last_line(run.stderr)})"
    return [f"the chat session {how} after reading {prompts - 1} of its {wanted - 1} lines: the later turns were lost"]


def run_mutant(base, mutant):
    """Runs it: (class, why, run)."""
    before = snapshot(mutant.watch) if mutant.watch else {}
    user_before = {p: (v if v is not None else p.read_bytes()) for p, v in mutant.user_files.items()}
    drains = [FifoDrain(p) for p in mutant.fifos]
    stdin = None
    if mutant.stdin is not None:
        stdin = mutant.folder / "stdin.txt"
        stdin.write_bytes(mutant.stdin)
    try:
        run = base.runner.run(mutant.command, mutant.folder, mutant.folder / "stdout.txt", mutant.folder / "stderr.txt",
                              stdin)
    finally:
        for d in drains:
            d.close()
    wrong = []
    if mutant.stdin is not None:
        wrong = chat_session_findings(mutant, run)
    elif "--chat-messages" in mutant.command:  # its notes and banner are not part of an error
        run.stderr = chat_session(run.stderr)[1]
    if run.rc == 0 and not run.timed_out:
        for check in mutant.checks:
            try:
                wrong += check(run)
            except Exception as error:  # a check reading a file the program wrote badly
                wrong.append(f"an output could not be read: {type(error).__name__}: {error}")
    if mutant.watch and (run.rc != 0 or mutant.read_only):
        lost = changes(before, snapshot(mutant.watch))
        if lost:
            wrong.append(("a failed run" if run.rc != 0 else "a run that only reads") + " changed its input: " +
                         ", ".join(lost[:4]))
    for path in mutant.fifos:
        if file_kind(path) != "fifo":
            wrong.append(f"the FIFO {path.name} was replaced (now: {file_kind(path)})")
    for path, content in user_before.items():
        if mutant.user_files[path] is None and run.rc == 0:
            continue
        if file_kind(path) != "file" or path.read_bytes() != content:
            wrong.append(f"the user's {path.name} was changed or removed")
    cls, why = classify(run, program_name(mutant.command), wrong)
    return cls, why, run


def make_mutant(base, surface, index, seed, root):
    mutant = Mutant(surface, index, root / f"{surface}-{index}")
    if mutant.folder.exists():
        shutil.rmtree(mutant.folder)
    mutant.folder.mkdir(parents=True)
    rng = random.Random(f"{seed}:{surface}:{index}")
    fixed = FIXED[surface]
    (fixed[index] if index < len(fixed) else GENERATORS[surface])(base, mutant, rng)
    if index < len(fixed):
        mutant.description = "[fixed] " + mutant.description
    return mutant


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build_dir")
    parser.add_argument("--seed", default="1", help="the mutants' seed (default 1); 'random' picks one")
    parser.add_argument("--mutants", type=int, default=40, help="mutants per surface (default 40)")
    parser.add_argument("--surface", action="append", choices=SURFACES, help="only these surfaces")
    parser.add_argument("--mutant", type=int, action="append", help="only these mutants (by index)")
    parser.add_argument("--keep", help="the folder for the mutants (default: a new temporary folder)")
    parser.add_argument("--timeout-s", type=float, default=None, help="per run (default 20, 60 under ASan)")
    parser.add_argument("--mem-cap-mb", type=int, default=3072, help="RLIMIT_AS of each run, normal builds (default 3072)")
    parser.add_argument("--budget-s", type=float, default=0, help="start no mutant after this many seconds (0: none)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="runs at once (default 2)")
    parser.add_argument("--verbose", action="store_true", help="print every mutant's class")
    args = parser.parse_args()

    seed = str(random.randrange(10 ** 9)) if args.seed == "random" else args.seed
    runner = Runner(args.build_dir, 0, args.mem_cap_mb)
    runner.timeout_s = args.timeout_s or (60 if runner.sanitized else 20)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tg-fuzz-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(f"fuzz_programs: seed {seed}, {args.mutants} mutants per surface, build {args.build_dir}"
          f"{' (sanitized: ASAN_OPTIONS caps memory)' if runner.sanitized else f' (RLIMIT_AS {args.mem_cap_mb} MiB)'}, "
          f"timeout {runner.timeout_s:.0f} s a run, folders in {root}", flush=True)
    base_dir = root / "base"
    if base_dir.exists():
        shutil.rmtree(base_dir)
    base_dir.mkdir()
    base = Base(runner, base_dir)
    print(f"fuzz_programs: base folders made in {time.monotonic() - started:.1f} s", flush=True)

    surfaces = args.surface or SURFACES
    indices = args.mutant or range(args.mutants)
    work = [(s, i) for i in indices for s in surfaces]  # interleaved: a budget cut spares no surface
    table = {s: {c: 0 for c in CLASSES} for s in surfaces}
    failures, skipped = [], 0
    lock = threading.Lock()

    def one(item):
        nonlocal skipped
        surface, index = item
        if args.budget_s and time.monotonic() - started > args.budget_s:
            with lock:
                skipped += 1
            return
        try:
            mutant = make_mutant(base, surface, index, seed, root)
        except Exception as error:
            sys.exit(f"fuzz_programs: making mutant {surface} {index} failed: {type(error).__name__}: {error}")
        cls, why, run = run_mutant(base, mutant)
        with lock:
            table[surface][cls] += 1
            if args.verbose:
                print(f"  {surface} {index}: {cls}: {mutant.description} ({why[:200]})", flush=True)
            if cls in FAILING:
                failures.append((surface, index, cls, mutant, why, run))
        if cls not in FAILING and not args.keep:
            shutil.rmtree(mutant.folder, ignore_errors=True)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, work))

    print_table(table)
    for surface, index, cls, mutant, why, run in sorted(failures, key=lambda f: (CLASSES.index(f[2]), f[0], f[1])):
        print(f"FAIL {cls}: seed {seed} --surface {surface} --mutant {index}: {mutant.description}\n"
              f"     {why[:400]}\n     command: {' '.join(repr(a) if ' ' in a or not a else a for a in run.command)[:400]}"
              f"{' < stdin.txt' if mutant.stdin is not None else ''}\n"
              f"     folder: {mutant.folder}")
    print(f"fuzz_programs: {sum(sum(r.values()) for r in table.values())} runs in {time.monotonic() - started:.0f} s, "
          f"{len(failures)} failing" + (f", {skipped} not run (--budget-s {args.budget_s:.0f} spent)" if skipped else ""))
    if failures:
        print(f"fuzz_programs: the failing mutants' folders are kept in {root}; rerun one with "
              f"python3 {sys.argv[0]} {args.build_dir} --seed {seed} --surface S --mutant K --keep DIR")
        return 1
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def print_table(table):
    widths = [max(len(s) for s in SURFACES)] + [max(8, len(c)) for c in ["mutants"] + CLASSES]
    header = ["surface", "mutants"] + CLASSES
    print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths))))
    totals = {c: 0 for c in CLASSES}
    for surface, row in table.items():
        cells = [surface, str(sum(row.values()))] + [str(row[c]) for c in CLASSES]
        for c in CLASSES:
            totals[c] += row[c]
        print("  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(cells, widths))))
    cells = ["all", str(sum(totals.values()))] + [str(totals[c]) for c in CLASSES]
    print("  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(cells, widths))))


if __name__ == "__main__":
    sys.exit(main())
