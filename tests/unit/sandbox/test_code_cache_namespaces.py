"""The template's code cache and namespace packages: a load step that imported a module
of a nested namespace package (``opentelemetry.trace``, installed without ``__init__.py``
files) reports it, and the template — which never imported the parent — must skip it,
not fail the next run."""

from __future__ import annotations

import sys
from pathlib import Path

from enclave.sandbox import Sandbox


def test_a_module_in_a_nested_namespace_package_does_not_break_the_next_run(
    tmp_path: Path,
) -> None:
    code = tmp_path / "code"
    leaf = code / "nsparent_under_test" / "nschild" / "leaf.py"  # no __init__.py anywhere
    leaf.parent.mkdir(parents=True)
    leaf.write_text("VALUE = 7\n")
    # imported by the handler's module: at the load step, whose imports the template learns
    (code / "ns_handler_under_test.py").write_text(
        "from nsparent_under_test.nschild import leaf\n"
        "def handle(request):\n"
        "    return {'value': leaf.VALUE}\n"
    )
    sandbox = Sandbox(
        scratch_root=tmp_path / "scratch",
        isolation="UNSAFE_development",
        python_path=[str(Path(__file__).resolve().parents[3]), str(code), *sys.path],
    )
    with sandbox.start("ns_handler_under_test:handle") as worker:
        assert worker.call({}) == {"value": 7}
        assert worker.call({}) == {"value": 7}  # after the template learnt what it imported
