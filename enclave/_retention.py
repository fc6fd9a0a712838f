"""Retention classes, the ``library`` class, and the retention sweep.

Invariants:

1. A specimen's period is that of its sealed ``retention_class`` in the home's
   ``config.toml`` (``[retention] standard = "400d"``), counted from its ``sealed_at``.
   A class without a period is kept forever; a malformed table is one ``BadInput``.
2. A specimen with at least one library tag is retained as ``library`` whatever its
   sealed class: kept until retired. ``library`` is never given a period.
3. Retiring removes every tag through the library's own ``untag_specimen`` (its
   ``library.untagged`` entry) and then records ``library.retired`` (specimen id and
   reason code only); the sealed class applies again from then on.
4. The sweep erases only through ``erase_specimen``: the ledger records each erasure
   before the data key and ciphertext are destroyed, and refuses a specimen under legal
   hold (a hold placed, or an erasure made elsewhere, after the sweep read the specimen
   is respected: the specimen is kept, or left to that erasure). A failure stops the
   sweep (``SweepStopped`` names the count so far); every erasure finished before it
   stays recorded, and the next sweep carries on.
5. An erasure the ledger recorded but whose data key or ciphertext is still stored
   (the store failed after the entry, in a sweep or in ``specimens erase``) is finished
   by the next sweep: its payloads are destroyed, and it is counted as ``finished``.
6. A dry run writes nothing. A complete sweep that is not dry appends one
   ``retention.swept`` entry holding its counts (ids are in the erasure entries).

The sweep takes ``now``; nothing here reads the clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ._errors import BadInput, EnclaveError, InfrastructureError, Refused
from ._runtime import Runtime

__all__ = [
    "LIBRARY",
    "RetentionPolicy",
    "SweepResult",
    "SweepStopped",
    "effective_retention",
    "effective_retention_of",
    "parse_period",
    "retire_specimen",
    "sweep",
]

LIBRARY = "library"
PAGE = 200
MAX_DAYS = 36_600  # a century: anything longer is a typo, and is what "no period" says
_PERIOD = re.compile(r"(?:([0-9]{1,6})d)?(?:([0-9]{1,8})h)?")
_CLASS = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_REASON = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_PERIOD_HELP = 'a period is days and/or hours, e.g. "400d", "36h" or "30d12h"'


def parse_period(text: object) -> timedelta:
    """``"400d"``, ``"36h"``, ``"30d12h"`` as a timedelta; anything else is a one-line
    ``BadInput`` that does not repeat the text."""
    match = _PERIOD.fullmatch(text) if isinstance(text, str) else None
    if match is None or not any(match.groups()):
        raise BadInput(f"the home's config.toml [retention] is malformed: {_PERIOD_HELP}")
    period = timedelta(days=int(match[1] or 0), hours=int(match[2] or 0))
    if not timedelta(0) < period <= timedelta(days=MAX_DAYS):
        raise BadInput(
            f"the home's config.toml [retention] is malformed: a period lies between 1h "
            f"and {MAX_DAYS}d (leave a class out to keep it forever)"
        )
    return period


@dataclass(frozen=True)
class RetentionPolicy:
    """Periods per sealed retention class; a class not named is kept forever."""

    periods: Mapping[str, timedelta]

    def __post_init__(self) -> None:
        for name, period in self.periods.items():
            if not isinstance(name, str) or not _CLASS.fullmatch(name) or name == LIBRARY:
                raise ValueError("a retention class is a name other than 'library'")
            if not isinstance(period, timedelta) or period <= timedelta(0):
                raise ValueError("a retention period is a positive timedelta")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RetentionPolicy:
        """The ``[retention]`` table of a home's config (absent: everything is kept)."""
        table = config.get("retention", {})
        if not isinstance(table, Mapping):
            raise BadInput("the home's config.toml [retention] is malformed: a table of periods")
        periods: dict[str, timedelta] = {}
        for name, text in table.items():
            if name == LIBRARY:
                raise BadInput(
                    "the home's config.toml [retention] is malformed: 'library' is kept "
                    "until retired and takes no period"
                )
            if not _CLASS.fullmatch(name):
                raise BadInput(
                    "the home's config.toml [retention] is malformed: a class name is "
                    "1-64 of a-z 0-9 . _ -"
                )
            periods[name] = parse_period(text)
        return cls(periods=periods)

    def expires_at(self, retention_class: str, sealed_at: str) -> datetime | None:
        """When a specimen of ``retention_class`` sealed at ``sealed_at`` runs out
        (None: kept forever)."""
        period = self.periods.get(retention_class)
        if period is None:
            return None
        return _moment(sealed_at) + period


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def effective_retention(sealed_class: str, tags: tuple[str, ...]) -> str:
    """``library`` while the specimen carries a library tag, else its sealed class."""
    return LIBRARY if tags else sealed_class


