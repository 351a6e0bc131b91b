#!/usr/bin/env bash
# Installs what tapegrad needs to build and test on Debian 12 or 13, or Ubuntu 24.04 (run as root).
# Skips apt entirely when everything is already there, so it also works offline.
#   bash .ci/install-deps.sh       the compiler, CMake, BLIS and GoogleTest (the README's commands)
#   bash .ci/install-deps.sh ci    also what CI's other builds need (Debian 12, x86-64): Clang 16 with
#                                  libc++, the arm64 cross compiler with arm64 BLIS and GoogleTest,
#                                  qemu-aarch64 to run them, and debootstrap for a fresh Debian 13
set -euo pipefail
pkgs=(cmake make g++ libblis-dev libgtest-dev)
if [[ ${1:-} == ci ]]; then
  pkgs+=(clang-16 libc++-16-dev libc++abi-16-dev g++-aarch64-linux-gnu qemu-user binutils
         libblis-dev:arm64 libgtest-dev:arm64 libstdc++6:arm64 debootstrap)
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
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
