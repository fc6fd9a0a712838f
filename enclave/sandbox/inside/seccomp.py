"""The worker's seccomp filter, as read from outside the worker.

For the supervisor, which checks from ``/proc`` that a worker loaded exactly this
filter and states it in the environment record, and for tests of the filter on the
real host: the system calls it allows and kills (by name; ``NUMBERS`` maps them per
architecture), its default action, its program, bytes and digests per machine,
whether this host can load it, and its loader (``prepare``). The worker loads it on
itself (``_seccomp.install``).
"""

from ._seccomp import (
    ALLOWED,
    DEFAULT_ACTION,
    KILLED,
    Loader,
    digests,
    filter_bytes,
    prepare,
    program,
    supported,
)
from ._syscalls import NUMBERS

__all__ = [
    "ALLOWED",
    "DEFAULT_ACTION",
    "KILLED",
    "NUMBERS",
    "Loader",
    "digests",
    "filter_bytes",
    "prepare",
    "program",
    "supported",
]
