"""The release report's shape as the analyst's side names it: the one definition in
``ledger.certificates`` (``_report_shape``), which the enclave's own verifier uses too.
Certificates named by digest are not looked up here: ``replay-enclave verify REPORT``
does that with the home's certificates. The browser's port
(``labextension/src/report/shape.ts``) gives the same problems."""

from __future__ import annotations

from ledger.certificates import REPORT_LABELS as LABELS
from ledger.certificates import REPORT_REASONS as REASONS
from ledger.certificates import REPORT_SUBJECT as SUBJECT
from ledger.certificates import REPORT_TYPE, REPORT_TYPE_V1, report_problems
from ledger.certificates import report_selection_digest as selection_digest

__all__ = [
    "LABELS",
    "REASONS",
    "REPORT_TYPE",
    "REPORT_TYPE_V1",
    "SUBJECT",
    "report_problems",
    "selection_digest",
]
