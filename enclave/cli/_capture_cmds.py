"""``init``, ``agents``, ``capture``, ``specimens``, ``ledger`` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ledger import raise_unchained, read_summaries

from .._checkpoints import issue_checkpoint, read_checkpoint, verified_range
from .._errors import BadInput
from .._home import Home, default_home
from ._app import HomeOption, JsonOption, command_group, open_runtime
from ._output import console, emit_json, pairs, table

if TYPE_CHECKING:
    # the hash-chain code loads with the commands that check it
    from ledger import LedgerPosition
    from ledger.certificates.tlog import Checkpoint

    from .._runtime import Runtime

specimens_app = command_group("Sealed specimens (metadata only).")
ledger_app = command_group("The evidence ledger.")


def init(home: HomeOption = None) -> None:
    """Create an enclave home (SQLite ledger, local keys, payload store)."""
    root = home or default_home()
    created = Home.init(root)
    open_runtime(created.root).close()  # creates and migrates the ledger
    console.print(f"initialised enclave home at {created.root}")


def agents(json_out: JsonOption = False) -> None:
    """List registered agents (entry point group ``replay_enclave.agents``)."""
    from ..capture import available_agents

    found = available_agents()
    if json_out:
        emit_json(found)
    else:
        table("agents", ("name", "target"), sorted(found.items()))


def read_input_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise BadInput("input file not found") from None
    except (OSError, ValueError, RecursionError):
        # never echo the document, nor link to the json error that carries it in .doc;
        # absurd nesting is malformed input too, not an internal fault
        raise_unchained(BadInput("input file is not valid JSON"))
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), dict):
        raise BadInput("input file must be an object with an 'inputs' object")
    if not isinstance(data.get("tenant"), str):
        raise BadInput("input file needs a 'tenant' string")
    overrides = data.get("classification", {})
    if not isinstance(overrides, dict) or not all(isinstance(v, str) for v in overrides.values()):
        raise BadInput("'classification' must map field names to classification names")
    return data


def capture_cmd(
    agent: Annotated[
        str,
        typer.Argument(
            help="Agent name, or module:attribute (an AgentSpec or a framework's agent)."
        ),
    ],
    input_file: Annotated[
        Path,
        typer.Option(
            "--input",
            help="JSON: {tenant, seed, inputs}; for a framework's agent also decision "
            "(and score, model, version).",
        ),
    ],
    home: HomeOption = None,
    json_out: JsonOption = False,
    durable: Annotated[bool, typer.Option(help="fsync every step as it is captured.")] = False,
) -> None:
    """Run an agent live, capture every boundary crossing, and seal the specimen.

    A framework's agent object (an Agents SDK or pydantic-ai ``Agent``) is captured through
    its adapter: ``inputs.input`` is the run's input, ``decision`` names the member of its
    output that is the decision (docs/adapters/)."""
    from ..capture import FRAMEWORK_OPTIONS, capture, framework_reference, load_agent

    data = read_input_file(input_file)
    if any(key in data for key in FRAMEWORK_OPTIONS):
        agent = framework_reference(agent, data)
    spec = load_agent(agent)
    with open_runtime(home) as runtime:
        result = capture(
            runtime,
            spec,
            data["inputs"],
            tenant_id=data["tenant"],
            seed=data.get("seed", 0),
            classification=data.get("classification"),
            durable=durable,
        )
    summary = {
        "specimen_id": result.specimen_id,
        "tenant": result.tenant_id,
        "manifest_digest": result.manifest_digest,
        "ledger_index": result.position.index,
        "steps": result.steps,
        "holes": result.holes,
    }
    if json_out:
        emit_json(summary)
    else:
        pairs("sealed specimen", summary)


@specimens_app.command("list")
def specimens_list(
    home: HomeOption = None,
    json_out: JsonOption = False,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="At most this many.")] = 50,
    before: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=2**63 - 1,
            help="Only specimens sealed before this ledger index (the next page).",
        ),
    ] = None,
) -> None:
    """List sealed specimens, newest first; a full page ends with the --before for the next."""
    # An embedded ledger is read as it is, without loading the database layer.
    page = read_summaries(
        Home.open(home or default_home()).ledger_url(),
        tenant_id=tenant,
        agent_name=agent,
        limit=limit,
        before=before,
    )
    if page is None:
        from ledger import SpecimenFilter

        with open_runtime(home) as runtime:
            page = runtime.ledger.specimen_page(
                SpecimenFilter(tenant_id=tenant, agent_name=agent), limit=limit, before=before
            )
    if json_out:  # the ledger's own projection, the same as the service's items
        emit_json([r.to_dict() for r in page.items])
    else:  # a table for people: the agent with its version, in fewer columns
        columns = (
            "specimen_id",
            "tenant",
            "agent",
            "highest_classification",
            "steps",
            "sealed_at",
            "erased",
        )
        cells = (
            (
                r.specimen_id,
                r.tenant_id,
                f"{r.agent_name}@{r.agent_version}",
                r.highest_classification.value,
                r.step_count,
                r.sealed_at,
                r.erased,
            )
            for r in page.items
        )
        table("sealed specimens", columns, cells, whole=("specimen_id", "highest_classification"))
    if page.next_before is not None:  # on stderr: --json output stays a plain list
        typer.echo(f"more: --before {page.next_before}", err=True)


@specimens_app.command("show")
def specimens_show(
    specimen_id: Annotated[str, typer.Argument(help="Specimen id.")],
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show one specimen: identities, digests, classifications and holes — never content."""
    from ledger import NotFound

    from .._retention import effective_retention_of

    with open_runtime(home) as runtime:
        try:
            record = runtime.ledger.get_specimen(specimen_id)
        except NotFound:
            raise BadInput("no sealed specimen has that id") from None
        retention = effective_retention_of(runtime, specimen_id, record.retention_class)
    if json_out:
        emit_json(
            {
                "manifest_digest": record.manifest_digest,
                "manifest": record.manifest,
                "effective_retention": retention,
            }
        )
        return

    # Identities are the agent's declared ones or keyed digests (a run-time alias,
    # resolved identity or token is never in the ledger in clear); digests are shortened.
    def shown(value: Any) -> str:
        text = "" if value is None else str(value)
        return text[:24] + "…" if text.startswith("hmac-sha256:") else text

    code = record.manifest.get("code") or {}
    pairs(
        f"specimen {record.specimen_id}",
        {
            "tenant": record.tenant_id,
            "agent": f"{record.agent_name}@{record.agent_version}",
            "manifest_digest": record.manifest_digest,
            "highest_classification": record.highest_classification.value,
            "strategies": ", ".join(record.adapter.strategies),
            "code": f"{code.get('digest') or '(not identified)'} ({code.get('interpreter', '?')})",
            "sealed_at": record.sealed_at,
            "effective_retention": retention,
        },
    )
    rows = []
    for step in record.manifest["steps"]:
        for f in step["fields"]:
            rows.append(
                (
                    step["seq"],
                    step["call_id"],
                    step["kind"],
                    shown(step.get("alias")),
                    shown(step.get("resolved")),
                    f["side"],
                    f["path"],
                    f["classification"],
                    f["retention"],
                    (f["digest"] or "(hole)")[:24],
                )
            )
    table(
        "fields",
        (
            "seq",
            "call",
            "kind",
            "alias",
            "resolved",
            "side",
            "path",
            "class",
            "retention",
            "digest",
        ),
        rows,
    )


