"""Modules a run imported, compiled once by the template from their sources.

Runs never read byte-code files (``sys.pycache_prefix`` points nowhere: a byte-code file
planted beside a source would otherwise run instead of it), so every run compiles what
it imports from source — the largest part of a run's cost. The template compiles those
sources once instead: compiling runs no code, so the template still runs no agent code.

Invariants:

1. What the template compiles is named by runs, which are untrusted: names must be
   dotted identifiers, are looked up on the import path without importing anything
   (parent packages included), and only plain ``.py`` sources are read, within
   :data:`MAX_MODULES` and :data:`MAX_SOURCE_BYTES` in all.
2. The cache answers just before ``PathFinder`` and only with the spec it finds, so a
   module resolves to the same file as without it.
3. A run gets the template's code object only while the source file holds exactly the
   bytes that were compiled; otherwise it compiles the file itself. The code is the
   source's either way, byte-code files are never read, and a module's body still runs
   afresh in every run (the cache holds code, not modules).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import (
    BuiltinImporter,
    FrozenImporter,
    ModuleSpec,
    PathFinder,
    SourceFileLoader,
)
from types import CodeType, ModuleType
from typing import Any

MAX_MODULES = 512
MAX_SOURCE_BYTES = 32 << 20
_NAME = re.compile(r"[A-Za-z_]\w{0,99}(\.[A-Za-z_]\w{0,99}){0,15}")


class _CachedSourceLoader(SourceFileLoader):
    def __init__(self, fullname: str, path: str, compiled: tuple[bytes, CodeType]) -> None:
        super().__init__(fullname, path)
        self._compiled = compiled

    def get_code(self, fullname: str) -> CodeType:
        source = self.get_data(self.path)
        cached_source, code = self._compiled
        if source == cached_source:
            return code
        return self.source_to_code(source, self.path)  # changed since: its own bytes


class _Finder(MetaPathFinder):
    def __init__(self, compiled: dict[str, tuple[bytes, CodeType]]) -> None:
        self._compiled = compiled

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not self._compiled:
            return None
        spec = PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, SourceFileLoader) or spec.origin is None:
            return None  # the ordinary finders answer
        compiled = self._compiled.get(spec.origin)
        if compiled is None:
            return None
        spec.loader = _CachedSourceLoader(fullname, spec.origin, compiled)
        return spec


class CodeCache:
    """Installed in the template's ``sys.meta_path``; runs inherit it with the fork."""

    def __init__(self) -> None:
        self._compiled: dict[str, tuple[bytes, CodeType]] = {}
        self._seen: set[str] = set()
        self._bytes = 0
        # just before PathFinder: every finder that answers before it still does, and
        # for the names it would answer the spec is the one it finds
        finders = [type(f) if not isinstance(f, type) else f for f in sys.meta_path]
        at = finders.index(PathFinder) if PathFinder in finders else len(finders)
        sys.meta_path.insert(at, _Finder(self._compiled))

    def learn(self, names: Any) -> None:
        """Compile the sources of ``names`` (what a run reports it imported)."""
        if not isinstance(names, list):
            return
        for name in names:
            if len(self._seen) >= MAX_MODULES:
                return
            if not isinstance(name, str) or name in self._seen or not _NAME.fullmatch(name):
                continue
            self._seen.add(name)
            self._compile(name)

    def _compile(self, name: str) -> None:
        if BuiltinImporter.find_spec(name) or FrozenImporter.find_spec(name):
            return  # answered before any file is looked at
        origin = _source_of(name)
        if origin is None:
            return
        try:
            with open(origin, "rb") as fh:
                source = fh.read(MAX_SOURCE_BYTES - self._bytes + 1)
            if self._bytes + len(source) > MAX_SOURCE_BYTES:
                return
            code = compile(source, origin, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            return  # the run compiles it (and fails) itself
        self._bytes += len(source)
        self._compiled[origin] = (source, code)


def _source_of(name: str) -> str | None:
    """The ``.py`` file ``name`` would load from, found without importing its parents."""
    path: list[str] | None = None
    parts = name.split(".")
    spec = None
    for depth in range(1, len(parts) + 1):
        try:
            spec = PathFinder.find_spec(".".join(parts[:depth]), path)
        except KeyError:  # a namespace package inside one the template never imported
            return None
        if spec is None:
            return None
        if depth < len(parts):
            if spec.submodule_search_locations is None:
                return None
            path = list(spec.submodule_search_locations)
    if spec is None or not isinstance(spec.loader, SourceFileLoader) or spec.origin is None:
        return None
    return spec.origin if spec.origin.endswith(".py") else None
