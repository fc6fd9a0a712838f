"""The test environment is resolved from requirements/test.lock, and the lock agrees
with pyproject.toml: every declared requirement of every extra is pinned there to a
version that satisfies it, with hashes, and what is installed is what is pinned."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "test.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _locked() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        match = PIN.match(line)
        if match:
            pins[canonicalize_name(match[1])] = Version(match[2])
    return pins


def _lock_extras() -> set[str]:
    header = LOCK.read_text(encoding="utf-8").split("\n", 3)[1]
    return set(re.findall(r"--extra (\S+)", header))


def _declared() -> list[Requirement]:
    project = _pyproject()["project"]
    names = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        names += extra
    return [Requirement(r) for r in names]


def test_lock_covers_every_extra() -> None:
    assert _lock_extras() == set(_pyproject()["project"]["optional-dependencies"])


@pytest.mark.parametrize("requirement", _declared(), ids=str)
def test_declared_requirement_is_pinned_in_the_lock(requirement: Requirement) -> None:
    pins = _locked()
    name = canonicalize_name(requirement.name)
    assert name in pins, f"{name} is not in requirements/test.lock: run scripts/lock.sh"
    assert requirement.specifier.contains(pins[name], prereleases=True), (
        f"{name}=={pins[name]} no longer satisfies {requirement.specifier}: run scripts/lock.sh"
    )


def test_every_pin_carries_a_hash() -> None:
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text(encoding="utf-8"))
    pinned = [b for b in blocks if PIN.match(b)]
    assert pinned and all("--hash=sha256:" in b for b in pinned)


def test_gate_tools_are_pinned_exactly() -> None:
    gates = [r for r in _declared() if r.name in ("ruff", "mypy")]
    assert sorted(r.name for r in gates) == ["mypy", "ruff"]  # both are declared at all
    for requirement in gates:
        assert str(requirement.specifier).startswith("=="), requirement


def test_installed_environment_is_the_locked_one() -> None:
    pins = _locked()
    drift = {
        name: (str(pins[name]), metadata.version(name))
        for name in ("mypy", "ruff", "ipython", "sqlalchemy", "jupyterlab", "hvac")
        if Version(metadata.version(name)) != pins[name]
    }
    assert not drift, f"installed versions differ from the lock: {drift}"


def _floor(requirement: Requirement) -> Version | None:
    """The lowest release a requirement admits (its ``>=`` or ``==`` bound), if any."""
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
    return max(bounds) if bounds else None


def _tested_minor(version: Version) -> Version:
    """The release line the lock tests: major.minor, or all three parts of a 0.0.x
    release, where every micro may break (sqlmodel)."""
    release = version.release + (0, 0)
    return Version(".".join(map(str, release[:3] if release[:2] == (0, 0) else release[:2])))


@pytest.mark.parametrize("requirement", _declared(), ids=str)
def test_floor_admits_nothing_older_than_the_locked_minor(requirement: Requirement) -> None:
    """A floor below what the lock tests admits untested releases, and with them the
    published advisories of older ones (orjson, requests, h11, cryptography)."""
    pinned = _locked()[canonicalize_name(requirement.name)]
    floor = _floor(requirement)
    assert floor is not None, f"{requirement.name} declares no floor"
    assert floor >= _tested_minor(pinned), (
        f"{requirement.name}: floor {floor} admits releases older than the locked "
        f"{pinned}; raise it to >={_tested_minor(pinned)}"
    )


def test_known_holes_are_below_every_floor() -> None:
    floors = {canonicalize_name(r.name): _floor(r) for r in _declared()}
    for name, fixed in (("orjson", "3.11.6"), ("requests", "2.32.4"), ("h11", "0.16")):
        assert floors[name] is not None and floors[name] >= Version(fixed), name


def test_unused_copyleft_dependency_is_gone() -> None:
    assert "pymerkle" not in {canonicalize_name(r.name) for r in _declared()}
