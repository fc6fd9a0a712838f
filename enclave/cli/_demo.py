"""``replay-enclave demo``: the whole product on the embedded default, in one command."""

from __future__ import annotations

from rich.progress import Progress

from .._home import Home, default_home
from .._runtime import Runtime
from ..capture import capture
from ..incidents import ALL
from ._app import HomeOption, JsonOption, app
from ._output import console, emit_json, table


def capture_incidents(runtime: Runtime) -> dict[str, str]:
    """Capture the three reference incidents; returns {agent name: specimen id}."""
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


@app.command()
def demo(home: HomeOption = None, json_out: JsonOption = False) -> None:
    """Init a home, capture the three reference incidents, and show the sealed specimens."""
    root = home or default_home()
    runtime = Runtime.open(Home.init(root))
    try:
        with Progress(console=console, transient=True, disable=json_out) as progress:
            task = progress.add_task("capturing reference incidents", total=len(ALL))
            captured: dict[str, str] = {}
            for name, specimen_id in capture_incidents(runtime).items():
                captured[name] = specimen_id
                progress.advance(task)
        rows = [runtime.ledger.get_specimen(s) for s in captured.values()]
    finally:
        runtime.close()
    items = [
        {
            "agent": r.agent_name,
            "specimen_id": r.specimen_id,
            "manifest_digest": r.manifest_digest,
            "highest_classification": r.highest_classification.value,
            "steps": len(r.steps),
        }
        for r in rows
    ]
    if json_out:
        emit_json({"home": str(root), "specimens": items})
    else:
        columns = ("agent", "specimen_id", "highest_classification", "steps", "manifest_digest")
        table("sealed specimens", columns, ([i[c] for c in columns] for i in items))
