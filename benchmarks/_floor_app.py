"""The framework's floor for ``service.py --read-load``: a FastAPI app with one
synchronous route that does no work, served as ``replay-enclave serve`` serves the
service (the same HTTP protocol, worker processes, no access log). The latency the same
clients see here, on the same machine in the same run, is what no route of the service
can beat: authentication, authorization and the database all come on top of it."""

from __future__ import annotations

from fastapi import FastAPI

app = FastAPI()


@app.get("/api/v1/floor")
def floor() -> dict[str, str]:  # sync, as the service's routes are: a thread-pool hop
    return {"analyst": "reader", "tenant": "acme"}


def serve(port: int, workers: int) -> None:
    import uvicorn

    from enclave.service._http import NO_DELAY_PROTOCOL

    uvicorn.run(
        "benchmarks._floor_app:app",
        http=NO_DELAY_PROTOCOL,
        host="127.0.0.1",
        port=port,
        workers=workers,
        access_log=False,
        log_config=None,
        server_header=False,
    )