@ledger_app.command("verify")
def ledger_verify(
    home: HomeOption = None,
    json_out: JsonOption = False,
    head: Annotated[
        str | None, typer.Option(help="Saved head INDEX:HASH (default: the home's ledger.head).")
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Check every entry, trusting no checkpoint.")
    ] = False,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint",
            help="A checkpoint this log signed (ledger checkpoint): prove the ledger "
            "extends it and check the entries after it.",
        ),
    ] = None,
) -> None:
    """Verify the hash chain and Merkle tree against a saved head from the last
    verified checkpoint, or from a signed one (every entry with --full); name the first
    bad index; record the new checkpoint."""
    from ledger import read_saved_head

    if full and checkpoint is not None:
        raise BadInput("--full checks every entry: it takes no --checkpoint")
    with open_runtime(home) as runtime:
        signed = _signed_checkpoint(runtime, checkpoint) if checkpoint else None
        saved = _parse_head(head) if head else read_saved_head(runtime.home.head_path)
        report = runtime.ledger.verify(saved, incremental=not full, record=True, signed=signed)
    result = {
        "ok": report.ok,
        "length": report.length,
        "verified_from": report.verified_from,
        "head": None
        if report.head is None
        else {"index": report.head.index, "hash": report.head.entry_hash},
        "first_bad_index": report.first_bad_index,
        "reason": report.reason,
    }
    if signed is not None:
        result["signed_checkpoint"] = signed.size
    if json_out:
        emit_json(result)
    elif report.ok:
        said = verified_range(report.length, report.verified_from, signed is not None)
        console.print(f"ledger verified: {said}")
    else:
        where = report.first_bad_index
        console.print(f"[red]ledger verification FAILED at index {where}: {report.reason}[/red]")
    if not report.ok:
        raise typer.Exit(1)


