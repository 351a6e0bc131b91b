#!/usr/bin/env bash
# Installs what tapegrad needs to build and test on Debian 12 (run as root).
# Skips apt entirely when everything is already there, so it also works offline.
set -euo pipefail
pkgs=(cmake make g++ libblis-dev libgtest-dev)
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
