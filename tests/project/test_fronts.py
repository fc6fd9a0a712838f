"""Fronts are the only way in: no module imports ``pkg._x`` from outside ``pkg``.

A leading underscore marks a module private to the package that holds it. Code of that
package (and of its subpackages) may import it; everyone else — other packages of the
product and the tests alike — goes through the package's front (its ``__init__``) or
a public submodule. Imports under ``if TYPE_CHECKING:`` count too: an annotation that
names a private module is a reach like any other.

``python tests/project/test_fronts.py [PREFIX]`` lists the reaches (into modules whose
name starts with PREFIX), one per line.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("enclave", "ledger", "jupyter_ext")
SCANNED = (*PACKAGES, "tests")


def _module_of(path: Path) -> tuple[str, bool]:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """Every dotted name one import statement brings in (a ``from`` names each member)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        base = module.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    yield source
    yield from (f"{source}.{alias.name}" for alias in node.names)


def private_owner(name: str) -> tuple[str, str] | None:
    """For a dotted name that passes through a private module: (the package owning it,
    the private module). ``enclave.replay._verdict.Verdict`` -> ("enclave.replay",
    "enclave.replay._verdict")."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i]), ".".join(parts[: i + 1])
    return None


def reaches_in(source: str, module: str, is_package: bool = False) -> list[str]:
    """The private modules ``source`` (the text of ``module``) imports from outside
    their package, one entry per import statement and private module."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        seen: set[str] = set()
        for name in _imported(node, module, is_package):
            owner = private_owner(name)
            if owner is None or owner[1] in seen:
                continue
            package, private = owner
            if module == package or module.startswith(package + "."):
                continue
            seen.add(private)
            found.append(private)
    return found


def all_reaches() -> list[tuple[str, str]]:
    """(importing file, private module) for the whole tree."""
    found = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if {"node_modules", "migrations", "labextension"} & set(path.parts):
                continue
            module, is_package = _module_of(path)
            for private in reaches_in(path.read_text(), module, is_package):
                found.append((path.relative_to(ROOT).as_posix(), private))
    return found


def test_the_detector_sees_every_kind_of_reach() -> None:
    source = textwrap.dedent(
        """
        import enclave._runtime
        from enclave.replay._verdict import Verdict
        from enclave.replay import _quantize
        from ledger import Ledger
        if TYPE_CHECKING:
            from enclave.keys._transit import TransitProvider
        """
    )
    assert reaches_in(source, "tests.unit.jobs.test_jobs") == [
        "enclave._runtime",
        "enclave.replay._verdict",
        "enclave.replay._quantize",
        "enclave.keys._transit",
    ]
    # inside the owning package (or one of its subpackages) the same imports are fine
    inside = "enclave.replay.worker._engine"
    assert reaches_in("from enclave.replay._verdict import Verdict", inside) == []
    assert reaches_in("import enclave._runtime", "enclave.jobs._execute") == []
    assert reaches_in("from .._errors import BadInput", "enclave.jobs._execute") == []
    assert reaches_in("from ._errors import BadInput", "enclave.jobs", is_package=True) == []
    assert reaches_in("from ..keys._transit import T", "enclave.jobs._execute") == [
        "enclave.keys._transit"
    ]


def test_the_tree_is_scanned() -> None:
    # an empty walk would pass the next test: the product and the tests are both read
    files = {p for top in SCANNED for p in (ROOT / top).rglob("*.py")}
    assert len([p for p in files if p.parts[len(ROOT.parts)] == "tests"]) > 80
    assert len([p for p in files if p.parts[len(ROOT.parts)] == "enclave"]) > 150


def test_no_private_module_is_imported_from_outside_its_package() -> None:
    reaches = all_reaches()
    listing = "\n".join(f"{file}: {private}" for file, private in reaches)
    assert not reaches, f"{len(reaches)} imports reach past a front:\n{listing}"


if __name__ == "__main__":
    prefix = sys.argv[1] if len(sys.argv) > 1 else ""
    for file, private in all_reaches():
        if private.startswith(prefix):
            print(f"{file}: {private}")
