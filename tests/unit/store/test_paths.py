"""Payload references: ``validate_ref`` refuses every escape trick, ``resolve_ref``
never lands outside the store root, whatever the reference and whatever the links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from enclave import BadInput
from enclave.store import resolve_ref, validate_id, validate_ref

_FIRST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
_REST = _FIRST + ".-"

segment = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(_FIRST),
    st.text(alphabet=_REST, max_size=20),
).filter(lambda s: ".." not in s)
good_ref = st.lists(segment, min_size=1, max_size=5).map("/".join)

_EVIL = [
    "..",
    "../",
    "/..",
    "%2e%2e",
    "%2E%2E",
    "\uff0e\uff0e",
    "\uff0e",
    "\\",
    "\x00",
    "//",
    "/./",
    "é",
    "\u2215",
    " ",
    "\n",
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("store")
    (base / "acme" / "sp-1").mkdir(parents=True)
    return base


def refused(ref: str) -> bool:
    try:
        validate_ref(ref)
    except BadInput:
        return True
    return False


@settings(max_examples=300)
@given(ref=good_ref)
@example(ref="acme/sp-1/payloads.ct")
@example(ref="a")
@example(ref="_x/y.z-1")
def test_well_formed_refs_are_accepted_and_resolve_inside(root: Path, ref: str) -> None:
    assert validate_ref(ref) == tuple(ref.split("/"))
    resolved = resolve_ref(root, ref)
    assert resolved.is_relative_to(root.resolve())
    assert resolved == root.resolve().joinpath(*ref.split("/"))


@settings(max_examples=300)
@given(ref=good_ref, evil=st.sampled_from(_EVIL), at=st.integers(min_value=0))
def test_an_evil_fragment_anywhere_is_refused(root: Path, ref: str, evil: str, at: int) -> None:
    at %= len(ref) + 1
    bad = ref[:at] + evil + ref[at:]
    assert refused(bad), repr(bad)
    with pytest.raises(BadInput):
        resolve_ref(root, bad)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "/",
        "/etc/passwd",
        "/abs/path",
        "a/../b",
        "..",
        "a/..",
        "./a",
        "a/./b",
        "a//b",
        "a/",
        "a\\b",
        "..\\..\\x",
        "a\x00b",
        "%2e%2e/x",
        "a/%2e%2e/b",
        "\uff0e\uff0e/x",
        "a/\uff0e\uff0e",
        "caf\u00e9",
        "a/b\u202ec",
        ".hidden",
        "a/.b",
        "a..b",
        "-a",
        "x" * 129,
        "/".join(["a"] * 300),
    ],
)
def test_known_escapes_are_refused(root: Path, bad: str) -> None:
    assert refused(bad)
    with pytest.raises(BadInput, match="^payload reference is malformed$"):
        resolve_ref(root, bad)


_MIXED = st.text(alphabet=_REST + "/%\\\x00.\u00e9\uff0e ", max_size=60)


@settings(max_examples=500)
@given(ref=st.one_of(st.text(max_size=60), _MIXED))
def test_anything_accepted_is_plain_ascii_and_stays_inside(root: Path, ref: str) -> None:
    if refused(ref):
        with pytest.raises(BadInput):
            resolve_ref(root, ref)
        return
    assert ref.isascii() and not ref.startswith("/") and "\\" not in ref and "\x00" not in ref
    segments = ref.split("/")
    assert all(s and s not in (".", "..") and ".." not in s and "%" not in s for s in segments)
    assert resolve_ref(root, ref).is_relative_to(root.resolve())


@settings(max_examples=300)
@given(
    ref=st.lists(
        st.sampled_from(["..", ".", "", "a", "%2e", "\uff0e", "b.c"]), min_size=1, max_size=6
    ).map("/".join)
)
def test_dot_segment_combinations(root: Path, ref: str) -> None:
    segments = ref.split("/")
    assume(any(s in ("..", ".", "", "%2e", "\uff0e") for s in segments))
    assert refused(ref)


def test_symlink_inside_the_root_pointing_outside_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "store", tmp_path / "outside"
    (root / "acme").mkdir(parents=True)
    outside.mkdir()
    (outside / "payloads.ct").write_bytes(b"not ours")
    os.symlink(outside, root / "acme" / "sp-link")
    os.symlink(outside / "payloads.ct", root / "acme" / "file-link")
    for ref in ("acme/sp-link", "acme/sp-link/payloads.ct", "acme/file-link"):
        validate_ref(ref)  # well-formed text ...
        with pytest.raises(BadInput, match="leaves the store"):
            resolve_ref(root, ref)  # ... but it leads out


def test_symlinked_root_itself_is_fine(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "acme").mkdir(parents=True)
    os.symlink(real, tmp_path / "alias")
    assert resolve_ref(tmp_path / "alias", "acme/x") == real.resolve() / "acme" / "x"


@settings(max_examples=200)
@given(value=st.text(max_size=140))
def test_ids_are_single_safe_segments(value: str) -> None:
    try:
        validate_id(value, what="specimen id")
    except BadInput as exc:
        # one fixed message: the refused value is never echoed
        assert (
            str(exc) == "specimen id must be 1-128 characters of letters, digits, '.', '_' or '-'"
        )
        return
    assert validate_ref(value) == (value,)
    assert len(value) <= 128


def test_non_strings_are_refused() -> None:
    for value in (None, b"acme", 3, ["a"]):
        with pytest.raises(BadInput):
            validate_ref(value)  # type: ignore[arg-type]
        with pytest.raises(BadInput):
            validate_id(value, what="tenant id")  # type: ignore[arg-type]
