"""The specimen library as a release gate: tags and selectors over sealed specimens,
``regress`` (one code-revision audit per selected specimen through the durable queue)
and the signed release report that aggregates their certificates."""

from ._junit import junit_xml
from ._library import (
    Selection,
    Selector,
    select,
    selection_digest,
    tag_specimen,
    tags_of,
    untag_specimen,
)
from ._regress import RegressPlan, regress
from ._report import REPORT_TYPE
from ._verify import is_report, verify_report

__all__ = [
    "REPORT_TYPE",
    "RegressPlan",
    "is_report",
    "junit_xml",
    "regress",
    "verify_report",
    "Selection",
    "Selector",
    "select",
    "selection_digest",
    "tag_specimen",
    "tags_of",
    "untag_specimen",
]
