"""The specimen library as a release gate: tags and selectors over sealed specimens,
``regress`` (one code-revision audit per selected specimen through the durable queue)
and the signed release report that aggregates their certificates."""

from ._library import (
    Selection,
    Selector,
    select,
    selection_digest,
    tag_specimen,
    tags_of,
    untag_specimen,
)

__all__ = [
    "Selection",
    "Selector",
    "select",
    "selection_digest",
    "tag_specimen",
    "tags_of",
    "untag_specimen",
]
