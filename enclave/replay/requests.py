"""Checking what a front end is asked for, before an ``AuditRequest`` is built.

For the front ends that accept an audit from outside (the command line, the service,
the notebook, the release gate): the one-line messages the intervention's rules answer
with (``MESSAGES``; the rules are ``Intervention``'s, read with
``Intervention.from_json``), the bound on samples (``check_samples``,
``MAX_SAMPLES``) and what a certificate may state (``DETAILS``: ``coarse`` by default,
``per-sample`` where a policy grants it).
"""

from ._intervention import MESSAGES
from ._request import COARSE_DETAIL, DETAILS, MAX_SAMPLES, PER_SAMPLE, check_samples

__all__ = ["COARSE_DETAIL", "DETAILS", "MAX_SAMPLES", "MESSAGES", "PER_SAMPLE", "check_samples"]
