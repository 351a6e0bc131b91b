# train_gpt.py — tapegrad's examples/train_gpt in PyTorch, step for step: the same seed gives the
# same losses. The loop is tapegrad_twin/training.py (the tokenizer, split, batches, schedule, AdamW
# groups and clipping, and --precision bf16's autocast). It takes every flag train_gpt saves in a
# run's config.json, writes the same run folder with --out (tapegrad_twin/run_folder.py) and
# continues one with --resume (tapegrad_twin/resume.py, as tapegrad_run.py train --steps), so a run
# moves between the two and goes on exactly. A run from GPT-2 (train_gpt --init-from) is continued
# with --resume only (its config carries --init-from and --tokenizer PATH, GPT-2's files); starting
# one is train_gpt's.
#
#     /usr/bin/python3 examples/pytorch/train_gpt.py --data input.txt --steps 2000 --out torch_run
#     ./build/examples/train_gpt --resume torch_run --steps 3000      # and back in tapegrad
#
# Data-parallel: examples/pytorch/tapegrad_run.py train --nproc K, or torchrun.
import sys

import torch

from tapegrad_twin import run_folder
from tapegrad_twin.resume import continue_run
from tapegrad_twin.training import Run, check_options, fresh_config, options, train_loop


def main():
    o = options()
    try:
        check_options(o)
        if not o.data and not o.resume:
            raise ValueError("--data FILE is needed (the built-in corpus: ./build/examples/train_gpt --write-corpus FILE)")
    except ValueError as e:
        sys.exit(f"train_gpt.py: {e}")
    if o.threads:
        torch.set_num_threads(o.threads)
    if o.resume:  # as tapegrad_run.py train, to --steps in all
        try:
            if not o.out:
                raise run_folder.RunError("--resume needs --out NEW_FOLDER (the run resumed stays as it was)")
            continue_run(o.resume, o.data, o.steps, o.out, o.threads, total=True,
                         precision=o.precision if o.precision_given else "")
        except (run_folder.RunError, ValueError) as e:
            sys.exit(f"train_gpt.py: {e}")
        return
    with open(o.data, "rb") as f:
        run = Run(o, f.read())
    train_loop(run, o, o.out, fresh_config(o, run))


if __name__ == "__main__":
    main()
