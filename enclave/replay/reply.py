"""The worker's reply, checked by the supervisor against a closed schema.

For the supervisor's side and for tests that hand it a tampered reply: the worker ran
agent code, so a reply is accepted only through ``parse_loaded``, ``parse_runs`` or
``parse_samples`` (against the specimen's :class:`Vocabulary`), which refuse anything
out of shape with :class:`ReplyInvalid` or :class:`ValueOutOfRange`; a run may fail
only for one of ``FAILURE_REASONS``.
"""

from ._errors import ReplyInvalid, ReplyRefused, ValueOutOfRange
from ._reply import FAILURE_REASONS, Vocabulary, parse_loaded, parse_runs, parse_samples

__all__ = [
    "FAILURE_REASONS",
    "ReplyInvalid",
    "ReplyRefused",
    "ValueOutOfRange",
    "Vocabulary",
    "parse_loaded",
    "parse_runs",
    "parse_samples",
]
