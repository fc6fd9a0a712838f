"""A seccomp-BPF filter the worker loads on itself once its own start-up is done.

The filter is the kernel-side backstop of the audit-hook tripwire: it ends the
whole process with SIGSYS (``SECCOMP_RET_KILL_PROCESS``) on

* network: ``socket`` for any family but AF_UNIX, ``connect``, ``bind``,
  ``listen``, ``accept``/``accept4``, ``sendto`` with a destination address,
  ``sendmsg``/``sendmmsg``;
* process creation: ``execve``/``execveat``, ``fork``/``vfork``, ``clone``
  without CLONE_THREAD (threads stay allowed), ``io_uring_*`` (which could issue
  those operations without a system call the filter sees);
* tampering: ``kill``, ``setrlimit``, ``prlimit64`` with a new limit, ``ptrace``,
  ``process_vm_writev``.

``clone3`` fails with ENOSYS (its flags live in memory the filter cannot read), so
the C library falls back to ``clone``, which the filter can inspect.

Only x86-64 and AArch64 are described; elsewhere :func:`install` returns False
and the sandbox's environment record says ``seccomp: false``.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
import sys

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "socket": 41,
        "connect": 42,
        "accept": 43,
        "sendto": 44,
        "sendmsg": 46,
        "bind": 49,
        "listen": 50,
        "clone": 56,
        "fork": 57,
        "vfork": 58,
        "execve": 59,
        "kill": 62,
        "ptrace": 101,
        "setrlimit": 160,
        "accept4": 288,
        "prlimit64": 302,
        "sendmmsg": 307,
        "process_vm_writev": 311,
        "execveat": 322,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "clone3": 435,
    },
    "aarch64": {
        "socket": 198,
        "bind": 200,
        "listen": 201,
        "accept": 202,
        "connect": 203,
        "sendto": 206,
        "sendmsg": 211,
        "clone": 220,
        "execve": 221,
        "kill": 129,
        "ptrace": 117,
        "setrlimit": 164,
        "accept4": 242,
        "prlimit64": 261,
        "sendmmsg": 269,
        "process_vm_writev": 271,
        "execveat": 281,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "clone3": 435,
    },
}
_ALWAYS_KILL = (
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "sendmsg",
    "sendmmsg",
    "execve",
    "execveat",
    "fork",
    "vfork",
    "kill",
    "setrlimit",
    "ptrace",
    "process_vm_writev",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)

_LD_ABS_W = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_NR = 0
_ARCH = 4


def _arg_lo(index: int) -> int:
    return 16 + 8 * index  # little-endian: low 32 bits first


def _arg_hi(index: int) -> int:
    return 16 + 8 * index + 4


_CLONE_THREAD = 0x00010000
_AF_UNIX = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

Instruction = tuple[int, int, int, int]


def _program(machine: str) -> list[Instruction]:
    nr = _SYSCALLS[machine]
    prog: list[Instruction] = [
        (_LD_ABS_W, 0, 0, _ARCH),
        (_JEQ, 1, 0, _AUDIT_ARCH[machine]),
        (_RET, 0, 0, _RET_KILL_PROCESS),
        (_LD_ABS_W, 0, 0, _NR),
    ]
    if machine == "x86_64":  # the x32 ABI shares the arch value: refuse it
        prog += [(_JGE, 0, 1, 0x40000000), (_RET, 0, 0, _RET_KILL_PROCESS)]
    for name in _ALWAYS_KILL:
        if name in nr:
            prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, _RET_KILL_PROCESS)]
    prog += [(_JEQ, 0, 1, nr["clone3"]), (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    prog += [  # clone: threads only
        (_JEQ, 0, 4, nr["clone"]),
        (_LD_ABS_W, 0, 0, _arg_lo(0)),
        (_JSET, 0, 1, _CLONE_THREAD),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, _RET_KILL_PROCESS),
    ]
    prog += [  # socket: AF_UNIX only (socketpair, as asyncio's self-pipe uses)
        (_JEQ, 0, 4, nr["socket"]),
        (_LD_ABS_W, 0, 0, _arg_lo(0)),
        (_JEQ, 0, 1, _AF_UNIX),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, _RET_KILL_PROCESS),
    ]
    prog += [  # sendto: only without a destination (plain send on a connected socket)
        (_JEQ, 0, 6, nr["sendto"]),
        (_LD_ABS_W, 0, 0, _arg_lo(4)),
        (_JEQ, 0, 3, 0),
        (_LD_ABS_W, 0, 0, _arg_hi(4)),
        (_JEQ, 0, 1, 0),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, _RET_KILL_PROCESS),
    ]
    prog += [  # prlimit64: reading limits is fine, setting them is not
        (_JEQ, 0, 6, nr["prlimit64"]),
        (_LD_ABS_W, 0, 0, _arg_lo(2)),
        (_JEQ, 0, 3, 0),
        (_LD_ABS_W, 0, 0, _arg_hi(2)),
        (_JEQ, 0, 1, 0),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, _RET_KILL_PROCESS),
    ]
    prog.append((_RET, 0, 0, _RET_ALLOW))
    return prog


def supported() -> bool:
    """Whether this platform has a filter description here."""
    return sys.platform == "linux" and platform.machine() in _SYSCALLS


def install() -> bool:
    """Load the filter on the calling process (irreversible). True on success."""
    if not supported():
        return False
    machine = platform.machine()
    prog = _program(machine)
    raw = b"".join(struct.pack("=HBBI", *ins) for ins in prog)
    filters = ctypes.create_string_buffer(raw, len(raw))

    class _SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = _SockFprog(len(prog), ctypes.addressof(filters))
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    result: int = prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0)
    return result == 0
