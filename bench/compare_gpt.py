# compare_gpt.py — tapegrad against PyTorch on the GPT benchmark, run interleaved, as a markdown table.
#
#     python3 bench/compare_gpt.py --configs tiny,small --threads 1,2 --pairs 3 --steps 20 --out runs.jsonl
#     python3 bench/compare_gpt.py --configs small --threads 1,2 --pairs 3 --precisions fp32,bf16
#     python3 bench/compare_gpt.py --generate --configs medium --threads 1,2 --pairs 2 --new-tokens 500
#
# For each config and thread count it runs bench_gpt (A) and bench_gpt_torch.py (B) in turn,
# A B A B ..., --pairs times, so slow drifts of the machine (other work, clock speed) hit both
# alike. Before each run it waits (up to --idle-wait seconds) for the machine to be idle: the
# CPU time used by anything, sampled from /proc/stat over one second, below --idle-busy of all
# cores. A run that started on a busy machine is counted in the table's last column (and said on
# stderr); its numbers are kept.
#
# The table, per config and thread count: the medians of tokens/s and of peak RSS of each side,
# the median of the per-pair ratios tapegrad/PyTorch of tokens/s with their min-max, and the
# largest difference of the step-1 losses (the same seed gives the same model and batches on
# both sides, so it is ~1e-7 in float32). --out also writes every run's JSON line (plus pair and
# idle facts).
#
# --precisions fp32,bf16 runs each side in each precision (--precision P to bench_gpt and
# bench_gpt_torch.py; bf16: tapegrad's bfloat16 products, PyTorch's bfloat16 autocast), the four
# in turn: tapegrad fp32, PyTorch fp32, tapegrad bf16, PyTorch bf16, A B C D A B C D ... The
# table then has a row per precision (the step-1 losses of bf16 differ by more: autocast rounds
# differently), and a last column, on the bf16 rows, with the median of the per-round ratios
# tapegrad bf16 / tapegrad fp32 of tokens/s (min-max). With the default, fp32 alone, the commands
# are today's (no --precision given: builds from before the flag run too).
#
# --generate compares generation instead (bench_generate, bench_generate_torch.py): three sides
# in turn, tapegrad with the KV cache, tapegrad recomputing the window, PyTorch recomputing the
# window (A B C A B C ...). Its table: the medians of tokens/s, the ratios to PyTorch per round
# (min-max), and how many of the new token ids equal PyTorch's from the start (greedy decoding of
# the same model: recompute's should all match; the cache's window restarts once full (see
# bench/bench_generate.cpp), so its ids match up to that point, the first context - prompt + 1).
#
# Python's standard library only. The PyTorch side runs with --python (Debian's torch 1.13), with
# examples/pytorch on its PYTHONPATH (the twins' package, tapegrad_twin): no PYTHONPATH to give here.
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRECISIONS = ("fp32", "bf16")


