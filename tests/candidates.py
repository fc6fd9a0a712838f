"""Candidate revisions of the procurement agent, written to disk as a developer's
change would be: a module whose ``run`` replaces the captured agent's function."""

from __future__ import annotations

import inspect
from pathlib import Path

from enclave.incidents import procurement
from enclave.replay._candidate import CandidateCode

__all__ = ["candidate_source", "score_shifted_run", "write_candidate"]

_HEADER = (
    "from __future__ import annotations\n"
    "from dataclasses import replace\n"
    "from enclave.incidents.procurement import (\n"
    "    AGENT as _CAPTURED, APPROVAL, DECIDER, RETRIEVAL, SUPPLIER_RISK, TEMPLATE, LiveWorld,\n"
    ")\n"
)


def candidate_source(body: str) -> str:
    """A module defining ``run`` (``body``) and ``AGENT``, the captured agent with it."""
    return _HEADER + body + "\nAGENT = replace(_CAPTURED, function=run)\n"


def write_candidate(folder: Path, name: str, body: str) -> CandidateCode:
    """``folder/name.py`` holding the candidate, declared as ``name:AGENT``."""
    (folder / f"{name}.py").write_text(candidate_source(body), encoding="utf-8")
    return CandidateCode.declare(f"{name}:AGENT", folder)


def score_shifted_run() -> str:
    """The captured ``run`` with every supplier score 0.02 lower: near the threshold a
    decision changes."""
    return inspect.getsource(procurement.run).replace("+ jitter\n", "+ jitter\n        - 0.02\n")
