#!/usr/bin/env bash
# The whole test run from nothing: system packages, the locked Python environment,
# the suite against real servers, the JupyterLab extension (locked npm build, then its
# unit tests), then the browser tests in their own invocation (pytest-jupyter's event
# loop and Playwright's sync API do not share a process).
#
# Only the browser tests need the built extension, so it builds while the Python suite
# runs (the suite spends much of its time waiting on subprocesses and servers); its
# output is shown only if it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
bash scripts/install-locked.sh
front_log="$(mktemp)"
(bash scripts/build-labextension.sh && cd labextension && npm test --silent) >"$front_log" 2>&1 &
front=$!
suite=0
python -m pytest || suite=$?
if ! wait "$front"; then
  echo "the JupyterLab extension did not build or its unit tests failed:" >&2
  cat "$front_log" >&2
  exit 1
fi
tail -n 5 "$front_log"
[ "$suite" -eq 0 ] || exit "$suite"
python -m pytest tests/browser -o addopts='--strict-markers -ra'
