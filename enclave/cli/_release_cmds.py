"""``regress``, the library's ``specimens tag`` / ``untag``, and ``release list`` /
``show`` / ``export`` / ``verify`` over the reports stored in the database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from .._errors import BadInput
from ._app import HomeOption, JsonOption, command_group, open_runtime
from ._capture_cmds import specimens_app
from ._output import check_writable, console, emit_json, exported, rich_console, table

#: The exit code of a regress whose gate failed (documented in docs/release-gate.md).
GATE_FAILED = 5

release_app = command_group("Signed release reports stored in the database: list, export, verify.")

TagsArg = Annotated[list[str], typer.Argument(help="Tags, e.g. release-gate/procurement.")]


@specimens_app.command("tag")
def tag_cmd(specimen_id: str, tags: TagsArg, home: HomeOption = None) -> None:
    """Add library tags to a sealed specimen (recorded in the ledger)."""
    from ..release import tag_specimen

    with open_runtime(home) as runtime:
        added = tag_specimen(runtime, specimen_id, tags, now=datetime.now(UTC))
    console.print(f"tagged: {', '.join(added) or '(already tagged)'}")


@specimens_app.command("untag")
def untag_cmd(specimen_id: str, tags: TagsArg, home: HomeOption = None) -> None:
    """Remove library tags from a specimen (recorded in the ledger)."""
    from ..release import untag_specimen
    from ..store import validate_id

    validate_id(specimen_id, what="specimen id")
    with open_runtime(home) as runtime:
        removed = untag_specimen(runtime, specimen_id, tags)
    console.print(f"untagged: {', '.join(removed) or '(not tagged)'}")


def regress_cmd(
    tag: Annotated[list[str], typer.Option("--tag", help="Select members with this tag.")] = [],  # noqa: B006 - typer reads the default
    tenant: Annotated[str | None, typer.Option("--tenant")] = None,
    agent: Annotated[str | None, typer.Option("--agent")] = None,
    sealed_after: Annotated[str | None, typer.Option("--sealed-after")] = None,
    sealed_before: Annotated[str | None, typer.Option("--sealed-before")] = None,
    classification: Annotated[str | None, typer.Option("--classification")] = None,
    candidate: Annotated[
        str | None, typer.Option("--candidate", help="The candidate agent, module:ATTR.")
    ] = None,
    candidate_path: Annotated[
        Path | None, typer.Option("--candidate-path", help="The candidate's source root.")
    ] = None,
    candidate_dist: Annotated[
        str | None,
        typer.Option("--candidate-dist", help="The installed distribution providing it."),
    ] = None,
    revision: Annotated[
        str | None, typer.Option("--revision", help="A declared revision swap, e.g. model=r3.")
    ] = None,
    samples: Annotated[int, typer.Option("--samples")] = 100,
    must_hold: Annotated[
        list[str], typer.Option("--must-hold", help="Members with this tag must hold ('*': all).")
    ] = ["must-hold"],  # noqa: B006 - typer reads the default
    authoritative: Annotated[
        list[str],
        typer.Option(
            "--authoritative-substitute",
            help="A boundary whose declared substitute is the service itself (repeatable): "
            "labels may rest on its answers to requests the record does not hold.",
        ),
    ] = [],  # noqa: B006 - typer reads the default
    purpose: Annotated[str, typer.Option("--purpose")] = "release-gate",
    requester: Annotated[str, typer.Option("--requester")] = "ci",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Where to export the signed report (it is stored in the database); "
            "default: the home's reports folder.",
        ),
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML.")] = None,
    local: Annotated[
        bool, typer.Option("--local", help="Run the jobs in this process (no separate worker).")
    ] = False,
    workers: Annotated[
        int, typer.Option("--workers", help="With --local: jobs run at once (1-64).")
    ] = 1,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Rerun a specimen library against a candidate release and sign a release report."""
    from ..release import RegressPlan, Selector, junit_xml, regress, select

    if not 1 <= workers <= 64:
        raise BadInput("--workers must lie in 1..64")
    if out is not None:
        check_writable(out, "--out")
    if junit is not None:
        check_writable(junit, "--junit")
    from ..replay import CandidateCode

    code = None
    if candidate_path is not None and candidate_dist is not None:
        raise BadInput("give one of --candidate-path or --candidate-dist")
    if candidate is not None or candidate_path is not None or candidate_dist is not None:
        if candidate is None or (candidate_path is None and candidate_dist is None):
            raise BadInput("--candidate goes with --candidate-path or --candidate-dist")
        if candidate_dist is not None:
            code = CandidateCode.from_distribution(candidate, candidate_dist)
        elif candidate_path is not None:
            code = CandidateCode.declare(candidate, candidate_path)
    swap = None
    if revision is not None:
        point, sep, identity = revision.partition("=")
        if not sep or not point or not identity:
            raise BadInput("a revision looks like NAME=IDENTITY, e.g. model=r3")
        swap = (point, identity)
    selector = Selector(
        tenant=tenant,
        agent=agent,
        tags=tuple(tag),
        sealed_after=sealed_after,
        sealed_before=sealed_before,
        classification=classification,
    )
    plan = RegressPlan(
        samples=samples,
        purpose=purpose,
        requester=requester,
        candidate=code,
        revision=swap,
        must_hold=tuple(must_hold),
        authoritative_substitutes=tuple(authoritative),
    )
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with open_runtime(home) as runtime:
        selection = select(runtime, selector)
        with Progress(
            TextColumn("regress"),
            BarColumn(),
            MofNCompleteColumn(),
            console=rich_console(),
            transient=True,
            disable=json_out,
        ) as bar:
            task = bar.add_task("specimens", total=len(selection.specimens))

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            envelope, passed = regress(
                runtime,
                selection,
                plan,
                now=datetime.now(UTC),
                local=local,
                progress=advance,
                workers=workers,
            )
        from ledger import report_id_of

        from .._exports import export_reports
        from ..release import report_bundle

        report_id = report_id_of(envelope)
        if out is None:  # beside the home's certificates, never the current folder
            (out,) = export_reports(
                runtime.ledger.engine,
                runtime.home.reports_dir,
                [report_id],
                bundle_of=partial(report_bundle, runtime),
            )
        else:
            out.write_text(json.dumps(envelope, indent=2, sort_keys=True) + "\n")
    import base64

    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    if junit is not None:
        junit.write_bytes(junit_xml(predicate))
    if json_out:
        emit_json(
            {
                "report": str(out),
                "report_id": report_id,
                "gate": predicate["gate"],
                "totals": predicate["totals"],
                "disclosure": predicate["disclosure"],
            }
        )
    else:
        table(
            "release report",
            ("specimen", "label", "reason", "sealed", "must hold"),
            (
                (
                    r["specimen"],
                    r["label"],
                    r["reason"] or "",
                    r["sealed"] or "",
                    "yes" if r["must_hold"] else "",
                )
                for r in predicate["specimens"]
            ),
        )
        verdict = "passed" if passed else "FAILED: " + ", ".join(predicate["gate"]["failing"])
        console.print(f"gate {verdict}; report {report_id}, exported to {out}")
        bound = predicate["disclosure"]
        console.print(
            f"the code under audit chose at most {bound['bits']} bits of this report "
            f"({bound['bits_per_specimen']} per specimen); each certificate states its own"
        )
    if not passed:
        raise typer.Exit(GATE_FAILED)


