"""A candidate release of an agent's code: the one intervention of a code-revision audit.

A candidate is declared by ``module:ATTR`` and a source root (a directory). Its code
identity is computed like captured code's (``_code_identity``), over the top-level
package or module of ``module`` as found in the root alone — nothing is imported on
this side: candidate code is untrusted and runs only inside the replay worker, in a
fresh fork per run like captured code.

Invariants:

1. The declared digest is the digest of the root's files when the audit opens the
   specimen (``verify``); a root edited since the declaration is refused
   ``code_changed``, so the certificate names the code that ran.
2. Of the root, only the candidate's own package directory or module file (a real
   entry, no link) is shown to the worker, read-only (``Sandbox(code=...)``); the root
   is put on the import path only in the intervened arm's own processes: the baseline
   gate, the baseline arm and the placebo arm import the captured code.
3. Modules the candidate imports from outside its root (the installed project, the
   standard library) are not in its digest; the captured code's own check covers the
   installed agent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import BadInput, Refused
from ..capture._code_identity import is_code_digest, source_root_identity

__all__ = ["CandidateCode"]

_TARGET = re.compile(r"[A-Za-z_]\w{0,99}(\.[A-Za-z_]\w{0,99}){0,15}:[A-Za-z_]\w{0,99}")
MAX_ROOT = 4096


def _code_path(root: str, top: str) -> str | None:
    """``root/top`` (a regular package) or ``root/top.py``, as the import system finds
    it first; None unless it is a real entry of ``root`` (no link leading elsewhere)."""
    for path, ok in (
        (os.path.join(root, top), os.path.isfile(os.path.join(root, top, "__init__.py"))),
        (os.path.join(root, top + ".py"), os.path.isfile(os.path.join(root, top + ".py"))),
    ):
        if ok:
            if os.path.islink(path) or os.path.realpath(path) != path:
                return None
            return path
    return None


@dataclass(frozen=True)
class CandidateCode:
    target: str  # module:ATTR, importable from ``root``
    root: str  # absolute path of the source root (never published)
    digest: str  # sha256:<hex>, the code identity of the root's top-level module

    def __post_init__(self) -> None:
        if not isinstance(self.target, str) or not _TARGET.fullmatch(self.target):
            raise BadInput("a candidate is module:ATTR")
        if (
            not isinstance(self.root, str)
            or not os.path.isabs(self.root)
            or len(self.root) > MAX_ROOT
            or "\x00" in self.root
        ):
            raise BadInput("a candidate's source root is an absolute path")
        if not is_code_digest(self.digest):
            raise BadInput("a candidate's digest is a code digest (sha256:<64 hex>)")

    @property
    def top_module(self) -> str:
        return self.target.partition(":")[0].split(".")[0]

    @property
    def code_path(self) -> str:
        """The candidate's package directory or module file under its root: all of the
        root the worker is shown (invariant 2)."""
        path = _code_path(self.root, self.top_module)
        if path is None:
            raise Refused("the candidate's module is gone from its root", code="code_changed")
        return path

    @classmethod
    def declare(cls, target: str, root: str | os.PathLike[str]) -> CandidateCode:
        """The candidate at ``target`` under ``root``, its digest computed now."""
        if not isinstance(target, str) or not _TARGET.fullmatch(target):
            raise BadInput("a candidate is module:ATTR")
        path = os.path.realpath(os.fspath(root))
        if not os.path.isdir(path):
            raise BadInput("the candidate's source root is not a directory")
        top = target.partition(":")[0].split(".")[0]
        if _code_path(path, top) is None:
            raise BadInput(
                "the candidate's module is not a package or .py file directly under its root"
            )
        digest = source_root_identity(top, path).digest
        if digest is None:
            raise BadInput("the candidate's module is not found under its source root")
        return cls(target=target, root=path, digest=digest)

    def verify(self) -> None:
        """Refuse ``code_changed`` unless the root still holds exactly the declared code."""
        if not os.path.isdir(self.root):
            raise Refused("the candidate's source root is gone", code="code_changed")
        now = source_root_identity(self.top_module, self.root).digest
        if now != self.digest:
            raise Refused("the candidate's code is not the declared code", code="code_changed")

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "root": self.root, "digest": self.digest}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateCode:
        if not isinstance(data, Mapping) or set(data) != {"target", "root", "digest"}:
            raise BadInput("a candidate is {target, root, digest}")
        return cls(target=data["target"], root=data["root"], digest=data["digest"])

    def to_predicate(self) -> dict[str, Any]:
        """What a certificate says of the candidate: its reference and digest, no path."""
        return {"target": self.target, "digest": self.digest}
