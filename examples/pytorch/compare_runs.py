# compare_runs.py — do two run folders (tapegrad's or PyTorch's) have the same per-step losses?
#
#     python3 examples/pytorch/compare_runs.py tg_run torch_run --rtol 1e-5 [--from-step 1501]
#
# Reads each folder's loss.csv (tapegrad_twin/run_folder.py), pairs the rows of the steps both have (from
# --from-step on), and prints how many there are and the worst relative difference of the batch
# loss (and of the val loss where both evaluated). Exits with 1 when a difference passes --rtol,
# when no step is shared, or when a folder has no loss.csv. Needs no torch.
import argparse
import os
import sys


def losses(folder, first_step):
    path = os.path.join(folder, "loss.csv")
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        sys.exit(f"compare_runs.py: {path}: {e.strerror}")
    if not lines or not lines[0].startswith("step,train_loss,val_loss"):
        sys.exit(f"compare_runs.py: {path}: not a train_gpt loss.csv")
    out = {}
    for line in lines[1:]:
        cells = line.split(",")
        if int(cells[0]) >= first_step:
            out[int(cells[0])] = (float(cells[1]), float(cells[2]) if cells[2] else None)
    return out


def relative(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def main():
    p = argparse.ArgumentParser(description="Compare the per-step losses of two train_gpt run folders.")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=1e-5, help="the largest relative difference allowed")
    p.add_argument("--from-step", type=int, default=1, help="compare the steps from this one on")
    p.add_argument("--steps", type=int, default=0, help="expect exactly this many shared steps (0: any)")
    args = p.parse_args()
    a, b = losses(args.a, args.from_step), losses(args.b, args.from_step)
    shared = sorted(set(a) & set(b))
    if not shared:
        sys.exit(f"compare_runs.py: {args.a} and {args.b} share no step from {args.from_step} on")
    if args.steps and len(shared) != args.steps:
        sys.exit(f"compare_runs.py: {len(shared)} shared steps, expected {args.steps}")
    worst_step = max(shared, key=lambda s: relative(a[s][0], b[s][0]))
    worst = relative(a[worst_step][0], b[worst_step][0])
    vals = [relative(a[s][1], b[s][1]) for s in shared if a[s][1] is not None and b[s][1] is not None]
    print(f"{args.a} vs {args.b}: steps {shared[0]}-{shared[-1]} ({len(shared)}), worst relative difference of the "
          f"batch loss {worst:.2e} (step {worst_step}: {a[worst_step][0]:.9g} vs {b[worst_step][0]:.9g})"
          + (f", of the val loss {max(vals):.2e} ({len(vals)} evaluations)" if vals else ""))
    if worst > args.rtol or (vals and max(vals) > args.rtol):
        sys.exit(f"compare_runs.py: the runs differ by more than --rtol {args.rtol:g}")


if __name__ == "__main__":
    main()
