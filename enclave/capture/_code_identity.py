"""Code identity: which agent code and interpreter a specimen was captured with.

The manifest of every specimen records ``code`` (a ``CodeIdentity``). Before an audit
runs anything, the supervisor recomputes it from the files on disk (``check_code``):

1. The recorded identity must be well formed and name a digest (else ``code_changed``:
   nothing shows the code is the captured code).
2. The current identity covers the recorded modules plus the module the agent's name
   resolves to *now* (a re-pointed entry point is a different module set).
3. Equal: the audit proceeds — unless it declared a code revision, which then changes
   nothing (``no_change``).
4. Different: refused ``code_changed``, unless the audit declared exactly the current
   digest as its code revision (the groundwork for rerunning specimens against a
   candidate release).

What is hashed: the interpreter (implementation and version), the module that defines
the ``AgentSpec`` (named by the agent's registry target), the module of its function and
any ``AgentSpec.code_modules``; a package contributes every module file below its folder.
Data files an agent reads are not covered, nor is bytecode in ``__pycache__``: a worker
that imports the agent with ``sys.pycache_prefix`` set to an empty folder compiles it
from the hashed sources; one that does not could load a ``.pyc`` planted beside them.
The digest is SHA-256, deliberately unkeyed: code is not tenant content, and a release's
digest must be computable by whoever builds the release, without a tenant secret.
Nothing is imported to compute it (``find_spec`` imports at most a module's parent
packages).

Capture computes the identity once per agent per process: the code a process runs is
the code it imported, so a later edit on disk does not change what the capture ran.
The audit check never uses that cache.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger import canonical_json

from .._errors import Refused
from ._registry import available_agents

__all__ = ["CodeIdentity", "check_code", "code_identity", "source_root_identity"]

INTERPRETER = "{}-{}.{}.{}".format(sys.implementation.name, *sys.version_info[:3])
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_SUFFIXES = tuple(importlib.machinery.SOURCE_SUFFIXES + importlib.machinery.EXTENSION_SUFFIXES)
_cache: dict[tuple[str, tuple[str, ...]], CodeIdentity] = {}


def is_code_digest(value: object) -> bool:
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class CodeIdentity:
    digest: str | None  # None: some module has no files to hash (unidentifiable)
    modules: tuple[str, ...]  # sorted module names
    interpreter: str

    def __post_init__(self) -> None:
        if self.digest is not None and not is_code_digest(self.digest):
            raise ValueError("a code digest is sha256:<64 hex>")
        if list(self.modules) != sorted(set(self.modules)) or not all(
            isinstance(m, str) and _MODULE.fullmatch(m) for m in self.modules
        ):
            raise ValueError("code modules are sorted, distinct module names")
        if not isinstance(self.interpreter, str) or not self.interpreter:
            raise ValueError("an interpreter is named")

    def to_dict(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "modules": list(self.modules),
            "interpreter": self.interpreter,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CodeIdentity:
        if not isinstance(data, Mapping) or not isinstance(data.get("modules"), list):
            raise ValueError("a code identity is an object with a module list")
        return cls(
            digest=data.get("digest"),
            modules=tuple(data["modules"]),
            interpreter=data.get("interpreter"),  # type: ignore[arg-type]  # checked above
        )


def _target_module(agent_name: str) -> str | None:
    target = available_agents().get(agent_name, agent_name)
    return target.partition(":")[0] if _REF.fullmatch(target) else None


def _files(module: str, search_path: list[str] | None = None) -> list[tuple[str, Path]] | None:
    """(relative name, path) of every module file of ``module``; None if it has none.
    With ``search_path`` a top-level ``module`` is looked for there only (a candidate's
    source root), never on the import path."""
    try:
        if search_path is None:
            spec = importlib.util.find_spec(module)
        else:
            spec = importlib.machinery.PathFinder.find_spec(module, search_path)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    found: list[tuple[str, Path]] = []
    if spec.submodule_search_locations is not None:  # a package: everything below it
        for index, root in enumerate(spec.submodule_search_locations):
            base = Path(root)
            for folder, dirs, names in os.walk(base):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                for name in names:
                    if name.endswith(_SUFFIXES):
                        path = Path(folder) / name
                        found.append((f"{index}/{path.relative_to(base).as_posix()}", path))
    elif spec.has_location and spec.origin:
        found.append((Path(spec.origin).name, Path(spec.origin)))
    return sorted(found) or None


def _compute(modules: tuple[str, ...], search_path: list[str] | None = None) -> CodeIdentity:
    if not modules:
        return CodeIdentity(None, modules, INTERPRETER)
    listing: dict[str, dict[str, str]] = {}
    for module in modules:
        files = _files(module, search_path)
        if files is None:
            return CodeIdentity(None, modules, INTERPRETER)
        entries: dict[str, str] = {}
        for name, path in files:
            try:
                with path.open("rb") as handle:
                    entries[name] = hashlib.file_digest(handle, "sha256").hexdigest()
            except OSError:
                return CodeIdentity(None, modules, INTERPRETER)
        listing[module] = entries
    body = canonical_json({"interpreter": INTERPRETER, "modules": listing})
    return CodeIdentity("sha256:" + hashlib.sha256(body).hexdigest(), modules, INTERPRETER)


def code_identity(
    agent_name: str, *, modules: Iterable[str] = (), fresh: bool = False
) -> CodeIdentity:
    """The identity of the agent's code: the module its name resolves to, plus
    ``modules``. Cached per process unless ``fresh``."""
    names = set(modules)
    target = _target_module(agent_name)
    if target is not None:
        names.add(target)
    key = (agent_name, tuple(sorted(names)))
    if not fresh and key in _cache:
        return _cache[key]
    identity = _compute(key[1])
    if not fresh:
        _cache[key] = identity
    return identity


def source_root_identity(module: str, root: str) -> CodeIdentity:
    """The identity of top-level ``module`` (a package: every module file below it) as
    found in the directory ``root`` alone: how a candidate release's code is named.
    Hashed the way captured code is; nothing is imported."""
    if not _MODULE.fullmatch(module) or "." in module:
        raise ValueError("a source root's module is a top-level module name")
    return _compute((module,), [root])


def source_root_files(module: str, root: str) -> list[str]:
    """The files :func:`source_root_identity` hashes, as paths relative to ``root``."""
    if not _MODULE.fullmatch(module) or "." in module:
        raise ValueError("a source root's module is a top-level module name")
    return [os.path.relpath(path, root) for _, path in _files(module, [root]) or ()]


def check_code(recorded: Any, agent_name: str, *, code_revision: str | None = None) -> None:
    """Refuse (``code_changed``) unless the agent's code on disk is the captured code, or
    exactly the declared ``code_revision``. See the module docstring for the steps."""
    # 1. a usable recorded identity
    try:
        identity = CodeIdentity.from_dict(recorded)
    except (TypeError, ValueError):
        raise Refused(
            "the specimen records no code identity; its code cannot be shown unchanged",
            code="code_changed",
        ) from None
    if identity.digest is None:
        raise Refused(
            "the specimen's agent code could not be identified at capture", code="code_changed"
        )
    # 2. the code on disk now, never from the capture cache
    current = code_identity(agent_name, modules=identity.modules, fresh=True)
    if current.digest is None:
        raise Refused("the agent's code cannot be found", code="code_changed")
    # 3. unchanged
    if current == identity:
        if code_revision is not None:
            raise Refused("the declared code revision is the captured code", code="no_change")
        return
    # 4. changed: only as the declared revision
    if code_revision is None:
        raise Refused("the agent's code changed since capture", code="code_changed")
    if code_revision != current.digest:
        raise Refused("the agent's code is not the declared code revision", code="code_changed")
