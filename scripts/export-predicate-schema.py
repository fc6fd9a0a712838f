"""Write the certificate predicate's JSON Schemas (v1, v2 and v3) for the browser's verifier.

The browser checks predicates against exactly the schemas the enclave issues and
verifies with (``ledger.certificates.PREDICATE_SCHEMA``, ``PREDICATE_SCHEMA_V2`` and
``PREDICATE_SCHEMA_V1``); this script copies them into
``labextension/src/predicate/schemas.json``, keys sorted as the Python validator sees
them. ``tests/unit/certificates/test_predicate_port.py`` fails when the committed file
is stale; ``--check`` does the same from the command line.

    python scripts/export-predicate-schema.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ledger.certificates import (
    PREDICATE_SCHEMA,
    PREDICATE_SCHEMA_V1,
    PREDICATE_SCHEMA_V2,
    PREDICATE_TYPE,
    PREDICATE_TYPE_V1,
    PREDICATE_TYPE_V2,
)

TARGET = Path(__file__).resolve().parent.parent / "labextension/src/predicate/schemas.json"


def render() -> str:
    schemas = {
        PREDICATE_TYPE: PREDICATE_SCHEMA,
        PREDICATE_TYPE_V2: PREDICATE_SCHEMA_V2,
        PREDICATE_TYPE_V1: PREDICATE_SCHEMA_V1,
    }
    return json.dumps(schemas, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--check"]:
        if not TARGET.is_file() or TARGET.read_text() != text:
            print(
                f"{TARGET.name} is stale: run scripts/export-predicate-schema.py", file=sys.stderr
            )
            return 1
        return 0
    if argv:
        print("usage: export-predicate-schema.py [--check]", file=sys.stderr)
        return 2
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
