"""The specimen library: tags on sealed specimens, and selectors over them.

Invariants:

1. Tags are names (``release-gate/procurement``, ``must-hold``): lower-case letters,
   digits and ``._/-``, 1-128 characters; anything else is refused without echo.
2. Every tag change is a ledger entry (``library.tagged`` / ``library.untagged``,
   metadata only: specimen id and tag names) written with the table rows, so the
   ledger alone says which specimens were in a library when.
3. Tagging an erased specimen is refused; an erased member keeps its tags, and a
   selection names it among ``erased`` (erasure wins; a report shows it as a library
   change), never among the specimens that are replayed.
4. A selection is a deterministic, sorted list of specimen ids; its digest is the
   SHA-256 of their canonical JSON, so dropping a member changes the digest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from ledger import Classification, NotFound
from ledger.tables import LibraryTagRow, table_of
from ledger.transactions import read, write

from .._errors import BadInput, Refused
from .._runtime import Runtime

library_tags = table_of(LibraryTagRow)

__all__ = [
    "Selection",
    "Selector",
    "check_tags",
    "selection_digest",
    "select",
    "tag_specimen",
    "tags_of",
    "untag_specimen",
]

_TAG = re.compile(r"[a-z0-9][a-z0-9._/-]{0,127}")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
MAX_TAGS = 32
MAX_LISTED_SPECIMENS = 10_000  # explicit ids in one selector
_IDS_PER_QUERY = 1_000
# the ledger's specimen columns a selector reads (read only; the ledger owns the table)
_SPECIMENS = sa.table(
    "specimens",
    sa.column("id"),
    sa.column("tenant_id"),
    sa.column("agent_name"),
    sa.column("sealed_at"),
    sa.column("highest_classification"),
    sa.column("erased"),
)


def check_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """``tags`` sorted and deduplicated, or ``BadInput`` if one is malformed."""
    out = tuple(sorted(set(tags)))
    if not out or len(out) > MAX_TAGS:
        raise BadInput(f"give 1-{MAX_TAGS} tags")
    for tag in out:
        if not isinstance(tag, str) or not _TAG.fullmatch(tag):
            raise BadInput("a tag is 1-128 of a-z 0-9 . _ / - (starting with a letter or digit)")
    return out


def _live_specimen(runtime: Runtime, specimen_id: str) -> None:
    try:
        runtime.ledger.get_specimen(specimen_id)
    except NotFound:
        raise BadInput("no such specimen") from None
    if runtime.ledger.entries(kind="specimen.erased", subject=specimen_id):
        raise Refused("the specimen was erased", code="unresolvable")


def tag_specimen(
    runtime: Runtime, specimen_id: str, tags: Iterable[str], *, now: datetime
) -> tuple[str, ...]:
    """Add ``tags`` to a sealed, unerased specimen; returns the tags added."""
    wanted = check_tags(tags)
    _live_specimen(runtime, specimen_id)
    have = set(tags_of(runtime, [specimen_id]).get(specimen_id, ()))
    added = tuple(t for t in wanted if t not in have)
    if added:
        with write(runtime.ledger.engine) as conn:
            conn.execute(
                sa.insert(library_tags),
                [
                    {"specimen_id": specimen_id, "tag": t, "tagged_at": now.isoformat()}
                    for t in added
                ],
            )
        runtime.ledger.append(
            "library.tagged", specimen_id, {"specimen_id": specimen_id, "tags": list(added)}
        )
    return added


def untag_specimen(runtime: Runtime, specimen_id: str, tags: Iterable[str]) -> tuple[str, ...]:
    """Remove ``tags`` from a specimen; returns the tags removed."""
    wanted = check_tags(tags)
    have = set(tags_of(runtime, [specimen_id]).get(specimen_id, ()))
    removed = tuple(t for t in wanted if t in have)
    if removed:
        with write(runtime.ledger.engine) as conn:
            conn.execute(
                sa.delete(library_tags).where(
                    library_tags.c.specimen_id == specimen_id, library_tags.c.tag.in_(removed)
                )
            )
        runtime.ledger.append(
            "library.untagged", specimen_id, {"specimen_id": specimen_id, "tags": list(removed)}
        )
    return removed


def tags_of(runtime: Runtime, specimen_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each given specimen's tags (sorted); specimens without any are left out."""
    out: dict[str, list[str]] = {}
    ids = sorted(set(specimen_ids))
    if not ids:
        return {}
    with read(runtime.ledger.engine) as conn:
        # a statement binds at most 65,535 parameters (PostgreSQL); a selection names
        # every member of the library
        for start in range(0, len(ids), _IDS_PER_QUERY):
            rows = conn.execute(
                sa.select(library_tags.c.specimen_id, library_tags.c.tag)
                .where(library_tags.c.specimen_id.in_(ids[start : start + _IDS_PER_QUERY]))
                .order_by(library_tags.c.specimen_id, library_tags.c.tag)
            )
            for specimen_id, tag in rows:
                out.setdefault(str(specimen_id), []).append(str(tag))
    return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True)
