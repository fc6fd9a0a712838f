"""Where the examples' hosted forms find their model: an OpenAI-compatible server on
loopback. The real one is llama.cpp's server with SmolLM2-135M-Instruct, which
``scripts/inference-server.sh`` builds into ``.inference/``::

    bash scripts/inference-server.sh
    .inference/bin/llama-server --model .inference/model.gguf --alias smollm2-135m \\
        --port 8931 --jinja --parallel 1 &

``examples/local_model_server.py`` is a stand-in that starts at once (no tool calls: it
answers APPROVE or REJECT). The address is fixed, not read from the environment: it is
part of the model's identity in its requests, so a capture and every replay build the
model alike.
"""

from __future__ import annotations

PORT = 8931
URL = f"http://127.0.0.1:{PORT}/v1"
MODEL = "smollm2-135m"
# the local server asks for no key; a real one is never recorded
API_KEY = "local-placeholder"
