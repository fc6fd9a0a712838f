"""The disclosure budget an intervention policy grants per analyst per (specimen, field)
within a window, in bits (``_policy``; charged at admission, ``_intake``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import BadInput

__all__ = ["BITS_PER_AUDIT", "BUDGET_KEYS", "Budget"]

_MAX_WINDOW = 366 * 24 * 3600
BUDGET_KEYS = frozenset({"audits", "bits", "window_seconds"})


# What one audit of a budget given as a count stands for: above the disclosure bound of
# a 1,000-sample audit of a specimen with a few dozen calls (about 230 bits in a tight
# certificate), with room for governed inference's tallies (up to ~170 bits more at the
# loosest caps). A larger audit discloses more and is charged its own bound: a budget in
# bits admits it only if the policy grants that much.
BITS_PER_AUDIT = 512.0
_MAX_BITS = 1e9


@dataclass(frozen=True, kw_only=True)
class Budget:
    """Per analyst per (specimen, field) per window: at most ``bits`` of disclosure bound
    in total and, if given, at most ``audits`` requests. ``bits`` defaults to
    ``audits × BITS_PER_AUDIT``; one of the two must be given."""

    window_seconds: int
    audits: int | None = None
    bits: float | None = None

    def __post_init__(self) -> None:
        for name in ("audits", "window_seconds"):
            value = getattr(self, name)
            if name == "audits" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise BadInput(f"policy budget.{name} must be an integer")
        if self.audits is not None and not 1 <= self.audits <= 10_000:
            raise BadInput("policy budget.audits must lie in 1..10000")
        if not 60 <= self.window_seconds <= _MAX_WINDOW:
            raise BadInput("policy budget.window_seconds must lie in 60..31622400")
        bits = self.bits
        if bits is None:
            if self.audits is None:
                raise BadInput("policy budget needs bits or audits")
            object.__setattr__(self, "bits", float(self.audits * BITS_PER_AUDIT))
        elif (
            isinstance(bits, bool)
            or not isinstance(bits, int | float)
            or not 1 <= bits <= _MAX_BITS
        ):
            raise BadInput("policy budget.bits must be a number in 1..1e9")
        else:
            object.__setattr__(self, "bits", float(bits))

    @property
    def bits_total(self) -> float:
        assert self.bits is not None  # set in __post_init__
        return self.bits

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"window_seconds": self.window_seconds, "bits": self.bits}
        if self.audits is not None:
            out["audits"] = self.audits
        return out