def flags(argv=None):
    p = argparse.ArgumentParser(description="tapegrad vs PyTorch on the GPT benchmark, interleaved.")
    p.add_argument("--configs", default="tiny,small", help="comma-separated: tiny, small, medium")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--pairs", type=int, default=3, help="runs of each side per config and thread count")
    p.add_argument("--steps", type=int, default=20, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per run before them")
    p.add_argument("--precisions", default="fp32",
                   help="comma-separated: fp32, bf16; every side runs in each (default: %(default)s)")
    p.add_argument("--generate", action="store_true", help="compare generation (bench_generate) instead of training")
    p.add_argument("--new-tokens", type=int, default=500, help="--generate: tokens to write per run")
    p.add_argument("--prompt-tokens", type=int, default=16, help="--generate: prompt length")
    p.add_argument("--out", help="write every run's JSON line to this file")
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="tapegrad's build folder (default: %(default)s)")
    p.add_argument("--python", default="/usr/bin/python3", help="the Python with torch (default: %(default)s)")
    p.add_argument("--idle-wait", type=float, default=20.0, help="seconds to wait for an idle machine before a run")
    p.add_argument("--idle-busy", type=float, default=0.10,
                   help="idle means less than this fraction of all cores busy (default: %(default)s)")
    o = p.parse_args(argv)
    o.configs = [c for c in o.configs.split(",") if c]
    try:
        o.threads = [int(t) for t in o.threads.split(",") if t]
    except ValueError:
        p.error(f"--threads: expected comma-separated integers, got '{o.threads}'")
    bad = [c for c in o.configs if c not in ("tiny", "small", "medium")]
    if bad:
        p.error(f"--configs: unknown config {bad[0]} (expected tiny, small or medium)")
    o.precisions = list(dict.fromkeys(x for x in o.precisions.split(",") if x))  # in order, once each
    bad = [x for x in o.precisions if x not in PRECISIONS]
    if bad or not o.precisions:
        p.error(f"--precisions: unknown precision {bad[0] if bad else '(none)'} (expected fp32, bf16 or fp32,bf16)")
    if o.generate and o.precisions != ["fp32"]:
        p.error("--precisions: compares training only; --generate runs in float32")
    if o.pairs < 1 or o.steps < 1 or o.warmup < 0 or any(t < 1 for t in o.threads):
        p.error("--pairs, --steps and every --threads must be >= 1, --warmup >= 0")
    if o.new_tokens < 1 or o.prompt_tokens < 1:
        p.error("--new-tokens and --prompt-tokens must be >= 1")
    return o


def cpu_times():
    """(busy, total) jiffies of all CPUs from the first line of /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total - idle, total


def busy_fraction(seconds=1.0):
    """The fraction of all cores' time spent busy over the next `seconds`."""
    b0, t0 = cpu_times()
    time.sleep(seconds)
    b1, t1 = cpu_times()
    return (b1 - b0) / max(1, t1 - t0)


def wait_for_idle(o):
    """Samples until the machine is idle or --idle-wait has passed; returns (idle, last busy fraction)."""
    deadline = time.monotonic() + o.idle_wait
    while True:
        busy = busy_fraction()
        if busy < o.idle_busy:
            return True, busy
        if time.monotonic() >= deadline:
            return False, busy


def run_one(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"compare_gpt.py: {' '.join(command)} failed (exit {result.returncode}):\n{result.stderr}")
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        sys.exit(f"compare_gpt.py: {' '.join(command)} printed no JSON line:\n{result.stdout}")
    return json.loads(lines[-1])


def pytorch_environment(o):
    """The environment of PyTorch's runs. examples/pytorch goes first on PYTHONPATH: the twins'
    package (tapegrad_twin) that bench_gpt_torch.py and bench_generate_torch.py import is there.
    PyTorch runs on the same BLIS library, but BLIS picks its own kernels there: tapegrad names
    them itself where BLIS's pick is narrower than the CPU (autograd/kernels/blis_kernels.cpp). So
    PyTorch's runs get BLIS_ARCH_TYPE set to the number of the kernels tapegrad runs (a one-step
    bench_gpt run says it), unless the user set BLIS_ARCH_TYPE for both."""
    pythonpath = os.path.join(REPO, "examples", "pytorch")
    if os.environ.get("PYTHONPATH"):
        pythonpath += os.pathsep + os.environ["PYTHONPATH"]
    env = dict(os.environ, PYTHONPATH=pythonpath)
    if os.environ.get("BLIS_ARCH_TYPE"):
        return env
    probe = run_one([os.path.join(o.build, "bench", "bench_gpt"), "--config", "tiny", "--threads", "1", "--steps",
                     "1", "--warmup", "0"])
    return dict(env, BLIS_ARCH_TYPE=str(probe["blis_arch_type"]))


