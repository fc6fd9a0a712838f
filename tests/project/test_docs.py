"""The documentation site builds, its links hold, and its benchmark figures name rows the
benchmark scripts still print.

- ``mkdocs build --strict`` of ``mkdocs.yml`` passes; ``mkdocs.yml`` turns a link to a
  missing page, a missing anchor, an absolute link and a page left out of the ``nav``
  into warnings, which strict mode makes fatal. The same build on a copy with one broken
  link fails, so the build check can fail.
- Every relative link and image of README.md resolves: to a file of the checkout, and a
  link into ``docs/`` to a page of the site's ``nav`` and, with ``#anchor``, to one of
  its headings.
- A figure cites its benchmark row as ```benchmarks/NAME.py` row `LABEL```; LABEL must be
  one of the script's ``ROWS`` (the labels its tables print, or those of the
  ``benchmarks._*`` module that prints its table). Every benchmark script has a cited
  row in ``docs/benchmarks.md``, and every command there uses options the script has.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BENCHMARKS = ROOT / "benchmarks"
CITATION = re.compile(r"`(benchmarks/[A-Za-z0-9_]+\.py)` row `([^`]+)`")
COMMAND = re.compile(r"`python (benchmarks/[A-Za-z0-9_]+\.py)((?: [^`]*)?)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "benchmarks" / "index.html").is_file()
    # the images the pages show are part of the site
    assert (tmp_path / "site" / "panel.png").is_file()
    assert (tmp_path / "site" / "screenshots" / "sidebar-light.png").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("link", "complaint"),
    [
        ("[gone](no-such-page.md)", "no-such-page.md"),
        ("[gone](audits.md#no-such-heading)", "no-such-heading"),
    ],
    ids=["page", "anchor"],
)
def test_a_broken_link_fails_the_build(tmp_path: Path, link: str, complaint: str) -> None:
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "sandbox.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n{link}\n", encoding="utf-8")
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert complaint in built.stdout + built.stderr


def _nav_pages() -> set[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, str):
            pages.add(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(config["nav"])
    return pages


def _anchors(page: Path) -> set[str]:
    """The ids the site gives the page's headings (the toc extension's slugs)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slugify(m[1].strip(), "-") for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def _broken_links(markdown: str, base: Path) -> list[str]:
    """Relative links and images of ``markdown`` (a file in ``base``) that do not resolve."""
    nav = _nav_pages()
    broken = []
    for target in LINK.findall(markdown):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        file = (base / path).resolve() if path else None
        if file is None or not file.exists():
            broken.append(target)
            continue
        if file.is_relative_to(DOCS) and file.suffix == ".md":
            if file.relative_to(DOCS).as_posix() not in nav:
                broken.append(target)
            elif anchor and anchor not in _anchors(file):
                broken.append(target)
    return broken


def test_the_readme_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(LINK.findall(readme)) >= 10
    assert _broken_links(readme, ROOT) == []


def test_a_broken_readme_link_is_caught() -> None:
    assert _broken_links("[x](docs/nowhere.md) [y](docs/audits.md#nowhere)", ROOT) == [
        "docs/nowhere.md",
        "docs/audits.md#nowhere",
    ]
    assert _broken_links("[ok](docs/audits.md#how-an-audit-decides)", ROOT) == []


def _row_labels(script: str) -> set[str]:
    """The labels a benchmark script's tables print: its ``ROWS`` and those of the
    ``benchmarks._*`` modules it imports (which print tables for it)."""
    path = ROOT / script
    modules = [f"benchmarks.{path.stem}"]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "benchmarks":
            modules += [f"benchmarks.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks._"):
            modules.append(str(node.module))
    labels: set[str] = set()
    for name in modules:
        labels |= set(getattr(importlib.import_module(name), "ROWS", ()))
    return labels


def _missing_rows(markdown: str) -> list[tuple[str, str]]:
    missing = []
    for script, label in CITATION.findall(markdown):
        if not (ROOT / script).is_file() or label not in _row_labels(script):
            missing.append((script, label))
    return missing


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_cited_benchmark_rows_exist(page: Path) -> None:
    assert _missing_rows(page.read_text(encoding="utf-8")) == []


def test_a_row_that_no_longer_exists_is_caught() -> None:
    assert _missing_rows("`benchmarks/replay.py` row `(a) per paired sample`") == []
    assert _missing_rows("`benchmarks/replay.py` row `(d) audit, wall`") == []
    assert _missing_rows("`benchmarks/replay.py` row `(a) per sample`") == [
        ("benchmarks/replay.py", "(a) per sample")
    ]
    assert _missing_rows("`benchmarks/gone.py` row `x`") == [("benchmarks/gone.py", "x")]


def _options(script: str) -> set[str]:
    """The option strings of the script's ``add_argument`` calls."""
    tree = ast.parse((ROOT / script).read_text(encoding="utf-8"))
    return {
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }


def test_every_benchmark_has_a_cited_row_and_a_command_it_accepts() -> None:
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    cited = {script for script, _ in CITATION.findall(text)}
    scripts = {f"benchmarks/{p.name}" for p in BENCHMARKS.glob("[a-z]*.py")}
    assert scripts <= cited, f"no figure cites a row of {sorted(scripts - cited)}"
    commands = COMMAND.findall(text)
    assert {script for script, _ in commands} >= scripts
    for script, arguments in commands:
        used = set(re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", arguments))
        assert used <= _options(script), f"{script}: no option {sorted(used - _options(script))}"
