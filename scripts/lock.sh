#!/usr/bin/env bash
# Refresh requirements/test.lock from pyproject.toml: every extra, exact versions with
# hashes, for the platform CI runs on. Commit the result with the change that needed it.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --root-user-action=ignore "uv==$(cat requirements/uv.version)"
python -m uv pip compile pyproject.toml requirements/build.in \
  --extra test --extra jupyter --extra postgres --extra vault --extra otel --extra openai --extra openai-agents --extra pydantic-ai --extra langgraph --extra mcp --extra anthropic --extra bubblewrap \
  --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
  --quiet -o requirements/test.lock "$@"
