"""The structure drawing of the tree: layers that import only downwards, and no import
cycle between modules of different folders.

Read from the source (imports under ``if TYPE_CHECKING:`` are left out: they are
annotations, not dependencies at run time). A function-level import counts like a
module-level one: deferring an import does not change which way it points.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("enclave", "ledger", "jupyter_ext")

# Lower layers never import higher ones; peers on one layer may import each other
# (without cycles). ``ledger`` with its verifier is the floor; ``jupyter_ext`` stands
# beside the enclave and may import only the ledger.
LAYERS: dict[str, int] = {
    "ledger": 0,
    # the enclave's foundations: its error root, the declarative policy files' loader
    "enclave._errors": 1,
    "enclave._policies": 1,
    # what a runtime is made of
    "enclave.keys": 2,
    "enclave.store": 2,
    "enclave.capture": 2,
    "enclave.sandbox": 2,
    "enclave._home": 2,
    "enclave._exports": 2,
    "enclave.incidents": 3,  # the reference incidents: agents written against capture
    "enclave.adapters": 3,  # frameworks' seams over capture: agent code imports them
    "enclave._runtime": 3,
    "enclave._pinned_transit": 3,  # a transit signing key, its public half pinned
    "enclave._log_key": 3,  # the key that signs the ledger's checkpoints
    "enclave._issuer_key": 3,  # the key that signs certificates and release reports
    "enclave._witnesses": 3,  # asking the log's witnesses to cosign its checkpoints
    "enclave._checkpoints": 3,  # signing the log's checkpoints and reading them back
    "enclave.replay": 4,
    # what runs audits, admits them, gates releases and erases
    "enclave.jobs": 5,
    "enclave.governance": 5,
    "enclave.release": 5,
    "enclave.vaultops": 5,
    "enclave._verification": 5,
    "enclave._erasure": 5,
    "enclave._retention": 5,
    # the outward faces
    "enclave.service": 6,
    "enclave.witness": 6,  # a witness of a log's checkpoints, served over HTTP
    "enclave.cli": 6,
    "enclave._console": 6,
    "enclave.__main__": 7,
    "enclave": 7,  # the Python API front
    "enclave.errors": 7,  # every error class, listed from the fronts that define them
    "enclave.retention": 6,  # the retention API (over ``_retention``)
    "jupyter_ext": 7,
}
# beside the enclave, not above it: the analyst's side imports no enclave module
BESIDE = {"jupyter_ext": ("ledger", "jupyter_ext")}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue  # frozen Alembic history, run only by the ledger
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


class _Imports(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[ast.Import | ast.ImportFrom] = []

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if name == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.append(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.found.append(node)


def _known(name: str) -> str | None:
    """The nearest module of this tree that ``name`` names (a module, or a name in one)."""
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name if name in MODULES else None


def imports_of(module: str) -> Iterator[str]:
    """The modules of this tree that ``module`` imports at run time."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    visitor = _Imports()
    visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
    for node in visitor.found:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            names = [f"{source}.{alias.name}" for alias in node.names]
        for name in names:
            if name.split(".")[0] in PACKAGES and (known := _known(name)) is not None:
                yield known


def group_of(module: str) -> str:
    """``enclave.replay.worker._engine`` → ``enclave.replay``; ``ledger._chain`` → ``ledger``."""
    parts = module.split(".")
    if parts[0] != "enclave" or len(parts) == 1:
        return parts[0] if parts[0] != "enclave" else "enclave"
    return ".".join(parts[:2])


GRAPH = {module: sorted(set(imports_of(module))) for module in MODULES}


def test_every_module_has_a_layer() -> None:
    assert sorted({group_of(m) for m in MODULES} - set(LAYERS)) == []


def test_imports_run_downwards() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if group_of(module) != group_of(target)
        and LAYERS[group_of(target)] > LAYERS[group_of(module)]
    ]
    assert upward == []


def test_the_analysts_side_imports_only_the_ledger() -> None:
    for side, allowed in BESIDE.items():
        outside = [
            f"{module} -> {target}"
            for module, targets in GRAPH.items()
            if group_of(module) == side
            for target in targets
            if target.split(".")[0] not in allowed
        ]
        assert outside == [], side


def _strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the tree is deeper than a comfortable recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_cycle_crosses_a_folder() -> None:
    def folder(module: str) -> Path:
        return MODULES[module].parent

    crossing = [
        component
        for component in _strongly_connected(GRAPH)
        if len({folder(m) for m in component}) > 1
    ]
    assert crossing == []


def test_the_checks_see_the_tree() -> None:
    """The checks above pass vacuously on an empty graph: make sure they read the tree,
    and that the cycle finder finds a planted cycle."""
    assert len(MODULES) > 150
    assert "ledger" in GRAPH["enclave._runtime"] or any(
        t.startswith("ledger.") for t in GRAPH["enclave._runtime"]
    )
    assert _strongly_connected({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [
        ["a", "b", "c"]
    ]
