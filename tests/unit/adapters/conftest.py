"""Each adapter test module's sandboxed audits fork their workers from one pool of
zygotes (``enclave.sandbox.pooled``), as the demo's five audits do: a framework's
import in a worker's template (seconds of CPU for the Agents SDK) is paid by the
module's first audit, not by every worker of every audit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from enclave.sandbox import Zygotes, pooled


@pytest.fixture(scope="module", autouse=True)
def zygotes() -> Iterator[Zygotes]:
    with pooled() as pool:
        yield pool
