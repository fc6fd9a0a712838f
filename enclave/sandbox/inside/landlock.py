"""Landlock as read from outside the worker: which ABI this host's kernel offers.

For the supervisor, which states the Landlock layer in the environment record only
where the kernel offers it, and for tests of that layer on the real host. The worker
confines its own writes with it (``_landlock.restrict``).
"""

from ._landlock import abi

__all__ = ["abi"]