def commands(o, config, threads):
    """The sides to run in turn, by name."""
    if o.generate:
        common = ["--config", config, "--threads", str(threads), "--new-tokens", str(o.new_tokens),
                  "--prompt-tokens", str(o.prompt_tokens)]
        program = os.path.join(o.build, "bench", "bench_generate")
        return {
            "tapegrad cache": [program, "--mode", "cache"] + common,
            "tapegrad recompute": [program, "--mode", "recompute"] + common,
            "pytorch": [o.python, os.path.join(REPO, "bench", "bench_generate_torch.py"), "--build", o.build] + common,
        }
    common = ["--config", config, "--threads", str(threads), "--steps", str(o.steps), "--warmup", str(o.warmup)]
    tapegrad = [os.path.join(o.build, "bench", "bench_gpt")] + common
    pytorch = [o.python, os.path.join(REPO, "bench", "bench_gpt_torch.py"), "--build", o.build] + common
    if o.precisions == ["fp32"]:  # the default: today's commands
        return {"tapegrad": tapegrad, "pytorch": pytorch}
    out = {}
    for precision in o.precisions:  # tapegrad fp32, pytorch fp32, tapegrad bf16, pytorch bf16
        out[side_name(o, "tapegrad", precision)] = tapegrad + ["--precision", precision]
        out[side_name(o, "pytorch", precision)] = pytorch + ["--precision", precision]
    return out


def side_name(o, bench, precision):
    """A training side's name: "tapegrad" or "pytorch", and the precision unless fp32 alone ran."""
    return bench if o.precisions == ["fp32"] else f"{bench} {precision}"


def machine():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} cores"


