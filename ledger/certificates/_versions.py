"""Certificate predicate versions: v3 is issued; v1 and v2 are still verified.

``predicate_problems`` checks a predicate against the schema and rules of its type
(``docs/certificate-v2.md`` and ``docs/certificate-v3.md`` list what changed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._rules_v2 import predicate_problems_v2
from ._rules_v3 import predicate_problems_v3
from ._schema import predicate_problems_v1

__all__ = [
    "PREDICATE_TYPE",
    "PREDICATE_TYPE_V1",
    "PREDICATE_TYPE_V2",
    "PREDICATE_TYPES",
    "predicate_problems",
]

PREDICATE_TYPE = "https://replay-enclave.dev/certificate/v3"
PREDICATE_TYPE_V2 = "https://replay-enclave.dev/certificate/v2"
PREDICATE_TYPE_V1 = "https://replay-enclave.dev/certificate/v1"
PREDICATE_TYPES = {PREDICATE_TYPE: "v3", PREDICATE_TYPE_V2: "v2", PREDICATE_TYPE_V1: "v1"}
_RULES: dict[str, Callable[[Any], list[str]]] = {
    PREDICATE_TYPE: predicate_problems_v3,
    PREDICATE_TYPE_V2: predicate_problems_v2,
    PREDICATE_TYPE_V1: predicate_problems_v1,
}


def predicate_problems(predicate: Any, predicate_type: str = PREDICATE_TYPE) -> list[str]:
    """Every schema violation and broken rule, as ``location: rule`` (no values)."""
    rules = _RULES.get(predicate_type)
    if rules is None:
        raise ValueError("unknown predicate type")
    return rules(predicate)
