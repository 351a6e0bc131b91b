#!/usr/bin/env bash
# Makes tests/reference/runs/: run folders and loss logs written by train_gpt, kept so that a later
# tapegrad must read them and train on from them bit for bit (tests/examples/test_run_fixtures.cpp).
#
#   bash tests/reference/make_run_fixtures.sh [BUILD_DIR]      (default: build)
#
# They were made once, by the tapegrad that wrote the run-folder format, and are committed; run it
# again only on purpose, when the numbers of training change, and say why in the commit.
#
# Bit for bit on any CPU: every run here uses the portable kernels (TG_MAX_ISA=portable) and
# BLIS's generic ones, whose sums do not depend on the CPU's vector width.
#   default_loss.csv          train_gpt with no flags: its loss.csv
#   char_run/, bpe_run/       small runs stopped at step 30 (every file of the run folder)
#   *_resumed_loss.csv,       those runs resumed to step 50: the loss.csv and model.safetensors
#   *_resumed_model.safetensors   the test must get again
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
train_gpt="$PWD/$build/examples/train_gpt"
out=tests/reference/runs
# BLIS numbers its kernels its own way in each version: ask train_gpt's refusal of 999 for generic's
generic=$(BLIS_ARCH_TYPE=999 "$train_gpt" 2>&1 | grep -o '[0-9]* (generic)' | cut -d' ' -f1 || true)
[[ -n $generic ]] || { echo "make_run_fixtures: this BLIS has no generic kernels" >&2; exit 1; }
export TG_MAX_ISA=portable BLIS_ARCH_TYPE=$generic
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out" && mkdir -p "$out"

(cd "$work" && "$train_gpt" --out default >/dev/null)
cp "$work/default/loss.csv" "$out/default_loss.csv"

small=(--steps 30 --context 16 --emb-dim 16 --heads 2 --layers 2 --batch 4 --eval-every 10 --eval-batches 2
       --warmup 4 --sample-tokens 20 --dropout 0.1)
(cd "$work" && "$train_gpt" "${small[@]}" --out char_run >/dev/null)
(cd "$work" && "$train_gpt" "${small[@]}" --tokenizer bpe --vocab-size 300 --tie-weights --out bpe_run >/dev/null)
for run in char_run bpe_run; do
  cp -r "$work/$run" "$out/$run"
  (cd "$work" && "$train_gpt" --resume "$run" --steps 50 >/dev/null)
  cp "$work/$run/loss.csv" "$out/${run}_resumed_loss.csv"
  cp "$work/$run/model.safetensors" "$out/${run}_resumed_model.safetensors"
done
ls -l "$out"