def _signed_checkpoint(runtime: Runtime, path: Path) -> Checkpoint:
    """The checkpoint in the signed note at ``path``, verified with the log's key."""
    try:
        note = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise BadInput("the checkpoint file cannot be read") from None
    return read_checkpoint(runtime, note)


@ledger_app.command("checkpoint")
def ledger_checkpoint(
    home: HomeOption = None,
    json_out: JsonOption = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the signed note to this file.")
    ] = None,
    public_key: Annotated[
        bool,
        typer.Option(
            "--public-key",
            help="Print only the log's verifier key (to publish beside the issuer key); "
            "sign nothing.",
        ),
    ] = False,
) -> None:
    """Sign the ledger's Merkle tree as it is now as a C2SP checkpoint (a signed note),
    after proving it extends the last one signed; print the note."""
    from .._log_key import LogKey

    if public_key:
        if out is not None:
            raise BadInput("--public-key signs nothing: it takes no --out")
        with open_runtime(home) as runtime:
            verifier = LogKey.of(runtime).verifier.encode()
        if json_out:
            emit_json({"verifier_key": verifier})
        else:
            typer.echo(verifier)
        return
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        raise BadInput("the checkpoint file cannot be written")  # before anything is signed
    with open_runtime(home) as runtime:
        issued = issue_checkpoint(runtime)
    if out is not None:
        try:
            out.write_text(issued.note, encoding="utf-8")
        except OSError:
            raise BadInput("the checkpoint file cannot be written") from None
    witnessed = issued.witnesses
    if json_out:
        emit_json(issued.to_dict())
    else:
        typer.echo(issued.note, nl=False)
        _said_of_checkpoint(issued.signed, issued.verifier_key, witnessed)
    if any(said != "cosigned" for said in witnessed.values()):
        raise typer.Exit(1)


def _said_of_checkpoint(signed: Any, verifier: str, witnessed: dict[str, str]) -> None:
    """What stderr says beside the note: what it extends, the key, each witness."""
    checkpoint = signed.checkpoint
    proven = (
        "the first checkpoint of this log"
        if signed.previous_size is None
        else f"proven to extend the checkpoint of {signed.previous_size} entries"
    )
    # beside the note, not in it: stdout is the note alone
    typer.echo(f"checkpoint of {checkpoint.size} entries, {proven}", err=True)
    typer.echo(f"log verifier key: {verifier}", err=True)
    for name, said in witnessed.items():
        typer.echo(f"witness {name}: {said}", err=True)


@ledger_app.command("head")
def ledger_head(home: HomeOption = None, json_out: JsonOption = False) -> None:
    """Print the current chain head (index and hash) to save elsewhere."""
    with open_runtime(home) as runtime:
        head = runtime.ledger.head()
    data = None if head is None else {"index": head.index, "hash": head.entry_hash}
    if json_out:
        emit_json(data)
    else:
        console.print("empty ledger" if head is None else f"{head.index}:{head.entry_hash}")


def _parse_head(text: str) -> LedgerPosition:
    from ledger import LedgerPosition

    index, sep, digest = text.partition(":")
    if not sep or not index.isdigit():
        raise BadInput("--head must look like INDEX:HASH")
    return LedgerPosition(index=int(index), entry_hash=digest)
