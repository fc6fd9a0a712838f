"""The certificate verifier (``ledger.certificates``) stands without the enclave: in a
fresh interpreter where importing ``enclave`` is made to fail, the verifier and the
analyst's offline check import and verify the committed golden certificates, and a
flipped payload byte still fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"

CODE = """
import importlib.abc, json, sys
from pathlib import Path

class NoEnclave(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "enclave" or name.startswith("enclave."):
            raise ImportError("the verifier must not need " + name)
        return None

sys.meta_path.insert(0, NoEnclave())
from ledger.certificates import (
    StaticLedgerLookup, envelope_digest, keyid_of, load_public_key_pem, verify_certificate,
    verify_envelope,
)
from jupyter_ext import verify_file

golden = Path(sys.argv[1])
for version in ("v1", "v2"):
    path = golden / f"certificate_{version}.dsse.json"
    pem = golden / f"certificate_{version}.pub.pem"
    envelope = json.loads(path.read_bytes())
    key = load_public_key_pem(pem.read_bytes())
    statement = verify_envelope(envelope, {keyid_of(key): key})
    assert statement == json.loads((golden / f"certificate_{version}.statement.json").read_bytes())
    ledger = statement["predicate"]["ledger"]
    lookup = StaticLedgerLookup(
        specimens={
            statement["subject"][0]["name"].removeprefix("specimen:"): (
                "sha256:" + statement["subject"][0]["digest"]["sha256"],
                ledger["specimen_entry_index"],
                ledger["specimen_entry_hash"],
            )
        },
        certificates={envelope_digest(envelope): (9, "sha256:" + "e" * 64)},
    )
    full = verify_certificate(envelope, public_key=key, ledger_lookup=lookup)
    offline = verify_file(str(path), str(pem))
    tampered = dict(envelope, payload=envelope["payload"][:-4] + (
        "AAAA" if envelope["payload"][-4:] != "AAAA" else "BBBB"))
    forged = verify_certificate(tampered, public_key=key, ledger_lookup=lookup)
    print(version, full.ok, offline.ok, forged.ok)
print(sorted(m for m in sys.modules if m == "enclave" or m.startswith("enclave.")))
"""


def test_the_verifier_imports_and_verifies_without_the_enclave() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(GOLDEN)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.splitlines() == ["v1 True True False", "v2 True True False", "[]"]