@release_app.command("list")
def release_list_cmd(home: HomeOption = None, json_out: JsonOption = False) -> None:
    """List the stored release reports, newest first (metadata only)."""
    from ledger import list_reports

    with open_runtime(home) as runtime:
        found = list_reports(runtime.ledger.engine)
    rows = [{**r.summary(), "tenant": r.tenant_id} for r in found]
    if json_out:
        emit_json({"reports": rows})
        return
    table(
        "release reports",
        ("report", "issued at", "gate", "specimens", "tenant", "selection"),
        (
            (
                r["report_id"],
                r["issued_at"],
                "passed" if r["gate_passed"] else "FAILED",
                str(r["specimens"]),
                r["tenant"] or "(several)",
                r["selection_digest"],
            )
            for r in rows
        ),
        whole=("report", "selection"),
    )


@release_app.command("export")
def release_export_cmd(
    folder: Annotated[
        Path, typer.Argument(help="Where to write <report>.dsse.json files and their bundles.")
    ],
    report_ids: Annotated[
        list[str] | None, typer.Argument(help="Report ids rr-... (none: every stored report).")
    ] = None,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Write stored release reports as DSSE JSON files and, beside each, its bundle with
    the proofs of its ledger entry and of every certificate it names (``verify``
    accepts both)."""
    from .._exports import export_reports
    from ..release import report_bundle

    with open_runtime(home) as runtime:
        paths = export_reports(
            runtime.ledger.engine,
            folder,
            report_ids or (),
            bundle_of=partial(report_bundle, runtime),
        )
    exported(paths, folder, "report", json_out=json_out)


@release_app.command("verify")
def release_verify_cmd(
    report: Annotated[str, typer.Argument(help="A stored report's id (rr-...) or a report file.")],
    certificates: Annotated[
        Path | None,
        typer.Option(
            help="Its certificates as exported files (default: those stored in the database)."
        ),
    ] = None,
    public_key: Annotated[
        Path | None, typer.Option(help="Issuer public key PEM (default: the home's).")
    ] = None,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Verify a release report and every certificate it names; a report bundle
    (<report>.bundle.json) against the home's log key, with no database read."""
    from .._verification import issuer_key, log_verifier
    from ._audit_cmds import (
        _is_report,
        _is_report_bundle,
        load_envelope,
        verify_report_bundle_cmd,
        verify_report_cmd,
    )

    with open_runtime(home) as runtime:
        envelope = load_envelope(runtime, report)
        key = issuer_key(runtime, public_key)
        if _is_report_bundle(envelope):
            if certificates is not None:
                raise BadInput("a report bundle carries its certificates: no --certificates")
            log_key = log_verifier(runtime)
            verify_report_bundle_cmd(envelope, key, log_key, (), None, json_out=json_out)
            return
        if not isinstance(envelope, dict) or not _is_report(envelope):
            raise BadInput("that is not a release report")
        verify_report_cmd(envelope, key, runtime, certificates, json_out=json_out)
