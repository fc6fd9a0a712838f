"""The app as ``uvicorn`` builds it in each worker process (``--workers N`` needs an
import string, not an app object): the home and the body limit come from the
environment ``replay-enclave serve`` sets before it starts them."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from fastapi import FastAPI

from .._home import ENV_HOME, Home
from ._app import create_app
from ._gate import Limits

__all__ = ["ENV_MAX_BODY", "LOG_FORMAT", "app_from_environment"]

ENV_MAX_BODY = "REPLAY_ENCLAVE_MAX_BODY_BYTES"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def app_from_environment() -> FastAPI:
    from .._runtime import Runtime

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    home = Home.open(Path(os.environ[ENV_HOME]))
    limits = Limits(max_body_bytes=int(os.environ.get(ENV_MAX_BODY, Limits().max_body_bytes)))
    return create_app(lambda: Runtime.open(home), limits=limits)
