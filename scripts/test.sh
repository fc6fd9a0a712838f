#!/usr/bin/env bash
# The whole test run from nothing: system packages, the locked Python environment,
# the JupyterLab extension (locked npm build, then its unit tests), the suite against
# real servers, then the browser tests in their own invocation (pytest-jupyter's event
# loop and Playwright's sync API do not share a process).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
bash scripts/install-locked.sh
bash scripts/build-labextension.sh
(cd labextension && npm test --silent)
python -m pytest
python -m pytest tests/browser -o addopts='--strict-markers -ra'
