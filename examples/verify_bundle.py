"""Verify a certificate bundle with public tools only: hashlib and cryptography.

    python verify_bundle.py AUDIT.bundle.json ISSUER.pem LOG_VERIFIER_KEY

Checks the issuer's DSSE signature, the log's signature on the checkpoint, and that both
ledger entries (the specimen's seal, the certificate's issuance) are leaves of the signed
tree and name this certificate. Prints the checkpoint it proved against, or fails.
"""

import base64
import hashlib
import json
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def inclusion_root(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes:
    """RFC 9162 section 2.1.3.2: the root the audit path leads to (None if it is long)."""
    node, fn, sn = sha(b"\0" + leaf), index, size - 1
    for sibling in path:
        if fn & 1 or fn == sn:
            node = sha(b"\1" + sibling + node)
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        else:
            node = sha(b"\1" + node + sibling)
        fn, sn = fn >> 1, sn >> 1
    return node if sn == 0 else b""


def proven_entry(part: dict, log_name: str, log_key: Ed25519PublicKey) -> tuple[dict, bytes]:
    """The entry a tlog-proof proves, after checking the log signed its checkpoint."""
    head, _, note = part["proof"].partition("\n\n")
    text, _, signatures = note.rpartition("\n\n")
    ours = [s for s in signatures.splitlines() if s.split(" ")[1] == log_name]
    log_key.verify(base64.b64decode(ours[0].split(" ")[2])[4:], (text + "\n").encode())
    origin, size, root = text.split("\n")[:3]
    lines, data = head.split("\n"), base64.b64decode(part["entry"])
    index = int(lines[1].removeprefix("index "))
    path = [base64.b64decode(line) for line in lines[2:]]
    if origin != log_name or inclusion_root(data, index, int(size), path) != base64.b64decode(root):
        sys.exit("the entry is not in the log's signed tree")
    entry = json.loads(data)
    if entry["index"] != index:
        sys.exit("the proof is for another entry")
    return entry, data


def main(bundle_file: str, issuer_pem: str, log_verifier: str) -> None:
    bundle = json.loads(Path(bundle_file).read_text())
    envelope = bundle["envelope"]
    payload, kind = base64.b64decode(envelope["payload"]), envelope["payloadType"].encode()
    pae = b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)
    issuer = load_pem_public_key(Path(issuer_pem).read_bytes())
    issuer.verify(base64.b64decode(envelope["signatures"][0]["sig"]), pae)  # type: ignore[union-attr]
    statement = json.loads(payload)
    log_name, _, key = log_verifier.split("+", 2)  # name+key id+base64(0x01 || public key)
    log_key = Ed25519PublicKey.from_public_bytes(base64.b64decode(key)[1:])
    sealed, sealed_bytes = proven_entry(bundle["specimen_entry"], log_name, log_key)
    issued, _ = proven_entry(bundle["certificate_entry"], log_name, log_key)
    subject, ledger = statement["subject"][0], statement["predicate"]["ledger"]
    # RFC 8785 of an envelope (strings only) is sorted, compact JSON
    canonical = json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if not (
        sealed["kind"] == "specimen.sealed"
        and "specimen:" + sealed["subject"] == subject["name"]
        and sealed["body"]["manifest_digest"] == "sha256:" + subject["digest"]["sha256"]
        and ledger["specimen_entry_hash"] == "sha256:" + sha(sealed_bytes).hex()
        and issued["kind"] == "certificate.issued"
        and issued["index"] > sealed["index"]
        and issued["body"]["envelope_digest"] == "sha256:" + sha(canonical.encode()).hex()
    ):
        sys.exit("the proven entries are not this certificate's")
    print(f"verified: {statement['predicate']['classification']} (log {log_name})")


if __name__ == "__main__":
    main(*sys.argv[1:4])
