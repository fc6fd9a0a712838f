"""Facts about a specimen that lists filter on, computed once at seal.

A list must not load every specimen to decide which match. What the filters need is
known when the specimen is sealed and stored beside it as indexed columns:

* ``effects_reverifiable`` — every recorded effect can be re-verified: its token is
  re-verifiable, it returned no live-state fields, and its expiry (if any) is a readable
  time with a zone. An unreadable or zoneless expiry counts as already expired (fail
  closed), as the service's own reading does.
* ``effects_expire_at`` — the earliest effect-token expiry, as fixed-width UTC text
  (``0001-01-01T00:00:00.000000Z``) so that text order is time order on every backend;
  ``None`` when no token expires.
* ``classification_rank`` — the classification as a number, public 0 .. restricted 3.

Then *counterfactual-admissible at now* is exactly
``effects_reverifiable AND (effects_expire_at IS NULL OR effects_expire_at > stamp(now))``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from ._records import Classification, EffectInfo

__all__ = ["CLASSIFICATION_RANK", "EffectFacts", "effect_facts", "utc_text"]

CLASSIFICATION_RANK: dict[str, int] = {
    Classification.PUBLIC.value: 0,
    Classification.INTERNAL.value: 1,
    Classification.CONFIDENTIAL.value: 2,
    Classification.RESTRICTED.value: 3,
}
_LATEST = "9999-12-31T23:59:59.999999Z"


@dataclass(frozen=True, slots=True)
class EffectFacts:
    reverifiable: bool
    expire_at: str | None


def utc_text(moment: datetime) -> str:
    """``moment`` as fixed-width ISO-8601 UTC text (text order = time order)."""
    if moment.tzinfo is None:
        raise ValueError("a time needs a zone")
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds") + "Z"


def _expiry(text: str) -> str | None:
    """The expiry as UTC text; None when it is unreadable or has no zone."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    try:
        return utc_text(moment)
    except OverflowError:  # beyond year 1..9999 once in UTC
        return _LATEST if moment.year > 1 else None


def effect_facts(effects: Iterable[EffectInfo | None]) -> EffectFacts:
    """The filter facts of one specimen's effects (steps without an effect give None)."""
    reverifiable, earliest = True, None
    for effect in effects:
        if effect is None:
            continue
        if not effect.reverifiable or effect.live_state_fields:
            reverifiable = False
        if effect.token_expires_at is not None:
            expiry = _expiry(effect.token_expires_at)
            if expiry is None:
                reverifiable = False
            elif earliest is None or expiry < earliest:
                earliest = expiry
    return EffectFacts(reverifiable=reverifiable, expire_at=earliest)