def median_range(values):
    """The "median (min-max)" of ratios, for the table."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def table(o, runs):
    both = "fp32" in o.precisions and "bf16" in o.precisions
    rows = ["| config | threads | precision | tapegrad tokens/s | PyTorch tokens/s | tapegrad / PyTorch (min-max) "
            "| tapegrad RSS MB | PyTorch RSS MB | step-1 loss diff | runs on a busy machine |"
            + (" tapegrad bf16 / fp32 (min-max) |" if both else ""),
            "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if both else "")]
    for config in o.configs:
        for threads in o.threads:
            mine = [r for r in runs if r["config"] == config and r["threads"] == threads]

            def side(bench, precision):
                return [r for r in mine if r["side"] == side_name(o, bench, precision)]

            for precision in o.precisions:
                a, b = side("tapegrad", precision), side("pytorch", precision)
                ratios = [x["tokens_per_s"] / y["tokens_per_s"] for x, y in zip(a, b)]
                med = lambda rs, key: statistics.median(r[key] for r in rs)  # noqa: E731
                loss_diff = max(abs(x["first_loss"] - y["first_loss"]) for x, y in zip(a, b))
                busy = sum(1 for r in a + b if not r["idle"])
                row = (f"| {config} | {threads} | {precision} | {med(a, 'tokens_per_s'):.0f} "
                       f"| {med(b, 'tokens_per_s'):.0f} | {median_range(ratios)} "
                       f"| {med(a, 'peak_rss_mb'):.0f} | {med(b, 'peak_rss_mb'):.0f} | {loss_diff:.1e} "
                       f"| {busy} of {len(a + b)} |")
                if both:  # per round: tapegrad's bf16 run over its fp32 run of the same round
                    per_round = [x["tokens_per_s"] / y["tokens_per_s"]
                                 for x, y in zip(side("tapegrad", "bf16"), side("tapegrad", "fp32"))]
                    row += f" {median_range(per_round)} |" if precision == "bf16" else " |"
                rows.append(row)
    return "\n".join(rows)


def matching_prefix(a, b):
    """How many ids a and b share from the start."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def generate_table(o, runs):
    rows = ["| config | threads | cache tokens/s | recompute tokens/s | PyTorch tokens/s | cache / PyTorch (min-max) "
            "| recompute / PyTorch (min-max) | ids = PyTorch's: cache, recompute | RSS MB: cache, recompute, PyTorch "
            "| runs on a busy machine |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for config in o.configs:
        for threads in o.threads:
            mine = [r for r in runs if r["config"] == config and r["threads"] == threads]
            side = {name: [r for r in mine if r["side"] == name] for name in commands(o, config, threads)}
            torch_runs = side["pytorch"]
            med = lambda rs, key: statistics.median(r[key] for r in rs)

            def ratios(name):
                rs = [x["tokens_per_s"] / y["tokens_per_s"] for x, y in zip(side[name], torch_runs)]
                return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"

            def matched(name):
                n = min(matching_prefix(x["ids"], y["ids"]) for x, y in zip(side[name], torch_runs))
                return f"{n}/{len(torch_runs[0]['ids'])}"

            cache, recompute = side["tapegrad cache"], side["tapegrad recompute"]
            busy = sum(1 for r in mine if not r["idle"])
            rows.append(f"| {config} | {threads} | {med(cache, 'tokens_per_s'):.1f} "
                        f"| {med(recompute, 'tokens_per_s'):.1f} | {med(torch_runs, 'tokens_per_s'):.1f} "
                        f"| {ratios('tapegrad cache')} | {ratios('tapegrad recompute')} "
                        f"| {matched('tapegrad cache')}, {matched('tapegrad recompute')} "
                        f"| {med(cache, 'peak_rss_mb'):.0f}, {med(recompute, 'peak_rss_mb'):.0f}, "
                        f"{med(torch_runs, 'peak_rss_mb'):.0f} | {busy} of {len(mine)} |")
    return "\n".join(rows)


def main():
    o = flags()
    runs = []
    out = open(o.out, "w") if o.out else None
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    torch_env = pytorch_environment(o)
    for config in o.configs:
        for threads in o.threads:
            cmds = commands(o, config, threads)
            for pair in range(1, o.pairs + 1):
                for side in cmds:
                    idle, busy = wait_for_idle(o)
                    if not idle:
                        print(f"compare_gpt.py: {config}, {threads} threads, {side} run {pair}: the machine was "
                              f"not idle ({busy:.0%} of all cores busy after {o.idle_wait:.0f} s); running anyway",
                              file=sys.stderr)
                    r = run_one(cmds[side], torch_env if side.startswith("pytorch") else None)
                    r.update(side=side, pair=pair, idle=idle, busy_before=round(busy, 3))
                    runs.append(r)
                    print(f"  {config:6} {threads} threads {side:18} run {pair}: {r['tokens_per_s']:9.1f} tokens/s"
                          f"{'' if idle else '  (machine busy)'}", file=sys.stderr, flush=True)
                    if out:
                        out.write(json.dumps(r) + "\n")
                        out.flush()
    if out:
        out.close()
    blas = {r["bench"]: r["blas"] for r in runs}
    # bench_gpt and bench_generate say which of tapegrad's code ran: "fast", or "reference" under
    # TG_FAST_KERNELS=0 (older lines have no such field).
    kernels = sorted({r.get("kernels", "fast") for r in runs if r["bench"] == "tapegrad"})
    # and, with bf16, which bf16 gemm kernel ran: "avx512_bf16" or "fma"
    bf16_kernels = sorted({r.get("bf16_kernel", "?") for r in runs if r["bench"] == "tapegrad"
                           and r.get("precision") == "bf16"})
    if o.generate:
        print(f"Measured {started} on {machine()}; {o.pairs} interleaved rounds of {o.new_tokens} new tokens "
              f"after a prompt of {o.prompt_tokens}, greedy.")
    else:
        print(f"Measured {started} on {machine()}; {o.pairs} interleaved pairs of {o.warmup} + {o.steps} steps.")
    bf16 = f"; bf16 gemm: {', '.join(bf16_kernels)}" if bf16_kernels else ""
    print(f"tapegrad ({', '.join(kernels)} kernels{bf16}): {blas.get('tapegrad')}. "
          f"PyTorch {runs[-1].get('torch', '')}: {blas.get('pytorch')}.\n")
    print(generate_table(o, runs) if o.generate else table(o, runs))


if __name__ == "__main__":
    main()
