"""A PATH on which some tools are not found, for proving that an install needs none of
them (Node.js), or that a build environment lacks one (jupyter-builder).

The tools usually share a folder such as ``/usr/bin`` with everything else, so dropping
the folder is not an option: each PATH entry holding one of them is replaced by a folder
of links to all its other entries.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

NODE_TOOLS = frozenset({"node", "nodejs", "npm", "npx", "corepack", "yarn", "yarnpkg", "pnpm"})


def path_without(scratch: Path, tools: Iterable[str], *, first: Iterable[Path] = ()) -> str:
    """``PATH`` with ``first`` in front and ``tools`` hidden from the rest; the shadow
    folders are made under ``scratch``."""
    hidden = frozenset(tools)
    entries = [str(p) for p in first]
    for i, entry in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        folder = Path(entry)
        if not entry or not folder.is_dir():
            continue
        names = {p.name for p in folder.iterdir()}
        if not names & hidden:
            entries.append(entry)
            continue
        shadow = scratch / f"path-{i}"
        shadow.mkdir(parents=True)
        for name in sorted(names - hidden):
            (shadow / name).symlink_to(folder / name)
        entries.append(str(shadow))
    path = os.pathsep.join(entries)
    seen = {tool: found for tool in hidden if (found := shutil.which(tool, path=path))}
    assert not seen, f"still on PATH: {seen}"  # a tool in `first` defeats the proof
    return path


def path_without_node(scratch: Path, *, first: Iterable[Path] = ()) -> str:
    return path_without(scratch, NODE_TOOLS, first=first)
