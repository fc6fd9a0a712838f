"""Where the declarative ``policies/`` folder is: data, not code.

``$REPLAY_ENCLAVE_POLICY_DIR`` first, then the source tree's, then the copy installed as
shared data (``<prefix>/share/replay-enclave/policies``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ENV_POLICY_DIR", "policies_root"]

ENV_POLICY_DIR = "REPLAY_ENCLAVE_POLICY_DIR"


def policies_root(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get(ENV_POLICY_DIR):
        return Path(env[ENV_POLICY_DIR])
    source = Path(__file__).resolve().parents[1] / "policies"
    if source.is_dir():
        return source
    return Path(sys.prefix) / "share" / "replay-enclave" / "policies"
