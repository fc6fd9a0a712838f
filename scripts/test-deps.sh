#!/usr/bin/env bash
# System packages the test suite needs: a real PostgreSQL server, bubblewrap (the
# replay worker's OS isolation layer) and Chromium (the JupyterLab browser tests). Python packages come from `pip install -e '.[test]'`.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v chromium >/dev/null || need+=(chromium)
command -v curl >/dev/null || need+=(curl)  # the README's service flow
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ "${#need[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