def effective_retention_of(runtime: Runtime, specimen_id: str, sealed_class: str) -> str:
    """One specimen's effective retention class, from the library's tags."""
    from .release import tags_of

    return effective_retention(sealed_class, tags_of(runtime, [specimen_id]).get(specimen_id, ()))


def retire_specimen(runtime: Runtime, specimen_id: str, *, reason: str) -> tuple[str, ...]:
    """Take a specimen out of the library; returns the tags removed. Its sealed retention
    class applies again (an expired one goes at the next sweep)."""
    from ledger import NotFound

    from .release import tags_of, untag_specimen

    if not isinstance(reason, str) or not _REASON.fullmatch(reason):
        raise BadInput("a reason code is 1-64 of a-z 0-9 . _ - (starting with a letter or digit)")
    try:
        runtime.ledger.get_specimen(specimen_id)
    except NotFound:
        raise Refused("no sealed specimen has that id", code="unknown_specimen") from None
    tags = tags_of(runtime, [specimen_id]).get(specimen_id, ())
    if not tags:
        raise Refused("the specimen is not in the library", code="not_in_library")
    removed = untag_specimen(runtime, specimen_id, tags)  # its own library.untagged entry
    runtime.ledger.append(
        "library.retired", specimen_id, {"specimen_id": specimen_id, "reason": reason}
    )
    return removed


@dataclass(frozen=True)
class SweepResult:
    """What one sweep did (or, dry, would do). ``erased`` names erasures done — or due,
    in a dry run; ``finished`` erasures recorded earlier whose payloads it destroyed
    (invariant 5); ``kept_library`` counts members whatever their age, ``kept_legal_hold``
    expired specimens under hold, ``not_expired`` the rest (a class without a period
    included)."""

    erased: tuple[str, ...]
    finished: tuple[str, ...]  # erasures recorded earlier whose payloads were still stored
    kept_library: int
    kept_legal_hold: int
    not_expired: int
    dry_run: bool
    ledger_index: int | None  # the retention.swept entry (None: dry run)

    def counts(self) -> dict[str, int]:
        return {
            "erased": len(self.erased),
            "finished": len(self.finished),
            "kept_library": self.kept_library,
            "kept_legal_hold": self.kept_legal_hold,
            "not_expired": self.not_expired,
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.counts(), "dry_run": self.dry_run, "ledger_index": self.ledger_index}


class SweepStopped(InfrastructureError):
    """An erasure failed: the sweep stopped. ``erased`` were finished (and recorded)
    before it; ``cause`` is the failure, whose class says who is at fault: the stopped
    sweep takes its exit code and HTTP status. Sweeping again resumes (retryable)."""

    def __init__(self, erased: int, cause: Exception) -> None:
        from ledger import LedgerError, exit_code_for, http_status_for

        said = (
            str(cause)
            if isinstance(cause, EnclaveError | LedgerError)
            else f"internal failure ({type(cause).__name__})"
        )
        super().__init__(f"retention sweep stopped after {erased} erasure(s): {said}")
        self.erased = erased
        self.cause = cause
        self.code = getattr(cause, "code", "internal")
        self.exit_code = exit_code_for(cause)
        self.http_status = http_status_for(cause)


def _specimens() -> Any:
    import sqlalchemy as sa

    # the ledger's specimen columns the sweep reads (read only; the ledger owns the table)
    return sa.table(
        "specimens",
        sa.column("id"),
        sa.column("tenant_id"),
        sa.column("retention_class"),
        sa.column("sealed_at"),
        sa.column("legal_hold"),
        sa.column("sealed_index"),
        sa.column("erased"),
    )


def _run(runtime: Runtime, query: Any) -> list[Any]:
    from ledger import LedgerError
    from ledger.transactions import read

    try:
        with read(runtime.ledger.engine) as conn:
            return list(conn.execute(query))
    except LedgerError:
        raise InfrastructureError("the ledger database is unavailable") from None


def _count(runtime: Runtime, *, erased: bool) -> int:
    import sqlalchemy as sa

    s = _specimens()
    query = sa.select(sa.func.count()).select_from(s).where(s.c.erased == sa.literal(erased))
    return int(_run(runtime, query)[0][0])


