"""Ambient data files: ``open()`` for reading outside ``ctx``.

The installer replaces ``builtins.open`` and ``io.open`` once (``pathlib.Path.open``,
``read_text`` and ``read_bytes`` call ``io.open``). While a run is observed, opening a
path for reading only (no ``w``, ``a``, ``x`` or ``+`` in the mode) is an ambient read
unless the path is the interpreter's or the agent's code (under ``sys.prefix``,
``sys.base_prefix``, ``sys.exec_prefix``, ``sys.base_exec_prefix`` or a ``sys.path``
entry), a kernel view (``/proc``, ``/sys``, ``/dev``), or a file the run itself opened
for writing earlier in the run.

An ambient read is the step ``ambient:file`` (``{"path": absolute path}`` ->
``{"content": base64 of the bytes, or null: no such file}``), recorded once per path
per run; the agent is handed the recorded bytes (``BytesIO``, or a ``TextIOWrapper``
over them honouring encoding, errors and newline), so capture and replay read the same
thing and a later change to the file during the run is not seen (as at replay). At
capture, an existing path that is not a regular file (a directory, a FIFO, a device) is
opened as usual and not recorded; at replay such a read finds no record and abstains.

Writes are untouched: the replay's sandbox confines them. Not covered: ``os.open`` and
reads through a file descriptor, ``opener=``, ``mmap``, names bound to the original
``open`` before installation (``tokenize``, ``linecache``), and C code reading files
itself (``sqlite3``, most native extensions).
"""

from __future__ import annotations

import base64
import builtins
import errno
import io
import os
import stat
import sys
from typing import Any

from ._ambient import AMBIENT_FILE, INSTALLERS, ask, current, state_of

__all__ = ["install_files"]

_original_open = io.open
_KERNEL = ("/proc", "/sys", "/dev")
_WRITING = frozenset("wax+")


class _NotAmbient(Exception):
    """At capture: the path exists but is not a regular file; open it as usual."""


class _RecordedBytes(io.BytesIO):
    """The recorded bytes of a file opened for reading: read-only, named like the file."""

    def __init__(self, content: bytes, name: Any, mode: str) -> None:
        super().__init__(content)
        self.name = name
        self._mode = mode

    @property
    def mode(self) -> str:
        return self._mode

    def writable(self) -> bool:
        return False

    def write(self, data: Any) -> int:
        raise io.UnsupportedOperation("not writable")


def _under(path: str, root: str) -> bool:
    root = os.path.abspath(root)
    if root == os.sep:  # a root of everything would exclude every file
        return False
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _is_code_or_kernel(path: str) -> bool:
    roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *_KERNEL]
    roots += [p for p in sys.path if isinstance(p, str) and p]
    return any(_under(path, root) for root in roots)


def _live_content(path: str) -> dict[str, Any]:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise _NotAmbient
        with _original_open(path, "rb") as fh:
            content = fh.read()
    except FileNotFoundError:
        return {"content": None}
    return {"content": base64.b64encode(content).decode("ascii")}


def _observed_open(
    file: Any,
    mode: str = "r",
    buffering: int = -1,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
    closefd: bool = True,
    opener: Any = None,
) -> Any:
    ctx = current()
    if ctx is None or opener is not None or isinstance(file, int) or type(mode) is not str:
        return _original_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    try:
        path = os.path.abspath(os.fsdecode(os.fspath(file)))
    except TypeError:
        return _original_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    state = state_of(ctx)
    if _WRITING & set(mode):
        state.files_written.add(path)  # the run's own file from now on
        return _original_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    if path in state.files_written or _is_code_or_kernel(path):
        return _original_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    try:
        answer = ask(ctx, AMBIENT_FILE, {"path": path}, lambda: _live_content(path))
    except _NotAmbient:
        return _original_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
    content = answer.get("content")
    if content is None:  # the message names no path: errors never echo input content
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
    if type(content) is not str:
        raise ValueError("the recorded file content is not base64 text")
    raw = _RecordedBytes(base64.b64decode(content, validate=True), file, mode)
    if "b" in mode:
        return raw
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline=newline)


def install_files() -> None:
    """Route ``builtins.open`` and ``io.open`` through ``_observed_open`` once."""
    if builtins.open is not _observed_open:
        builtins.open = _observed_open
    if io.open is not _observed_open:
        io.open = _observed_open


INSTALLERS.append(install_files)
