"""Landlock: the kernel confines the worker's writes to its scratch directory.

Loaded by the worker on itself after start-up and before the seccomp filter (which
then refuses further ``landlock_*`` calls). Where the kernel offers it:

* ABI 1+: creating, writing, truncating (ABI 3+), renaming across directories
  (ABI 2+), removing files and making nodes of any kind are allowed only beneath
  the scratch directory (and writing ``/dev/null``); reads are left to the
  file system view;
* ABI 4+: TCP ``bind`` and ``connect`` are refused outright (no port is allowed);
* ABI 6+: signals to processes outside the worker's Landlock domain and connections
  to abstract Unix sockets outside it are refused.

:func:`restrict` returns the ABI in force, or 0 where Landlock is absent; the
environment record lists ``landlock`` only when it is in force. The restriction is
irreversible and inherited by every thread.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

# System call numbers are the same on x86-64 and AArch64 (asm-generic).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_WRITE_FILE = 1 << 1
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The Landlock ABI version the kernel offers (0: none)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    version = _libc().syscall(
        _long(_CREATE_RULESET), None, _long(0), _long(_CREATE_RULESET_VERSION)
    )
    return max(0, int(version))


def _long(value: int) -> ctypes.c_long:
    return ctypes.c_long(value)  # variadic syscall(): pass full-width arguments


def _file_rights(version: int) -> int:
    return _WRITE_FILE | (_TRUNCATE if version >= 3 else 0)


def restrict(scratch: str) -> int:
    """Confine this process's writes to ``scratch``; return the ABI in force (0: none)."""
    version = abi()
    if version <= 0:
        return 0
    libc = _libc()
    fs = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    fs |= (_REFER if version >= 2 else 0) | (_TRUNCATE if version >= 3 else 0)
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if version >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if version >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = int(libc.syscall(_long(_CREATE_RULESET), buffer, _long(size), _long(0)))
    if ruleset < 0:
        return 0
    try:
        for path, rights in ((scratch, fs), ("/dev/null", _file_rights(version))):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = struct.pack("=Qi", rights, fd)  # the kernel struct is packed
                raw = ctypes.create_string_buffer(rule, len(rule))
                call = (_long(ruleset), _long(_RULE_PATH_BENEATH), raw, _long(0))
                if libc.syscall(_long(_ADD_RULE), *call) != 0:
                    return 0
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, _long(1), _long(0), _long(0), _long(0)) != 0:
            return 0
        if libc.syscall(_long(_RESTRICT_SELF), _long(ruleset), _long(0)) != 0:
            return 0
    finally:
        os.close(ruleset)
    return version