def _page(
    runtime: Runtime, before: int | None, *, erased: bool
) -> list[tuple[str, str, str, str, bool, int]]:
    """Up to ``PAGE + 1`` specimens (erased or not) sealed before ledger index
    ``before``, newest first: id, tenant, retention class, sealed_at, legal hold,
    sealed index."""
    import sqlalchemy as sa

    s = _specimens()
    query = (
        sa.select(
            s.c.id,
            s.c.tenant_id,
            s.c.retention_class,
            s.c.sealed_at,
            s.c.legal_hold,
            s.c.sealed_index,
        )
        .where(s.c.erased == sa.literal(erased))
        .order_by(s.c.sealed_index.desc())
        .limit(PAGE + 1)
    )
    if before is not None:
        query = query.where(s.c.sealed_index < before)
    return [
        (str(r[0]), str(r[1]), str(r[2]), str(r[3]), bool(r[4]), int(r[5]))
        for r in _run(runtime, query)
    ]


def _pages(
    runtime: Runtime, *, erased: bool
) -> Iterator[list[tuple[str, str, str, str, bool, int]]]:
    """Keyset pages: a row erased or sealed meanwhile neither shifts nor repeats another."""
    before: int | None = None
    while True:
        rows = _page(runtime, before, erased=erased)
        yield rows[:PAGE]
        if len(rows) <= PAGE:
            return
        before = rows[PAGE - 1][5]


def _has_payloads(runtime: Runtime, tenant_id: str, specimen_id: str) -> bool:
    from ._errors import DecryptionFailed

    try:
        runtime.payloads.wrapped_key(tenant_id, specimen_id)
    except DecryptionFailed:  # no key: nothing left to read
        return False
    return True


def sweep(
    runtime: Runtime,
    policy: RetentionPolicy,
    *,
    now: datetime,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Erase every sealed, unerased specimen whose period ran out by ``now``, except
    library members and specimens under legal hold (invariants 2-6)."""
    from ._erasure import erase_specimen
    from .release import tags_of

    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    erased: list[str] = []
    finished: list[str] = []
    library = held = fresh = seen = 0
    # the bar's bound (specimens sealed meanwhile only add to it)
    total = _count(runtime, erased=True) + _count(runtime, erased=False)

    def step() -> None:
        nonlocal seen
        seen += 1
        if progress is not None:
            progress(seen, max(total, seen))

    try:
        # 1. erasures the ledger recorded whose data key or ciphertext is still stored
        #    (a store failure after the ledger entry): destroy them now
        for page in _pages(runtime, erased=True):
            for specimen_id, tenant_id, *_rest in page:
                if _has_payloads(runtime, tenant_id, specimen_id):  # a read; rarely a write
                    if not dry_run:
                        runtime.payloads.erase(tenant_id, specimen_id)
                    finished.append(specimen_id)
                step()
        # 2. unerased specimens: library, not expired, held, or erased now
        for page in _pages(runtime, erased=False):
            members = tags_of(runtime, [r[0] for r in page])
            for specimen_id, _tenant, sealed_class, sealed_at, hold, _index in page:
                expiry = policy.expires_at(sealed_class, sealed_at)
                if effective_retention(sealed_class, members.get(specimen_id, ())) == LIBRARY:
                    library += 1
                elif expiry is None or expiry > now:
                    fresh += 1
                elif hold:
                    held += 1
                elif dry_run:
                    erased.append(specimen_id)
                else:
                    try:
                        erase_specimen(runtime, specimen_id, now=now)
                        erased.append(specimen_id)
                    except Refused as exc:  # held, or erased by another, since the read
                        if exc.code != "erasure_refused":
                            raise
                        if runtime.ledger.get_specimen(specimen_id).legal_hold:
                            held += 1
                step()
    except Exception as exc:  # noqa: BLE001 - any failure stops the sweep here, counted
        raise SweepStopped(len(erased), exc) from exc
    result = SweepResult(
        erased=tuple(erased),
        finished=tuple(finished),
        kept_library=library,
        kept_legal_hold=held,
        not_expired=fresh,
        dry_run=dry_run,
        ledger_index=None,
    )
    if dry_run:
        return result
    position = runtime.ledger.append(
        "retention.swept", "retention", {**result.counts(), "swept_at": now.isoformat()}
    )
    return replace(result, ledger_index=position.index)