class Selector:
    """Which specimens a regress reruns: every condition given must hold (tags: all)."""

    tenant: str | None = None
    agent: str | None = None
    tags: tuple[str, ...] = ()
    sealed_after: str | None = None  # ISO-8601, inclusive
    sealed_before: str | None = None  # ISO-8601, exclusive
    classification: str | None = None  # the specimen's highest classification
    specimens: tuple[str, ...] = field(default=())  # explicit ids

    def __post_init__(self) -> None:
        if self.tags:
            object.__setattr__(self, "tags", check_tags(self.tags))
        for name in ("tenant", "agent"):
            value = getattr(self, name)
            if value is not None and not _ID.fullmatch(value):
                raise BadInput(f"--{name} is a name: 1-128 of A-Z a-z 0-9 . _ : -")
        for name in ("sealed_after", "sealed_before"):
            value = getattr(self, name)
            if value is not None:
                try:
                    datetime.fromisoformat(value)
                except ValueError:
                    raise BadInput(f"--{name.replace('_', '-')} is an ISO-8601 time") from None
        if self.classification is not None and self.classification not in {
            c.value for c in Classification
        }:
            raise BadInput("--classification is public, internal, confidential or restricted")
        if len(self.specimens) > MAX_LISTED_SPECIMENS:
            raise BadInput(f"a selector lists at most {MAX_LISTED_SPECIMENS} specimen ids")
        if not all(isinstance(s, str) and _ID.fullmatch(s) for s in self.specimens):
            raise BadInput("a specimen id is 1-128 of A-Z a-z 0-9 . _ : -")
        object.__setattr__(self, "specimens", tuple(sorted(set(self.specimens))))
        if not any(getattr(self, name) for name in self.__dataclass_fields__):
            raise BadInput("a selector needs at least one condition")

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "agent": self.agent,
            "tags": list(self.tags),
            "sealed_after": self.sealed_after,
            "sealed_before": self.sealed_before,
            "classification": self.classification,
            "specimens": list(self.specimens),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Selector:
        try:
            return cls(
                tenant=data.get("tenant"),
                agent=data.get("agent"),
                tags=tuple(data.get("tags") or ()),
                sealed_after=data.get("sealed_after"),
                sealed_before=data.get("sealed_before"),
                classification=data.get("classification"),
                specimens=tuple(data.get("specimens") or ()),
            )
        except (TypeError, AttributeError):
            raise BadInput("a selector is an object of conditions") from None


@dataclass(frozen=True)
class Selection:
    selector: Selector
    specimens: tuple[str, ...]  # sorted: replayed
    erased: tuple[str, ...]  # sorted: members whose evidence erasure removed
    tags: Mapping[str, tuple[str, ...]]

    @property
    def digest(self) -> str:
        return selection_digest(self.specimens, self.erased)


def selection_digest(specimens: Sequence[str], erased: Sequence[str]) -> str:
    """SHA-256 of the canonical JSON of the sorted ids: the release report's subject
    (the verifier's own rule, ``ledger.certificates.report_selection_digest``)."""
    from ledger.certificates import report_selection_digest

    return report_selection_digest(list(specimens), list(erased))


def select(runtime: Runtime, selector: Selector) -> Selection:
    """The sealed specimens ``selector`` names, split into replayable and erased."""
    s = _SPECIMENS
    query = sa.select(s.c.id, s.c.erased)
    if selector.tenant is not None:
        query = query.where(s.c.tenant_id == selector.tenant)
    if selector.agent is not None:
        query = query.where(s.c.agent_name == selector.agent)
    if selector.sealed_after is not None:
        query = query.where(s.c.sealed_at >= selector.sealed_after)
    if selector.sealed_before is not None:
        query = query.where(s.c.sealed_at < selector.sealed_before)
    if selector.classification is not None:
        query = query.where(s.c.highest_classification == selector.classification)
    if selector.specimens:
        query = query.where(s.c.id.in_(selector.specimens))
    for tag in selector.tags:
        query = query.where(
            sa.exists().where(library_tags.c.specimen_id == s.c.id, library_tags.c.tag == tag)
        )
    with read(runtime.ledger.engine) as conn:
        rows = [(str(r[0]), bool(r[1])) for r in conn.execute(query)]
    live = sorted(i for i, erased in rows if not erased)
    gone = sorted(i for i, erased in rows if erased)
    return Selection(
        selector=selector,
        specimens=tuple(live),
        erased=tuple(gone),
        tags=tags_of(runtime, [*live, *gone]),
    )
