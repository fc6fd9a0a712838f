"""Checking what a front end is asked for, before an ``AuditRequest`` is built.

For the front ends that accept an audit from outside (the command line, the service,
the notebook, the release gate): the one-line messages the intervention's rules answer
with (``MESSAGES``; the rules are ``Intervention``'s, read with
``Intervention.from_json``) and the bound on samples (``check_samples``,
``MAX_SAMPLES``).
"""

from ._intervention import MESSAGES
from ._request import MAX_SAMPLES, check_samples

__all__ = ["MAX_SAMPLES", "MESSAGES", "check_samples"]
