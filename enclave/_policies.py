"""Where the declarative ``policies/`` folder is: data, not code.

``$REPLAY_ENCLAVE_POLICY_DIR`` first; then the copy shipped inside the installed package
(``enclave/_policy_files``, found with :mod:`importlib.resources`, so ``pip install
--user``, any prefix and a zipapp all work); then the source tree's ``policies/`` (a
checkout or an editable install).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["ENV_POLICY_DIR", "policies_root"]

ENV_POLICY_DIR = "REPLAY_ENCLAVE_POLICY_DIR"
_PACKAGED = "_policy_files"


def policies_root(env: Mapping[str, str] | None = None) -> Path:
    """The folder of declarative policies this installation reads (``interventions/``,
    the Cedar access policies): ``$REPLAY_ENCLAVE_POLICY_DIR``, else the packaged copy,
    else the source tree's ``policies/``."""
    env = os.environ if env is None else env
    if env.get(ENV_POLICY_DIR):
        return Path(env[ENV_POLICY_DIR])
    packaged = resources.files("enclave").joinpath(_PACKAGED)
    if packaged.is_dir():
        return packaged if isinstance(packaged, Path) else _extracted()
    return Path(__file__).resolve().parents[1] / "policies"


@functools.cache
def _extracted() -> Path:
    """A package inside an archive (a zipapp): its policy files copied out once."""
    root = Path(tempfile.mkdtemp(prefix="replay-enclave-policies-"))
    _copy(resources.files("enclave").joinpath(_PACKAGED), root)
    return root


def _copy(tree: Traversable, target: Path) -> None:
    for item in tree.iterdir():
        if item.is_dir():
            (target / item.name).mkdir()
            _copy(item, target / item.name)
        else:
            (target / item.name).write_bytes(item.read_bytes())
