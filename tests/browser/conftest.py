"""Fixtures for the real-browser tests of the analyst front end.

Run them in their own pytest invocation (the default run ignores this folder):

    python -m pytest tests/browser -o addopts="--strict-markers -ra"

* ``stack``  — a real enclave service and worker (``tests.browser.stack``);
* ``lab``    — a factory starting ``jupyter lab`` for one analyst, with that analyst's
  token and the service URL in its environment, the ``jupyter_ext`` server extension
  enabled, temporary workspaces and settings, and ``window.jupyterapp`` exposed;
* ``browser`` — Debian's ``/usr/bin/chromium`` driven by Playwright (no browser
  download), one persistent context per session;
* ``recorded_page`` — a page that records every HTTP response body and every WebSocket
  frame it receives, for the canary scan.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.canary import INCIDENT_CANARIES, find_canaries

from .stack import EnclaveStack, child_env, free_port, start_stack, stop, wait_http

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    proc: subprocess.Popen[bytes]

    def page_url(self, path: str = "lab?reset") -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.url}/{path}{sep}token={self.token}"


@dataclass
class Recorder:
    bodies: list[bytes] = field(default_factory=list)
    frames: list[bytes] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnclaveStack]:
    started = start_stack(tmp_path_factory.mktemp("enclave"))
    yield started
    stop(started.procs)


def _lab_config(base: Path) -> dict[str, str]:
    config, settings, workspaces = base / "config", base / "settings", base / "workspaces"
    for d in (config, settings, workspaces):
        d.mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}})
    )
    notify = settings / "@jupyterlab" / "apputils-extension"
    notify.mkdir(parents=True, exist_ok=True)
    (notify / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    return {"config": str(config), "settings": str(settings), "workspaces": str(workspaces)}


def _start_lab(base: Path, stack: EnclaveStack, analyst: dict[str, str], issuer_key: Path) -> Lab:
    """A JupyterLab on loopback in ``base`` whose server extension speaks for the analyst
    named by ``analyst`` (``REPLAY_ENCLAVE_TOKEN`` or ``REPLAY_ENCLAVE_TOKEN_FILE``: the
    other is removed from the environment) and trusts ``issuer_key``."""
    root = base / "root"
    root.mkdir()
    dirs = _lab_config(base)
    port, token = free_port(), secrets.token_hex(16)
    env = child_env(
        {
            "JUPYTER_CONFIG_DIR": dirs["config"],
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
            "REPLAY_ENCLAVE_URL": stack.url,
            "REPLAY_ENCLAVE_ISSUER_KEY": str(issuer_key),
            **analyst,
        }
    )
    for name in {"REPLAY_ENCLAVE_TOKEN", "REPLAY_ENCLAVE_TOKEN_FILE"} - set(analyst):
        env.pop(name, None)
    with open(base / "lab.log", "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--allow-root",
                "--ip=127.0.0.1",
                f"--port={port}",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True",
                f"--LabApp.workspaces_dir={dirs['workspaces']}",
                f"--LabApp.user_settings_dir={dirs['settings']}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(root),
        )
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/api/status", proc=proc, headers={"Authorization": f"token {token}"})
    return Lab(url=url, token=token, root=root, proc=proc)


@pytest.fixture(scope="session")
def lab(
    stack: EnclaveStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], Lab]]:
    started: list[Lab] = []

    def start(analyst: str) -> Lab:
        base = tmp_path_factory.mktemp(f"lab-{analyst}")
        tokens = {"REPLAY_ENCLAVE_TOKEN": stack.tokens[analyst]}
        started.append(_start_lab(base, stack, tokens, stack.issuer_key))
        return started[-1]

    yield start
    stop([lab.proc for lab in started])


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} is missing")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 2400},
        )
        context.set_default_timeout(60_000)
        yield context
        context.close()


@pytest.fixture
def recorded_page(browser: Any) -> Iterator[tuple[Any, Recorder]]:
    from playwright.sync_api import Error as PlaywrightError

    page = browser.new_page()
    record = Recorder()

    def on_response(response: Any) -> None:
        record.urls.append(response.url)
        try:
            record.bodies.append(response.body())
        except PlaywrightError:
            pass  # redirects and aborted loads have no body

    def on_websocket(ws: Any) -> None:
        def keep(payload: str | bytes) -> None:
            record.frames.append(payload.encode() if isinstance(payload, str) else payload)

        ws.on("framereceived", keep)

    page.on("response", on_response)
    page.on("websocket", on_websocket)
    yield page, record
    page.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def copy_notebook(lab: Lab, name: str = "investigation.ipynb") -> Path:
    source = Path(__file__).resolve().parents[2] / "examples" / name
    target = lab.root / name
    shutil.copyfile(source, target)
    return target


@pytest.fixture(scope="session")
def lab_trusting(
    stack: EnclaveStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str, Path], Lab]]:
    """Like ``lab``, but the server extension trusts ``issuer_key`` for ``/enclave/verify``
    (the certificate viewer's tests use the golden certificates' issuer), and ``log_key``
    for bundles when given."""
    started: list[Lab] = []

    def start(analyst: str, issuer_key: Path, log_key: str | None = None) -> Lab:
        base = tmp_path_factory.mktemp(f"lab-trusting-{analyst}")
        env = {"REPLAY_ENCLAVE_TOKEN": stack.tokens[analyst]}
        if log_key is not None:  # the ledger's verifier key, for bundles
            env["REPLAY_ENCLAVE_LOG_KEY"] = log_key
        started.append(_start_lab(base, stack, env, issuer_key))
        return started[-1]

    yield start
    stop([lab.proc for lab in started])


def lab_settings(lab: Lab, plugin: str, values: dict[str, Any]) -> None:
    """Write a user setting before the page loads (``<package>:<plugin>`` ids)."""
    package, name = plugin.split(":", 1)
    target = lab.root.parent / "settings" / package / f"{name}.jupyterlab-settings"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(values))


@dataclass
class SwitchableLab(Lab):
    """A JupyterLab whose server extension reads the analyst's token from ``token_file``
    on every request: writing another analyst's token there switches who the sidebar
    speaks for, without a second JupyterLab."""

    token_file: Path = Path()

    def act_as(self, token: str) -> None:
        self.token_file.write_text(token + "\n")
        self.token_file.chmod(0o600)


@pytest.fixture(scope="module")
def switchable_lab(
    stack: EnclaveStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SwitchableLab]:
    """One JupyterLab for a module, first acting as alice (see ``SwitchableLab``)."""
    base = tmp_path_factory.mktemp("lab-switchable")
    token_file = base / "analyst.token"
    token_file.write_text(stack.tokens["alice"] + "\n")
    token_file.chmod(0o600)
    lab = _start_lab(base, stack, {"REPLAY_ENCLAVE_TOKEN_FILE": str(token_file)}, stack.issuer_key)
    yield SwitchableLab(
        url=lab.url, token=lab.token, root=lab.root, proc=lab.proc, token_file=token_file
    )
    stop([lab.proc])


def assert_no_canary(record: Recorder, page: Any, *files: Path) -> None:
    """No planted canary in the page's DOM, any HTTP response or WebSocket frame the page
    saw, or ``files``; and the sweep saw real traffic."""
    sources = {
        "page DOM": page.content().encode(),
        "HTTP responses": b"\n".join(record.bodies),
        "WebSocket frames": b"\n".join(record.frames),
    }
    for path in files:
        sources[path.name] = path.read_bytes()
    assert sum(map(len, sources.values())) > 100_000  # the scan saw real traffic
    for where, data in sources.items():
        assert find_canaries(data, INCIDENT_CANARIES) == [], f"canary in {where}"
