"""A default-deny seccomp-BPF filter the worker loads on itself once start-up is done.

Invariants:

1. **Default deny.** Only the system calls a replay needs are allowed, by name, from
   the per-architecture tables in ``_syscalls`` (x86-64, AArch64); the filter refuses
   every other call with EPERM.
2. **Reaching out kills.** Calls that would reach past the worker — network
   (``connect``, ``bind``, ``listen``, ``accept*``, ``sendmsg``, ``sendmmsg``, a
   ``socket`` of any family but AF_UNIX, a ``sendto`` with an address), process
   creation (``execve*``, ``fork``, ``vfork``, a ``clone`` without CLONE_THREAD or
   with a CLONE_NEW* flag),
   signals to any process (``kill``, ``tkill``, ``tgkill``, ``rt_*sigqueueinfo``,
   ``pidfd_*``), other processes' memory (``ptrace``, ``process_vm_*``), namespaces
   and mounts (``unshare``, ``setns``, ``mount`` and the new mount API, ``chroot``,
   ``pivot_root``), kernel facilities (``bpf``, ``perf_event_open``,
   ``userfaultfd``, ``io_uring_*``, keyrings, modules, ``open_by_handle_at``),
   identity changes and raising limits — end the whole process with SIGSYS
   (``SECCOMP_RET_KILL_PROCESS``), which the supervisor reports as
   ``forbidden_operation``/``seccomp``.
3. **Why EPERM and not kill by default.** C libraries and extension modules probe
   for newer calls and fall back when one fails; killing on every unlisted call
   would fail replays that tried nothing, without protecting more: an unlisted call
   is *not executed* either way, and every call that could reach outside the worker
   is on the kill list of invariant 2, so an attempt still ends the replay.
4. ``clone3`` fails with ENOSYS (its flags live in memory the filter cannot read),
   so the C library falls back to ``clone``, whose flags the filter checks.
5. Loading needs PR_SET_NO_NEW_PRIVS, set here first; both are irreversible.
6. **The template's one exception.** The worker's template process, which runs no agent
   code, loads :func:`program` with ``template=True``: it may also make a plain fork —
   ``clone`` with exactly the flags the C library's ``fork()`` passes
   (:data:`FORK_FLAGS`: the child's own tid bookkeeping and SIGCHLD, nothing shared) —
   and load further filters (``prctl`` PR_SET_NO_NEW_PRIVS / PR_SET_SECCOMP, which can
   only narrow). Each forked run loads the ordinary filter on top before any agent code
   runs; filters stack and the strictest verdict wins, so a run can create no process.

7. **What was loaded is named by digest.** :func:`filter_bytes` is the exact array of
   ``struct sock_filter`` the loader hands the kernel; a loader's ``sha256`` is that of
   its own buffer, and the environment record names both filters by it (``_checks``).

Elsewhere than Linux on x86-64 or AArch64, :func:`install` returns False.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import hashlib
import platform
import struct
import sys
from typing import Any

from enclave.sandbox.inside._syscalls import NUMBERS

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

# Allowed without looking at arguments; the most frequent first (the filter is linear).
ALLOWED = (
    "read write futex close openat fstat newfstatat statx lseek mmap munmap mprotect "
    "mremap brk madvise pread64 pwrite64 readv writev preadv pwritev preadv2 pwritev2 "
    "recvfrom recvmsg socketpair shutdown getsockopt setsockopt getsockname getpeername "
    "rt_sigaction rt_sigprocmask rt_sigreturn sigaltstack rt_sigpending rt_sigsuspend "
    "rt_sigtimedwait clock_gettime clock_getres clock_nanosleep nanosleep gettimeofday "
    "time times getrandom poll ppoll select pselect6 epoll_create epoll_create1 "
    "epoll_ctl epoll_wait epoll_pwait epoll_pwait2 eventfd eventfd2 open stat lstat "
    "access faccessat faccessat2 readlink readlinkat getdents getdents64 getcwd chdir "
    "fchdir mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat "
    "symlink symlinkat ftruncate truncate fsync fdatasync fallocate flock fcntl dup "
    "dup2 dup3 pipe pipe2 ioctl chmod fchmod fchmodat utimensat umask statfs fstatfs "
    "fadvise64 sendfile copy_file_range close_range getxattr lgetxattr fgetxattr "
    "listxattr llistxattr flistxattr msync mincore membarrier set_robust_list "
    "get_robust_list set_tid_address rseq sched_yield sched_getaffinity getpriority "
    "getpid getppid gettid getuid geteuid getgid getegid getgroups getresuid getresgid "
    "getpgrp getpgid getsid uname sysinfo getrusage getrlimit getcpu arch_prctl "
    "restart_syscall exit exit_group wait4 waitid alarm setitimer getitimer pause"
).split()

# Killed on sight: see invariant 2.
KILLED = (
    "connect bind listen accept accept4 sendmsg sendmmsg execve execveat fork vfork "
    "kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal pidfd_open "
    "pidfd_getfd ptrace process_vm_readv process_vm_writev process_madvise kcmp "
    "setrlimit unshare setns mount umount2 pivot_root chroot mount_setattr open_tree "
    "move_mount fsopen fsconfig fsmount fspick bpf perf_event_open userfaultfd "
    "io_uring_setup io_uring_enter io_uring_register keyctl add_key request_key "
    "init_module finit_module delete_module kexec_load kexec_file_load reboot swapon "
    "swapoff setuid setgid setreuid setregid setresuid setresgid setfsuid setfsgid "
    "setgroups capset personality acct quotactl name_to_handle_at open_by_handle_at "
    "lookup_dcookie syslog iopl ioperm modify_ldt memfd_secret"
).split()

# prctl options a library may use harmlessly (thread names, reading its own state).
_PRCTL_OPTIONS = (
    15,  # PR_SET_NAME
    16,  # PR_GET_NAME
    3,  # PR_GET_DUMPABLE
    21,  # PR_GET_SECCOMP
    23,  # PR_CAPBSET_READ
    39,  # PR_GET_NO_NEW_PRIVS
    0x53564D41,  # PR_SET_VMA (naming anonymous mappings)
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
_CLONE_THREAD = 0x00010000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_NEW_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
_CLONE_NEW_NAMESPACES |= 0x10000000 | 0x20000000 | 0x40000000
_CLONE_CHILD_SETTID = 0x01000000
_CLONE_CHILD_CLEARTID = 0x00200000
_SIGCHLD = 17
#: The only ``clone`` flags the template may pass besides threads: a plain ``fork()``.
FORK_FLAGS = _CLONE_CHILD_SETTID | _CLONE_CHILD_CLEARTID | _SIGCHLD
_AF_UNIX = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

#: What the filter does with a call on neither list, as recorded in the environment.
DEFAULT_ACTION = "errno:EPERM"

Instruction = tuple[int, int, int, int]
_INSTRUCTION_BYTES = struct.calcsize("=HBBI")


def _arg_lo(index: int) -> int:
    return 16 + 8 * index  # little-endian: low 32 bits first


def _arg_hi(index: int) -> int:
    return 16 + 8 * index + 4


def _null_arg(nr: int, index: int) -> list[Instruction]:
    """Allow call ``nr`` only when argument ``index`` is NULL; kill it otherwise."""
    return [
        (_JEQ, 0, 6, nr),
        (_LD_ABS_W, 0, 0, _arg_lo(index)),
        (_JEQ, 0, 3, 0),
        (_LD_ABS_W, 0, 0, _arg_hi(index)),
        (_JEQ, 0, 1, 0),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, _RET_KILL_PROCESS),
    ]


def program(machine: str, *, template: bool = False) -> list[Instruction]:
    """The filter for ``machine`` as classic BPF instructions (``template``: invariant 6)."""
    nr = NUMBERS[machine]
    prog: list[Instruction] = [
        (_LD_ABS_W, 0, 0, _ARCH),
        (_JEQ, 1, 0, _AUDIT_ARCH[machine]),
        (_RET, 0, 0, _RET_KILL_PROCESS),
        (_LD_ABS_W, 0, 0, _NR),
    ]
    if machine == "x86_64":  # the x32 ABI shares the arch value: refuse it
        prog += [(_JGE, 0, 1, 0x40000000), (_RET, 0, 0, _RET_KILL_PROCESS)]
    for name in ALLOWED[:3]:  # read, write, futex before any argument check
        prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, _RET_ALLOW)]
    prog += [(_JEQ, 0, 1, nr["clone3"]), (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    fork = [(_JEQ, 0, 1, FORK_FLAGS), (_RET, 0, 0, _RET_ALLOW)] if template else []
    prog += [  # clone: threads only (and the template's plain fork), never new namespaces
        (_JEQ, 0, 5 + len(fork), nr["clone"]),
        (_LD_ABS_W, 0, 0, _arg_lo(0)),
        *fork,
        (_JSET, 2, 0, _CLONE_NEW_NAMESPACES),
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
    prog += _null_arg(nr["sendto"], 4)  # a plain send on a connected socket only
    prog += _null_arg(nr["prlimit64"], 2)  # reading limits is fine, setting them is not
    options: list[Instruction] = [(_LD_ABS_W, 0, 0, _arg_lo(0))]
    narrowing = (_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP) if template else ()
    for option in _PRCTL_OPTIONS + narrowing:
        options += [(_JEQ, 0, 1, option), (_RET, 0, 0, _RET_ALLOW)]
    options.append((_RET, 0, 0, _RET_ERRNO | errno.EPERM))
    prog += [(_JEQ, 0, len(options), nr["prctl"]), *options]
    for name in ALLOWED[3:]:
        if name in nr:
            prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, _RET_ALLOW)]
    for name in KILLED:
        if name in nr:
            prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, _RET_KILL_PROCESS)]
    prog.append((_RET, 0, 0, _RET_ERRNO | errno.EPERM))
    return prog


def filter_bytes(machine: str, *, template: bool = False) -> bytes:
    """:func:`program` as the kernel receives it: ``struct sock_filter`` entries
    (u16 code, u8 jt, u8 jf, u32 k) in native byte order, nothing else."""
    return b"".join(struct.pack("=HBBI", *ins) for ins in program(machine, template=template))


@functools.cache
def digests(machine: str) -> dict[str, str]:
    """The sha256 of both filters for ``machine``: the template's and each run's."""
    return {
        "template": hashlib.sha256(filter_bytes(machine, template=True)).hexdigest(),
        "run": hashlib.sha256(filter_bytes(machine)).hexdigest(),
    }


def supported() -> bool:
    """Whether this platform has a filter description here."""
    return sys.platform == "linux" and platform.machine() in NUMBERS


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Loader:
    """A filter built in advance; calling it loads the filter (irreversible)."""

    def __init__(self, raw: bytes | None) -> None:
        self._prctl: Any = None
        #: sha256 of the bytes this loader hands the kernel (None: nothing to load).
        self.sha256: str | None = None
        if raw is None:
            return
        self._filters = ctypes.create_string_buffer(raw, len(raw))  # kept alive here
        self.sha256 = hashlib.sha256(self._filters.raw).hexdigest()
        self._fprog = _SockFprog(len(raw) // _INSTRUCTION_BYTES, ctypes.addressof(self._filters))
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
        prctl.restype = ctypes.c_int
        self._prctl = prctl

    def __call__(self) -> bool:
        if self._prctl is None:
            return False
        if self._prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        address = ctypes.addressof(self._fprog)
        return bool(self._prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, address, 0, 0) == 0)


def prepare(*, template: bool = False) -> Loader:
    """Build the filter now; return the call that loads it (True on success). A forked
    run loads a filter its template prepared: two ``prctl`` calls, nothing built after
    the fork."""
    if not supported():
        return Loader(None)
    return Loader(filter_bytes(platform.machine(), template=template))


def install(*, template: bool = False) -> bool:
    """Load the filter on the calling process (irreversible). True on success."""
    return prepare(template=template)()
