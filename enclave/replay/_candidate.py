"""A candidate release of an agent's code: the one intervention of a code-revision audit.

A candidate is declared by ``module:ATTR`` and a source root (a directory), or by
``module:ATTR`` and an installed distribution, whose root is the directory its files are
installed in (``from_distribution``). Its code identity is computed like captured
code's (``_code_identity``), over the top-level package or module of ``module`` as
found in the root alone — nothing is imported on this side: candidate code is untrusted
and runs only inside the replay worker, in a fresh fork per run like captured code.

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
4. A candidate declared by distribution is found with ``importlib.metadata`` (metadata
   only, nothing imported) and must be what the distribution installed: the
   distribution lists the top-level package or module among its files, every file of
   that package on disk is one its RECORD lists with that SHA-256 (``__pycache__``
   aside), and every file RECORD lists there is on disk; otherwise ``code_changed``.
   Its name and version are carried as metadata; the digest, not the version, is
   what a certificate names.
5. Workers are shown a copy, not the root: :meth:`CandidateCode.snapshot` copies the
   files the digest covers, and nothing else of the package, into a folder named by the
   digest, and the copy must hash to the declared digest. An edit of the root while a
   job runs (and undone before the next check here) never reaches a run, and a file
   the digest does not cover (data beside the modules) is not there to change what
   runs. The copy is hashed again inside each worker, before any run, as its view
   shows it (``code_changed`` unless it is the declared digest).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from .._errors import BadInput, Refused
from ..capture import is_code_digest, source_root_files, source_root_identity

__all__ = ["CandidateCode", "CandidateDistribution"]

_TARGET = re.compile(r"[A-Za-z_]\w{0,99}(\.[A-Za-z_]\w{0,99}){0,15}:[A-Za-z_]\w{0,99}")
_DIST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?")  # PEP 508
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}")
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
class CandidateDistribution:
    """The installed distribution a candidate was declared from: metadata only."""

    name: str
    version: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _DIST_NAME.fullmatch(self.name):
            raise BadInput("a candidate distribution's name is a distribution name")
        if not isinstance(self.version, str) or not _VERSION.fullmatch(self.version):
            raise BadInput("a candidate distribution's version is a version")

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateDistribution:
        if not isinstance(data, Mapping) or set(data) != {"name", "version"}:
            raise BadInput("a candidate distribution is {name, version}")
        return cls(name=data["name"], version=data["version"])


def _installed(
    name: str,
) -> tuple[CandidateDistribution, str, list[importlib.metadata.PackagePath]]:
    """(name and version, install directory, RECORD entries) of distribution ``name``,
    from its metadata alone; a one-line BadInput when it cannot be read."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise BadInput("no installed distribution has the candidate distribution's name") from None
    except (OSError, ValueError) as exc:
        raise BadInput("the installed distributions cannot be searched") from exc
    try:
        # a field missing from METADATA reads as None, which CandidateDistribution refuses
        described = CandidateDistribution(dist.metadata["Name"], dist.version)
        files = dist.files
        root = str(dist.locate_file(""))
    except (OSError, ValueError, TypeError, KeyError, UnicodeError, csv.Error) as exc:
        raise BadInput("the candidate distribution's metadata cannot be read") from exc
    if files is None:
        raise BadInput("the candidate distribution has no RECORD of its files")
    return described, root, files


def _provides(files: Sequence[PurePosixPath], top: str) -> bool:
    """The distribution's files include ``top`` as a regular package or a module file."""
    wanted = {(top, "__init__.py"), (top + ".py",)}
    return any(PurePosixPath(str(f)).parts in wanted for f in files)


def _record_hash(path: str) -> str:
    """A file's SHA-256 as RECORD writes it (urlsafe base64, no padding)."""
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _changed() -> Refused:
    return Refused(
        "the candidate distribution's installed code is not the code it records",
        code="code_changed",
    )


def _files_on_disk(root: str, code_path: str) -> set[tuple[str, ...]]:
    """The files of the package directory or module file ``code_path``, as path parts
    relative to ``root`` (``__pycache__`` aside); a linked directory is refused."""
    if not os.path.isdir(code_path):
        return {(os.path.basename(code_path),)}
    found: set[tuple[str, ...]] = set()
    for folder, dirs, names in os.walk(code_path):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if any(os.path.islink(os.path.join(folder, d)) for d in dirs):
            raise _changed()
        relative = tuple(os.path.relpath(folder, root).split(os.sep))
        found.update((*relative, name) for name in names)
    return found


def _check_record(
    root: str, code_path: str, files: Sequence[importlib.metadata.PackagePath]
) -> None:
    """Refuse ``code_changed`` unless the files under ``code_path`` (``__pycache__``
    aside) are exactly the files RECORD lists there, each a regular file with its
    recorded SHA-256."""
    base = os.path.basename(code_path)
    recorded: dict[tuple[str, ...], importlib.metadata.PackagePath] = {}
    for entry in files:
        parts = PurePosixPath(str(entry)).parts
        if not parts or parts[0] != base or "__pycache__" in parts:
            continue
        if any(p in ("", ".", "..") for p in parts):
            raise _changed()
        recorded[parts] = entry
    on_disk = _files_on_disk(root, code_path)
    if on_disk != set(recorded):
        raise _changed()
    for parts in sorted(on_disk):
        path = os.path.join(root, *parts)
        expected = recorded[parts].hash
        if expected is None or expected.mode != "sha256":
            raise _changed()
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode) or _record_hash(path) != expected.value:
                raise _changed()
        except OSError:
            raise _changed() from None


