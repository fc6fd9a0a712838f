#!/usr/bin/env bash
# The whole test run from nothing: system packages, the locked Python environment,
# the JupyterLab extension (locked npm build, then its unit tests), the suite against
# real servers on every core (pytest-xdist), then the browser tests in their own
# invocation (pytest-jupyter's event loop and Playwright's sync API do not share a
# process).
#
# npm's download needs no Python, so it runs while the locked environment installs; the
# build itself comes before the suite (the packaging tests build a wheel that carries it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
npm_log="$(mktemp)"
(cd labextension && npm ci --no-audit --no-fund --loglevel=error) >"$npm_log" 2>&1 &
npm_ci=$!
bash scripts/install-locked.sh
if ! wait "$npm_ci"; then
  echo "npm ci failed in labextension/:" >&2
  cat "$npm_log" >&2
  exit 1
fi
bash scripts/build-labextension.sh
(cd labextension && npm test --silent)
# one pytest worker per core; a module's tests stay on one worker, so its module-scoped
# fixtures (homes with captured incidents, finished audits) are made once
python -m pytest -n auto --dist loadscope
python -m pytest tests/browser -o addopts='--strict-markers -ra'
