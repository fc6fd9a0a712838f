#!/usr/bin/env bash
# The whole test run from nothing: system packages, the locked Python environment,
# the JupyterLab extension's unit tests (locked npm install), the suite against real
# servers on every core (pytest-xdist), then the browser tests in their own invocation
# (pytest-jupyter's event loop and Playwright's sync API do not share a process).
#
# npm's download needs no Python, so it runs while the locked environment installs.
# llama.cpp's server (the hosted-model tests' real model) compiles at low priority while
# everything else runs; its tests run last, in their own invocation.
# The built extension is committed and is not rebuilt here: a build in place would
# overwrite the committed files and hide a stale commit. The suite rebuilds it in a
# folder of its own and compares (tests/project/test_labextension_assets.py), installs a fresh
# clone without Node.js (tests/project/test_clone_install.py), and the editable install
# (scripts/install-locked.sh) puts the committed files where the browser tests' JupyterLab
# loads them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
inference_log="$(mktemp)"
nice -n 10 bash scripts/inference-server.sh >"$inference_log" 2>&1 &
inference=$!
npm_log="$(mktemp)"
(cd labextension && npm ci --no-audit --no-fund --loglevel=error) >"$npm_log" 2>&1 &
npm_ci=$!
bash scripts/install-locked.sh
if ! wait "$npm_ci"; then
  echo "npm ci failed in labextension/:" >&2
  cat "$npm_log" >&2
  exit 1
fi
(cd labextension && npm test --silent)
# one pytest worker per core; a module's tests stay on one worker, so its module-scoped
# fixtures (homes with captured incidents, finished audits) are made once
python -m pytest -n auto --dist loadscope
python -m pytest tests/browser -o addopts='--strict-markers -ra'
if ! wait "$inference"; then
  echo "building the inference server failed:" >&2
  cat "$inference_log" >&2
  exit 1
fi
REPLAY_ENCLAVE_REQUIRE_INFERENCE=1 python -m pytest tests/inference -o addopts='--strict-markers -ra'
