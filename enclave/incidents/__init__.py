"""The three reference incidents of the design, as real agents captured through the SDK.

Each module holds the agent (``AGENT``), its boundary specs, the simulated live world it
talks to at capture time, and ``BASELINE_INPUT`` (the input file the demo captures).
Fields named ``*note*``, ``*text*`` and similar carry canary strings so that tests can
prove plaintext never leaves the enclave.
"""

from . import claims, procurement, shard

__all__ = ["claims", "procurement", "shard", "ALL"]

ALL = (procurement, claims, shard)
