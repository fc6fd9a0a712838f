"""The witness over HTTP: ``POST /add-checkpoint`` (C2SP tlog-witness), answered by
``ledger.certificates.tlog.add_checkpoint``; a request body is read up to 64 KiB."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from fastapi import FastAPI, Request, Response

from ledger.certificates.tlog import NoteVerifier, WitnessVerifier, add_checkpoint

from ._store import WitnessStore

__all__ = ["create_witness_app"]

_MAX_BODY = 64 * 1024


def create_witness_app(
    *,
    logs: Mapping[str, NoteVerifier],
    witness: WitnessVerifier,
    sign: Callable[[bytes], bytes],
    store: WitnessStore,
    clock: Callable[[], int] = lambda: int(time.time()),
) -> FastAPI:
    app = FastAPI(title="replay-enclave witness", openapi_url=None, docs_url=None)

    @app.post("/add-checkpoint")
    async def add(request: Request) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > _MAX_BODY:
                return Response("a request is at most 64 KiB\n", status_code=413)
        answer = add_checkpoint(
            body, logs=logs, witness=witness, sign=sign, state=store, now=clock()
        )
        # the type as given: ``text/x.tlog.size`` takes no charset parameter
        return Response(
            answer.body.encode(),
            status_code=answer.status,
            headers={"Content-Type": answer.content_type},
        )

    return app
