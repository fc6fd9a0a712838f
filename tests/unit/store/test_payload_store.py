"""The encrypted payload store: round trips, and every kind of tampering fails the same
opaque way (``DecryptionFailed("decryption failed")``)."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from enclave import BadInput, DecryptionFailed
from enclave.keys import WrappedKey
from enclave.store import PayloadStore, SpecimenWriter, field_aad, open_sealed, seal

WRAPPED = WrappedKey(provider="local", kek_id="acme", kek_version=1, blob="AAAA")
KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


def write_specimen(
    store: PayloadStore,
    specimen: str,
    steps: dict[int, list[tuple[str, str, bytes]]],
    *,
    tenant: str = "acme",
    key: bytes = KEY,
    durable: bool = False,
) -> SpecimenWriter:
    writer = store.open_writer(tenant, specimen, wrapped=WRAPPED, data_key=key, durable=durable)
    for seq, fields in steps.items():
        writer.add_step(seq, fields)
    writer.close()
    return writer


STEPS = {
    0: [("response", "/a", b'"alpha"'), ("response", "/b", b"[1,2,3]")],
    1: [("request", "/q", b'{"k":"v"}'), ("response", "/r", b"0.5")],
}


def frames(raw: bytes) -> list[tuple[bytes, bytes]]:
    """Parse ``u32 key length, key, u32 blob length, blob`` frames."""
    out, offset = [], 0
    while offset < len(raw):
        (klen,) = struct.unpack_from(">I", raw, offset)
        key = raw[offset + 4 : offset + 4 + klen]
        offset += 4 + klen
        (blen,) = struct.unpack_from(">I", raw, offset)
        out.append((key, raw[offset + 4 : offset + 4 + blen]))
        offset += 4 + blen
    return out


def pack(items: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(struct.pack(">I", len(k)) + k + struct.pack(">I", len(b)) + b for k, b in items)


@pytest.fixture
def store(tmp_path: Path) -> PayloadStore:
    return PayloadStore(root=tmp_path / "payloads")


def payload_file(store_root: Path, specimen: str, tenant: str = "acme") -> Path:
    return store_root / tenant / specimen / "payloads.ct"


def test_round_trip(store: PayloadStore, tmp_path: Path) -> None:
    write_specimen(store, "sp-1", STEPS)
    got = store.read_fields("acme", "sp-1", data_key=KEY)
    want = {
        (seq, side, path): plain for seq, fields in STEPS.items() for side, path, plain in fields
    }
    assert got == want
    assert store.wrapped_key("acme", "sp-1") == WRAPPED
    raw = payload_file(tmp_path / "payloads", "sp-1").read_bytes()
    for plain in want.values():
        assert plain not in raw


def test_folders_are_private(store: PayloadStore, tmp_path: Path) -> None:
    write_specimen(store, "sp-1", STEPS)
    for folder in (tmp_path / "payloads" / "acme", tmp_path / "payloads" / "acme" / "sp-1"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_durable_writes_each_step_batched_writes_at_close(
    store: PayloadStore, tmp_path: Path
) -> None:
    path = payload_file(tmp_path / "payloads", "sp-d")
    durable = store.open_writer("acme", "sp-d", wrapped=WRAPPED, data_key=KEY, durable=True)
    durable.add_step(0, STEPS[0])
    first = path.stat().st_size
    assert first > 0
    durable.add_step(1, STEPS[1])
    assert path.stat().st_size > first
    durable.close()

    path = payload_file(tmp_path / "payloads", "sp-b")
    batched = store.open_writer("acme", "sp-b", wrapped=WRAPPED, data_key=KEY, durable=False)
    batched.add_step(0, STEPS[0])
    batched.add_step(1, STEPS[1])
    assert path.stat().st_size == 0
    batched.close()
    keys = [key for key, _ in frames(path.read_bytes())]
    assert keys == [b"0/response/a", b"0/response/b", b"1/request/q", b"1/response/r", b"#end"]
    assert store.read_fields("acme", "sp-b", data_key=KEY) == store.read_fields(
        "acme", "sp-d", data_key=KEY
    )


def test_batched_frames_reach_the_file_in_bounded_chunks(
    store: PayloadStore, tmp_path: Path
) -> None:
    """A large batched specimen is not held in memory until the seal: once a few MiB
    are pending they are in the file (and with the kernel's writeback), and every
    frame still reads back after the seal."""
    path = payload_file(tmp_path / "payloads", "sp-big")
    writer = store.open_writer("acme", "sp-big", wrapped=WRAPPED, data_key=KEY, durable=False)
    chunk = bytes(range(256)) * 1024  # 256 KiB
    for seq in range(24):  # 6 MiB in all
        writer.add_step(seq, [("response", "/blob", chunk)])
    assert path.stat().st_size >= 4 << 20
    writer.close()
    fields = store.read_fields("acme", "sp-big", data_key=KEY)
    assert fields == {(seq, "response", "/blob"): chunk for seq in range(24)}


def test_specimen_id_cannot_be_reused_and_discard_removes_everything(
    store: PayloadStore, tmp_path: Path
) -> None:
    write_specimen(store, "sp-1", STEPS)
    with pytest.raises(BadInput):
        store.open_writer("acme", "sp-1", wrapped=WRAPPED, data_key=KEY, durable=False)
    writer = store.open_writer("acme", "sp-2", wrapped=WRAPPED, data_key=KEY, durable=True)
    writer.add_step(0, STEPS[0])
    writer.discard()
    assert not (tmp_path / "payloads" / "acme" / "sp-2").exists()
    assert store.read_fields("acme", "sp-1", data_key=KEY)


@pytest.mark.parametrize("where", [0, 20, -1, -17])
def test_flipped_byte_fails(store: PayloadStore, tmp_path: Path, where: int) -> None:
    write_specimen(store, "sp-1", STEPS)
    path = payload_file(tmp_path / "payloads", "sp-1")
    raw = bytearray(path.read_bytes())
    raw[where] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        store.read_fields("acme", "sp-1", data_key=KEY)


def test_swapped_blobs_fail(store: PayloadStore, tmp_path: Path) -> None:
    write_specimen(store, "sp-1", STEPS)
    path = payload_file(tmp_path / "payloads", "sp-1")
    items = frames(path.read_bytes())
    (k0, b0), (k1, b1) = items[0], items[1]
    path.write_bytes(pack([(k0, b1), (k1, b0), *items[2:]]))
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        store.read_fields("acme", "sp-1", data_key=KEY)


@pytest.mark.parametrize(
    "edit",
    [
        lambda items: items[1:],  # first field frame dropped
        lambda items: items[:1] + items[2:],  # a middle frame dropped
        lambda items: items[:-1],  # end frame dropped (truncated at a frame boundary)
        lambda items: items[:-2] + items[-1:],  # last field frame dropped
        lambda items: [items[0], *items],  # a frame duplicated
        lambda items: [*items, items[0]],  # a frame after the end
        lambda items: [*items, items[-1]],  # two end frames
    ],
    ids=[
        "drop-first",
        "drop-middle",
        "drop-end",
        "drop-last-field",
        "dup",
        "after-end",
        "two-ends",
    ],
)
def test_dropped_or_duplicated_frames_fail(store: PayloadStore, tmp_path: Path, edit: Any) -> None:
    write_specimen(store, "sp-1", STEPS)
    path = payload_file(tmp_path / "payloads", "sp-1")
    path.write_bytes(pack(edit(frames(path.read_bytes()))))
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        store.read_fields("acme", "sp-1", data_key=KEY)


def test_reordered_frames_still_read(store: PayloadStore, tmp_path: Path) -> None:
    write_specimen(store, "sp-1", STEPS)
    want = store.read_fields("acme", "sp-1", data_key=KEY)
    path = payload_file(tmp_path / "payloads", "sp-1")
    items = frames(path.read_bytes())
    path.write_bytes(pack([*reversed(items[:-1]), items[-1]]))
    assert store.read_fields("acme", "sp-1", data_key=KEY) == want


def test_end_frame_of_another_specimen_fails(store: PayloadStore, tmp_path: Path) -> None:
    write_specimen(store, "sp-1", STEPS)
    write_specimen(store, "sp-2", {0: STEPS[0]})
    one = frames(payload_file(tmp_path / "payloads", "sp-1").read_bytes())
    two = frames(payload_file(tmp_path / "payloads", "sp-2").read_bytes())
    # sp-2's end frame says "2 frames": pair it with sp-1's first two frames
    payload_file(tmp_path / "payloads", "sp-1").write_bytes(pack([*one[:2], two[-1]]))
    with pytest.raises(DecryptionFailed):
        store.read_fields("acme", "sp-1", data_key=KEY)


def test_frame_relabelled_to_another_field_fails(store: PayloadStore, tmp_path: Path) -> None:
    write_specimen(store, "sp-1", STEPS)
    path = payload_file(tmp_path / "payloads", "sp-1")
    items = frames(path.read_bytes())
    path.write_bytes(pack([(b"0/response/z", items[0][1]), *items[1:]]))
    with pytest.raises(DecryptionFailed):
        store.read_fields("acme", "sp-1", data_key=KEY)


def test_ciphertext_moved_to_another_specimen_or_tenant_fails(
    store: PayloadStore, tmp_path: Path
) -> None:
    root = tmp_path / "payloads"
    write_specimen(store, "sp-1", STEPS)
    write_specimen(store, "sp-2", STEPS)
    write_specimen(store, "sp-1", STEPS, tenant="globex")
    payload_file(root, "sp-2").write_bytes(payload_file(root, "sp-1").read_bytes())
    payload_file(root, "sp-1", "globex").write_bytes(payload_file(root, "sp-1").read_bytes())
    for tenant, specimen in (("acme", "sp-2"), ("globex", "sp-1")):
        with pytest.raises(DecryptionFailed, match="^decryption failed$"):
            store.read_fields(tenant, specimen, data_key=KEY)


def test_wrong_key_truncation_and_missing_file_fail_alike(
    store: PayloadStore, tmp_path: Path
) -> None:
    write_specimen(store, "sp-1", STEPS)
    messages = set()
    for key in (OTHER_KEY, bytes(32)):
        with pytest.raises(DecryptionFailed) as caught:
            store.read_fields("acme", "sp-1", data_key=key)
        messages.add(str(caught.value))
    path = payload_file(tmp_path / "payloads", "sp-1")
    raw = path.read_bytes()
    for cut in (len(raw) - 1, 3, 7):
        path.write_bytes(raw[:cut])
        with pytest.raises(DecryptionFailed) as caught:
            store.read_fields("acme", "sp-1", data_key=KEY)
        messages.add(str(caught.value))
    with pytest.raises(DecryptionFailed) as caught:
        store.read_fields("acme", "sp-nope", data_key=KEY)
    messages.add(str(caught.value))
    assert messages == {"decryption failed"}


def test_erase_shreds_the_specimen(store: PayloadStore, tmp_path: Path) -> None:
    write_specimen(store, "sp-1", STEPS)
    assert store.erase("acme", "sp-1") is True
    assert store.erase("acme", "sp-1") is False
    assert not (tmp_path / "payloads" / "acme" / "sp-1").exists()
    with pytest.raises(DecryptionFailed):
        store.wrapped_key("acme", "sp-1")
    with pytest.raises(DecryptionFailed):
        store.read_fields("acme", "sp-1", data_key=KEY)


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "x" * 200, "a\x00b", "é"])
def test_ids_are_validated(store: PayloadStore, bad: str) -> None:
    with pytest.raises(BadInput):
        store.open_writer(bad, "sp-1", wrapped=WRAPPED, data_key=KEY, durable=False)
    with pytest.raises(BadInput):
        store.read_fields("acme", bad, data_key=KEY)


# -- property tests: crypto round trips ----------------------------------------------

_side = st.sampled_from(["request", "response"])
_path = st.from_regex(r"/[a-z_]{1,12}", fullmatch=True)


@settings(max_examples=50, deadline=None)
@given(plain=st.binary(max_size=2048), seq=st.integers(0, 10_000), side=_side, path=_path)
def test_seal_open_round_trip_and_binding(plain: bytes, seq: int, side: str, path: str) -> None:
    cipher = AESGCM(KEY)
    aad = field_aad("acme", "sp-1", seq, side, path)
    blob = seal(cipher, plain, aad)
    assert open_sealed(cipher, blob, aad) == plain
    assert seal(cipher, plain, aad) != blob  # a fresh nonce every time
    for other in (
        field_aad("acme", "sp-1", seq + 1, side, path),
        field_aad("acme", "sp-2", seq, side, path),
    ):
        with pytest.raises(DecryptionFailed):
            open_sealed(cipher, blob, other)
    with pytest.raises(DecryptionFailed):
        open_sealed(AESGCM(OTHER_KEY), blob, aad)


@settings(max_examples=25, deadline=None)
@given(
    steps=st.dictionaries(
        st.integers(0, 500),
        st.dictionaries(st.tuples(_side, _path), st.binary(max_size=300), max_size=4),
        max_size=6,
    )
)
def test_writer_read_round_trip(
    tmp_path_factory: pytest.TempPathFactory, steps: dict[int, dict[tuple[str, str], bytes]]
) -> None:
    store = PayloadStore(root=tmp_path_factory.mktemp("p"))
    write_specimen(
        store, "sp-1", {seq: [(s, p, b) for (s, p), b in f.items()] for seq, f in steps.items()}
    )
    want = {(seq, s, p): b for seq, f in steps.items() for (s, p), b in f.items()}
    assert store.read_fields("acme", "sp-1", data_key=KEY) == want


def test_private_root_is_not_touched_for_invalid_ids(tmp_path: Path) -> None:
    store = PayloadStore(root=tmp_path / "payloads")
    with pytest.raises(BadInput):
        store.open_writer("..", "sp-1", wrapped=WRAPPED, data_key=KEY, durable=False)
    assert not (tmp_path / "payloads").exists() or os.listdir(tmp_path / "payloads") == []


def test_nonces_never_repeat_within_or_across_specimens(
    store: PayloadStore, tmp_path: Path
) -> None:
    many = {seq: STEPS[seq % 2] for seq in range(50)}
    write_specimen(store, "sp-1", many)
    write_specimen(store, "sp-2", many)
    nonces = [
        blob[:12]
        for specimen in ("sp-1", "sp-2")
        for _, blob in frames(payload_file(tmp_path / "payloads", specimen).read_bytes())
    ]
    assert len(nonces) == 2 * (100 + 1)
    assert len(set(nonces)) == len(nonces)
