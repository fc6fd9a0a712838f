#!/usr/bin/env bash
# System packages the test suite needs: a real PostgreSQL server, bubblewrap (the
# replay worker's OS isolation layer), Chromium (the JupyterLab browser tests), cmake and a
# C++ compiler (llama.cpp's server, the hosted-model tests' real model). Python packages
# come from the lock (scripts/install-locked.sh).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v chromium >/dev/null || need+=(chromium)
command -v curl >/dev/null || need+=(curl)  # the README's service flow
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ "${#need[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
