"""A home with local keys signs without the key server's client: naming the signing keys
(``enclave.keys``' ``ISSUER_KEY_NAME`` and its siblings) must not import ``hvac`` and
``requests``, which cost a command about 0.2 s and serve Vault mode only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CODE = """
import sys
from pathlib import Path
from enclave import Home, Runtime
from enclave.keys import ISSUER_KEY_NAME, LOG_KEY_NAME, SIGNING_KEY_NAMES
from enclave.replay.certificates import signing_key

with Runtime.open(Home.init(Path(sys.argv[1]))) as runtime:
    key = signing_key(runtime)
    assert len(key.sign(b"statement")) == 64
assert set(SIGNING_KEY_NAMES) == {ISSUER_KEY_NAME, LOG_KEY_NAME}
print(sorted(m for m in ("hvac", "requests") if m in sys.modules))
"""


def test_a_local_home_signs_without_the_vault_client(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(tmp_path / "home")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
