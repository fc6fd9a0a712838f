"""Checking what a front end is asked for, before an ``AuditRequest`` is built.

For the front ends that accept an audit from outside (the command line, the service,
the notebook, the release gate): the one intervention model every one of them parses
with (``parse_intervention``, its ``MESSAGES``) and the bound on samples
(``check_samples``, ``MAX_SAMPLES``).
"""

from ._intervention_model import MESSAGES, parse_intervention
from ._request import MAX_SAMPLES, check_samples

__all__ = ["MAX_SAMPLES", "MESSAGES", "check_samples", "parse_intervention"]
