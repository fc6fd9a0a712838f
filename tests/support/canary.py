"""A canary scanner: does any of these marker strings appear in these bytes, in any
encoding a leak is likely to take?

Each canary is searched as:

* raw UTF-8, UTF-16 LE and UTF-16 BE;
* hex of its UTF-8 bytes (lower and upper case);
* %-encoding of every byte (``%4A`` and ``%4a``), and ``urllib.parse.quote`` form;
* JSON ``\\uXXXX`` escapes of every character (lower and upper hex digits), and in a
  view of the data with every ``\\uXXXX`` escape and every ``%XX`` escape decoded, so a
  partly escaped canary (an HTML-safe JSON encoder, a partly quoted URL) is found too;
* base64 (standard and URL-safe alphabets) at all three alignments: the canary is
  encoded after 0, 1 and 2 prefix bytes and only the middle characters that depend on
  canary bytes alone are searched, so the canary is found wherever it sits in a
  larger encoded value;

and the same again inside every gzip or zlib member found in the data (decompression
is tried at each gzip magic ``1f 8b 08`` and each valid zlib header), recursively up to
a small depth.

``find_canaries`` answers for one byte string, ``scan_tree`` for every regular file
below a folder. ``encodings_found`` names the encodings that matched (for messages).
"""

from __future__ import annotations

import base64
import os
import re
import urllib.parse
import zlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

__all__ = ["INCIDENT_CANARIES", "encodings_found", "find_canaries", "needles", "scan_tree"]

_MAX_DEPTH = 3
_MAX_INFLATED = 64 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b\x08"


def _incident_canaries() -> tuple[str, ...]:
    from enclave.incidents import ALL

    return tuple(module.CANARY for module in ALL)


INCIDENT_CANARIES: tuple[str, ...] = _incident_canaries()


def _b64_middles(raw: bytes) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for prefix in range(3):
        encoded = base64.b64encode(b"\0" * prefix + raw)
        # characters of the first group depend on the prefix bytes when prefix > 0
        start = 4 if prefix else 0
        # characters of a trailing partial group depend on whatever follows the canary
        total = prefix + len(raw)
        end = len(encoded) - (4 if total % 3 else 0)
        middle = encoded[start:end]
        if len(middle) >= 8:
            out.append((f"base64+{prefix}", middle))
            url = middle.translate(bytes.maketrans(b"+/", b"-_"))
            if url != middle:
                out.append((f"base64url+{prefix}", url))
    return out


@lru_cache(maxsize=256)
def needles(canary: str) -> tuple[tuple[str, bytes], ...]:
    """Every (encoding name, byte pattern) searched for one canary."""
    if not canary:
        raise ValueError("a canary must be a non-empty string")
    raw = canary.encode("utf-8")
    found: list[tuple[str, bytes]] = [
        ("utf-8", raw),
        ("utf-16-le", canary.encode("utf-16-le")),
        ("utf-16-be", canary.encode("utf-16-be")),
        ("hex", raw.hex().encode()),
        ("HEX", raw.hex().upper().encode()),
        ("percent", "".join(f"%{b:02X}" for b in raw).encode()),
        ("percent-lower", "".join(f"%{b:02x}" for b in raw).encode()),
        ("quote", urllib.parse.quote(canary, safe="").encode()),
        ("json-u", "".join(f"\\u{ord(c):04x}" for c in canary).encode()),
        ("json-U", "".join(f"\\u{ord(c):04X}" for c in canary).encode()),
        *_b64_middles(raw),
    ]
    unique: dict[bytes, str] = {}
    for name, pattern in found:
        unique.setdefault(pattern, name)
    return tuple((name, pattern) for pattern, name in unique.items())


def _inflate(data: bytes, offset: int, wbits: int) -> bytes | None:
    inflater = zlib.decompressobj(wbits=wbits)
    try:
        out = inflater.decompress(data[offset:], _MAX_INFLATED)
    except zlib.error:
        return None
    return out or None


def _zlib_offsets(data: bytes) -> Iterable[int]:
    start = 0
    while True:
        at = data.find(b"\x78", start)
        if at < 0 or at + 1 >= len(data):
            return
        if (data[at] * 256 + data[at + 1]) % 31 == 0 and not data[at + 1] & 0x20:
            yield at
        start = at + 1


def _members(data: bytes) -> Iterable[tuple[str, bytes]]:
    """Decompressed gzip and zlib members found anywhere in ``data``."""
    start = 0
    while True:
        at = data.find(_GZIP_MAGIC, start)
        if at < 0:
            break
        inflated = _inflate(data, at, 31)
        if inflated is not None:
            yield f"gzip@{at}", inflated
        start = at + 1
    for at in _zlib_offsets(data):
        inflated = _inflate(data, at, 15)
        if inflated is not None:
            yield f"zlib@{at}", inflated


_JSON_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")


def _json_unescaped(data: bytes) -> bytes:
    return _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)).encode("utf-8", "replace"), data)


def _views(data: bytes) -> list[tuple[str, bytes]]:
    views = [
        ("json-unescaped", _json_unescaped(data)),
        ("percent-decoded", urllib.parse.unquote_to_bytes(data)),
    ]
    return [(name, view) for name, view in views if view != data]


def _scan(data: bytes, canaries: tuple[str, ...], depth: int) -> dict[str, list[str]]:
    hits: dict[str, list[str]] = {}
    views = _views(data)
    for canary in canaries:
        for name, pattern in needles(canary):
            if pattern in data:
                hits.setdefault(canary, []).append(name)
        raw = canary.encode("utf-8")
        for name, view in views:
            if raw in view:
                hits.setdefault(canary, []).append(name)
    if depth < _MAX_DEPTH:
        for where, inflated in _members(data):
            for canary, names in _scan(inflated, canaries, depth + 1).items():
                hits.setdefault(canary, []).extend(f"{where}/{n}" for n in names)
    return hits


def encodings_found(data: bytes, canaries: Iterable[str]) -> dict[str, list[str]]:
    """{canary: [encoding names that matched]} for the canaries present in ``data``."""
    return _scan(bytes(data), tuple(canaries), 0)


def find_canaries(data: bytes, canaries: Iterable[str]) -> list[str]:
    """The canaries present in ``data`` in any searched encoding, in the order given."""
    wanted = tuple(dict.fromkeys(canaries))
    hits = _scan(bytes(data), wanted, 0)
    return [c for c in wanted if c in hits]


def scan_tree(
    path: Path | str, canaries: Iterable[str] = INCIDENT_CANARIES
) -> dict[str, list[str]]:
    """{file path: canaries found} for every regular file below ``path`` that holds one.

    Symbolic links are not followed (a link's target is scanned where it lives).
    An empty result means the whole tree is clean.
    """
    wanted = tuple(dict.fromkeys(canaries))
    root = Path(path)
    if not root.is_dir():
        raise ValueError("scan_tree needs a folder")
    found: dict[str, list[str]] = {}
    for folder, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            file_path = Path(folder) / name
            if file_path.is_symlink() or not file_path.is_file():
                continue
            hits = find_canaries(file_path.read_bytes(), wanted)
            if hits:
                found[str(file_path)] = hits
    return found
