#!/usr/bin/env bash
# Install the test environment exactly as requirements/test.lock pins it (hashes
# required), then this project itself without resolving anything further, into the
# Python on PATH (a virtual environment when one is active).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --root-user-action=ignore "uv==$(cat requirements/uv.version)"
py="$(python -c 'import sys; print(sys.executable)')"
python -m uv pip install -q --python "$py" --compile-bytecode --require-hashes -r requirements/test.lock
python -m uv pip install -q --python "$py" --no-deps --no-build-isolation -e .
# pyenv finds new console scripts only after a rehash
if command -v pyenv >/dev/null; then pyenv rehash; fi
# Byte-compile up front: where PYTHONDONTWRITEBYTECODE is set, nothing else will, and
# every process would pay for compiling its imports again.
python -m compileall -q -j 0 enclave ledger jupyter_ext >/dev/null
