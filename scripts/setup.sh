#!/usr/bin/env bash
# Everything the build and tests need on a fresh Debian machine, idempotent: Debian packages
# (ccache, GoogleTest), a virtual environment with torch==2.13.0 (the CPU build) and the
# Python build/test tools. Called by the Makefile; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(ccache libgtest-dev)
missing=()
for package in "${apt_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$python" -m venv .venv
fi
# torch is pinned exactly; installing it first keeps the others from pulling a different build.
.venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q numpy tqdm pytest "scikit-build-core>=0.10" pybind11 ninja cmake
# Conformance sweeps: PyTorch's OpInfo database needs expecttest; the Hugging Face sweep builds
# models from the pinned transformers (it does not depend on torch, so torch stays as pinned).
.venv/bin/pip install -q expecttest==0.3.0 transformers==5.24.0
# The CPU PJRT plugin the PJRT layer's GoogleTests load (csrc/executors/pjrt/); no dependencies,
# pinned by hash. A no-op once installed.
.venv/bin/pip install -q --no-deps --require-hashes -r scripts/pjrt_plugins.txt
