"""Certificate predicate versions: v2 is issued; v1 is still verified.

``predicate_problems`` checks a predicate against the schema and rules of its type
(``docs/certificate-v2.md`` lists what changed).
"""

from __future__ import annotations

from typing import Any

from ._rules_v2 import predicate_problems_v2
from ._schema import predicate_problems_v1

__all__ = ["PREDICATE_TYPE", "PREDICATE_TYPE_V1", "PREDICATE_TYPES", "predicate_problems"]

PREDICATE_TYPE = "https://replay-enclave.dev/certificate/v2"
PREDICATE_TYPE_V1 = "https://replay-enclave.dev/certificate/v1"
PREDICATE_TYPES = {PREDICATE_TYPE: "v2", PREDICATE_TYPE_V1: "v1"}


def predicate_problems(predicate: Any, predicate_type: str = PREDICATE_TYPE) -> list[str]:
    """Every schema violation and broken rule, as ``location: rule`` (no values)."""
    if predicate_type == PREDICATE_TYPE:
        return predicate_problems_v2(predicate)
    if predicate_type == PREDICATE_TYPE_V1:
        return predicate_problems_v1(predicate)
    raise ValueError("unknown predicate type")
