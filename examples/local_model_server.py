"""A local OpenAI-compatible chat-completions server for the examples: it stands where a
hosted model would, on loopback, and answers deterministically (a screening model that
says REJECT when the prompt's risk is 0.5 or more, else APPROVE).

    python examples/local_model_server.py --port 8931
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "screening-model-2026-11-01"


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    risk = float(re.findall(r"risk (\d+(?:\.\d+)?)", prompt)[-1]) if "risk " in prompt else 0.0
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "REJECT" if risk >= 0.5 else "APPROVE"},
            }
        ],
        "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 1, "total_tokens": 0},
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        length = int(self.headers.get("content-length") or 0)
        data = json.dumps(_answer(json.loads(self.rfile.read(length) or b"{}"))).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        del format, args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8931)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    print(f"serving {MODEL} on http://127.0.0.1:{port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
