"""The specimen library as a release gate: tags and selectors over sealed specimens,
``regress`` (one code-revision audit per selected specimen through the durable queue)
and the signed release report that aggregates their certificates (``build_report``,
``sign_report``; ``verify_report`` checks one). ``report_bundle`` carries a report with
the proofs of its ledger entries, which ``verify_report_bundle`` checks offline.

Every name is imported on first use: tagging a specimen does not load the queue.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._bundles import report_bundle as report_bundle
    from ._junit import junit_xml as junit_xml
    from ._library import Selection as Selection
    from ._library import Selector as Selector
    from ._library import select as select
    from ._library import selection_digest as selection_digest
    from ._library import tag_specimen as tag_specimen
    from ._library import tags_of as tags_of
    from ._library import untag_specimen as untag_specimen
    from ._regress import RegressPlan as RegressPlan
    from ._regress import regress as regress
    from ._report import LABELS as LABELS
    from ._report import REASONS as REASONS
    from ._report import REPORT_TYPE as REPORT_TYPE
    from ._report import REPORT_TYPE_V1 as REPORT_TYPE_V1
    from ._report import SpecimenResult as SpecimenResult
    from ._report import build_report as build_report
    from ._report import label_of as label_of
    from ._report import sign_report as sign_report
    from ._verify import REPORT_BUNDLE_MEDIA_TYPE as REPORT_BUNDLE_MEDIA_TYPE
    from ._verify import is_report as is_report
    from ._verify import is_report_bundle as is_report_bundle
    from ._verify import make_report_bundle as make_report_bundle
    from ._verify import verify_report as verify_report
    from ._verify import verify_report_bundle as verify_report_bundle

_FRONT = {
    "report_bundle": "._bundles",
    "junit_xml": "._junit",
    "Selection": "._library",
    "Selector": "._library",
    "select": "._library",
    "selection_digest": "._library",
    "tag_specimen": "._library",
    "tags_of": "._library",
    "untag_specimen": "._library",
    "RegressPlan": "._regress",
    "regress": "._regress",
    "LABELS": "._report",
    "REASONS": "._report",
    "REPORT_TYPE": "._report",
    "REPORT_TYPE_V1": "._report",
    "SpecimenResult": "._report",
    "build_report": "._report",
    "label_of": "._report",
    "sign_report": "._report",
    "REPORT_BUNDLE_MEDIA_TYPE": "._verify",
    "is_report": "._verify",
    "is_report_bundle": "._verify",
    "make_report_bundle": "._verify",
    "verify_report": "._verify",
    "verify_report_bundle": "._verify",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