@dataclass(frozen=True)
class CandidateCode:
    target: str  # module:ATTR, importable from ``root``
    root: str  # absolute path of the source root (never published)
    digest: str  # sha256:<hex>, the code identity of the root's top-level module
    distribution: CandidateDistribution | None = None  # when declared by distribution

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
        if self.distribution is not None and not isinstance(
            self.distribution, CandidateDistribution
        ):
            raise TypeError("a candidate's distribution is a CandidateDistribution")

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

    @classmethod
    def from_distribution(cls, target: str, name: str) -> CandidateCode:
        """The candidate at ``target`` in the installed distribution ``name``, its
        digest computed now (invariant 4):

        1. find the distribution by its metadata on this process's path;
        2. it lists the top-level package or module of ``target`` among its files;
        3. declare it from the directory the distribution is installed in (the rules of
           ``declare``: a real package directory or module file, no link);
        4. the installed files of that package are the ones RECORD lists, unedited;
        5. the digest still holds, so the hashed code is the recorded code.
        """
        if not isinstance(target, str) or not _TARGET.fullmatch(target):
            raise BadInput("a candidate is module:ATTR")
        if not isinstance(name, str) or not _DIST_NAME.fullmatch(name):
            raise BadInput("a candidate distribution is a distribution name (A-Z a-z 0-9 . _ -)")
        described, root, files = _installed(name)  # 1
        top = target.partition(":")[0].split(".")[0]
        if not _provides(files, top):  # 2
            raise BadInput("the candidate distribution does not provide the candidate's module")
        candidate = cls.declare(target, root)  # 3
        _check_record(candidate.root, candidate.code_path, files)  # 4
        candidate.verify()  # 5
        return replace(candidate, distribution=described)

    def verify(self) -> None:
        """Refuse ``code_changed`` unless the root still holds exactly the declared code."""
        if not os.path.isdir(self.root):
            raise Refused("the candidate's source root is gone", code="code_changed")
        self.require(source_root_identity(self.top_module, self.root).digest)

    def require(self, digest: str | None) -> None:
        """Refuse ``code_changed`` unless ``digest`` (of code found somewhere) is the
        declared digest."""
        if digest != self.digest:
            raise Refused("the candidate's code is not the declared code", code="code_changed")

    def snapshot(self, folder: str | os.PathLike[str]) -> str:
        """The candidate's module file or package directory as a copy in ``folder``
        holding exactly the files its digest covers (invariant 5); made once per
        digest, checked every time. Refused ``code_changed`` unless the copy hashes to
        the declared digest."""
        base = os.path.join(os.fspath(folder), self.digest.removeprefix("sha256:"))
        copy = os.path.join(base, os.path.basename(self.code_path))
        if self._holds(base):
            return copy
        os.makedirs(folder, exist_ok=True)
        made = tempfile.mkdtemp(prefix=".copy-", dir=folder)
        try:
            for name in source_root_files(self.top_module, self.root):
                target = os.path.join(made, name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copyfile(os.path.join(self.root, name), target, follow_symlinks=False)
            self.require(source_root_identity(self.top_module, made).digest)
            if os.path.isdir(base) and not self._holds(base):
                shutil.rmtree(base, ignore_errors=True)  # a copy that no longer holds the code
            try:
                os.rename(made, base)
            except OSError:  # another job's copy of the same digest came first
                self.require(source_root_identity(self.top_module, base).digest)
        finally:
            shutil.rmtree(made, ignore_errors=True)
        return copy

    def _holds(self, folder: str) -> bool:
        """Whether ``folder`` holds exactly the declared code."""
        return (
            os.path.isdir(folder)
            and source_root_identity(self.top_module, folder).digest == self.digest
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target, "root": self.root, "digest": self.digest}
        if self.distribution is not None:
            out["distribution"] = self.distribution.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateCode:
        if not isinstance(data, Mapping) or set(data) - {"distribution"} != {
            "target",
            "root",
            "digest",
        }:
            raise BadInput("a candidate is {target, root, digest[, distribution]}")
        dist = data.get("distribution")
        return cls(
            target=data["target"],
            root=data["root"],
            digest=data["digest"],
            distribution=None if dist is None else CandidateDistribution.from_dict(dist),
        )

    def to_predicate(self) -> dict[str, Any]:
        """What a certificate says of the candidate: its reference and digest, no path."""
        return {"target": self.target, "digest": self.digest}

    def to_report(self) -> dict[str, Any]:
        """What a release report says of it: the certificate's fields, and the
        distribution's name and version when it was declared by one (metadata only)."""
        out = self.to_predicate()
        if self.distribution is not None:
            out["distribution"] = self.distribution.to_dict()
        return out
