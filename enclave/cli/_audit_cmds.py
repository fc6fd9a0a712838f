"""``audit`` and ``verify``: request a replay audit, check a certificate offline;
``certificates list`` / ``export``: the certificates stored in the database."""

from __future__ import annotations

import json
import re
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._errors import BadInput
from ._app import HomeOption, JsonOption, command_group, open_runtime
from ._inference_view import inference_rows, parse_grants
from ._output import console, emit_json, exported, pairs, rich_console, table

if TYPE_CHECKING:  # the replay engine, signer and database load with the command
    from .._runtime import Runtime
    from ..replay import AuditOutcome, AuditRequest, Intervention

certificates_app = command_group(
    "Signed certificates stored in the database: list them, export them as files."
)


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word is a string value


def build_intervention(
    *,
    call: str | None,
    field: str | None,
    strategy: str | None,
    value: str | None,
    delta: str | None,
    revision: str | None,
    bundle: str | None = None,
) -> Intervention:
    """The options as the one intervention model reads them (same rules and messages as
    the service): ``--value`` and ``--delta`` are JSON (``--delta true`` is not a number);
    ``--revision`` alone implies the revision strategy; a bare ``--field name`` is
    shorthand for the top-level ``/name``."""
    from ..replay import Intervention

    data: dict[str, Any] = {}
    if strategy is not None or revision is None:
        data["strategy"] = strategy
    else:
        data["strategy"] = "revision"
    if field and not field.startswith("/"):
        field = "/" + field
    for name, given in (
        ("call_id", call),
        ("field", field),
        ("bundle", bundle),
        ("revision", revision),
    ):
        if given is not None:
            data[name] = given
    if value is not None:
        data["value"] = parse_value(value)
    if delta is not None:
        data["delta"] = parse_value(delta)
    return Intervention.from_json(data)


def run_with_progress(runtime: Runtime, request: AuditRequest, *, quiet: bool) -> AuditOutcome:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from .._runtime import utc_now
    from ..replay import run_audit

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=rich_console(), transient=True, disable=quiet) as progress:
        task = progress.add_task(f"replaying {request.specimen_id}", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return run_audit(runtime, request, now=utc_now(), progress=advance)


def with_exported_certificate(runtime: Runtime, outcome: AuditOutcome) -> AuditOutcome:
    """``outcome`` with its stored certificate exported to the home's certificates
    folder (``certificate_path`` naming the file), its bundle beside it; unchanged
    when it has none."""
    if outcome.envelope is None:
        return outcome
    import dataclasses

    from .._exports import export_certificates
    from ..replay.certificates import certificate_bundle

    (path,) = export_certificates(
        runtime.ledger.engine,
        runtime.home.certificates_dir,
        [outcome.audit_id],
        bundle_of=partial(certificate_bundle, runtime),
    )
    return dataclasses.replace(outcome, certificate_path=path)


def _interval(pair: list[float], places: int = 4) -> str:
    return f"[{pair[0]:+.{places}f}, {pair[1]:+.{places}f}]"


def _effect_rows(e: dict[str, Any]) -> dict[str, str]:
    """The effect as a person reads it: what moved, how sure, what could have been seen."""
    rows: dict[str, str] = {}
    n = round(e["flips"] / e["flip_rate"]) if e.get("flip_rate") else None
    if e.get("mean_delta") is not None:
        rows["mean paired score delta"] = (
            f"{e['mean_delta']:+.4f}  95% {_interval(e['delta_interval'])}"
        )
        rows["equivalence (TOST)"] = (
            f"90% {_interval(e['equivalence']['delta_interval'])} "
            f"vs tolerance ±{e['score_tolerance']:g}"
        )
    flips = f"{e['flips']}" + (f"/{n}" if n else "")
    rows["decision flips"] = (
        f"{flips} ({e['flip_rate']:.3f})  95% [{e['flip_interval'][0]:.3f}, "
        f"{e['flip_interval'][1]:.3f}]"
    )
    rows["recorded decision rate"] = (
        f"baseline {e['baseline_rate']:.3f} -> intervened {e['intervened_rate']:.3f}"
    )
    mde = e["mde"]
    detectable = [f"flip rate {mde['flip_rate']:.3f}"]
    if mde.get("delta") is not None:
        detectable.insert(0, f"score delta {mde['delta']:g}")
    rows["minimum detectable"] = f"{', '.join(detectable)} (power {mde['power']:g})"
    # none / some / all of the samples (a v3 certificate), or a count (older ones)
    changed = [f"{layer} {n}" for layer, n in e["layer_changes"].items() if _marked(n)]
    rows["layers changed (samples)"] = ", ".join(changed) or "none"
    return rows


def _predicate(outcome: AuditOutcome) -> dict[str, Any]:
    if not outcome.envelope:
        return {}
    import base64

    predicate = json.loads(base64.b64decode(outcome.envelope["payload"])).get("predicate")
    return predicate if isinstance(predicate, dict) else {}


def _recorded_seed_row(seen: dict[str, Any]) -> str:
    if not seen.get("sampled"):
        return "not among the sampled seeds"
    delta = "" if seen.get("delta") is None else f", score delta {seen['delta']:+.4f}"
    flip = "flipped" if seen.get("flip") else "unchanged"
    return f"decision {seen['baseline']} -> {seen['intervened']} ({flip}){delta}"


_AUDIT_ID = re.compile(r"au-[0-9a-f]{16}")

SERVED_WAYS = ("record", "substitute", "intervention", "inference", "unservable", "unused")


def _marked(cell: Any) -> bool:
    """A served-by cell that says something: a count (v2) or some / all (v3)."""
    return cell not in (None, 0, "none")


def show_outcome(outcome: AuditOutcome) -> None:
    console.print(outcome.finding, markup=False, highlight=False)
    data: dict[str, Any] = {
        "audit": outcome.audit_id,
        "classification": outcome.classification.value,
        "auditability": outcome.auditability.class_.value,
    }
    if outcome.auditability.first_unverifiable_step:
        data["first unverifiable step"] = outcome.auditability.first_unverifiable_step
    if outcome.auditability.live_state_fields:
        data["live-state fields read"] = ", ".join(outcome.auditability.live_state_fields)
    predicate = _predicate(outcome)
    if isinstance(predicate.get("effect"), dict):  # what the certificate says, no more
        data.update(_effect_rows(predicate["effect"]))
    if isinstance(predicate.get("recorded_seed"), dict):
        data[f"recorded seed {predicate['recorded_seed']['seed']}"] = _recorded_seed_row(
            predicate["recorded_seed"]
        )
    if outcome.placebo:
        data["placebo"] = "passed" if outcome.placebo.passed else "FAILED"
    if isinstance(predicate.get("cut"), dict):
        cut = predicate["cut"]
        data["replayed from cut"] = f"{cut['name']} ({cut['call_id']})"
    if outcome.failure:
        data["failure"] = f"{outcome.failure} ({outcome.failure_detail})"
    if outcome.disclosure:
        d = outcome.disclosure
        data["disclosure bound"] = f"{d['bits']:.2f} bits (resolution {d['resolution']:g})"
    data["certificate"] = (
        str(outcome.certificate_path)
        if outcome.certificate_path
        else "(none: failed audits are not certified)"
    )
    pairs("audit result", data)
    if isinstance(predicate.get("inference"), dict):
        pairs("governed inference", inference_rows(predicate["inference"]))
    served = predicate.get("served_by")
    if served:
        rows = (
            (
                row["arm"],
                row.get("call") or f"{row['calls']} calls",
                ", ".join(f"{w} {row[w]}" for w in SERVED_WAYS if _marked(row.get(w))),
            )
            for row in served
        )
        table("how calls were served (samples)", ("arm", "calls", "served"), rows, whole=("calls",))


def audit_cmd(
    specimen: Annotated[str, typer.Argument(help="Specimen id.")],
    purpose: Annotated[
        str, typer.Option(help="Why this audit is requested (recorded in the ledger).")
    ],
    call: Annotated[
        str | None, typer.Option(help="Call id of the recorded call to intervene on.")
    ] = None,
    field: Annotated[
        str | None,
        typer.Option(help="Response field of that call (a JSON Pointer), e.g. /limits/daily."),
    ] = None,
    strategy: Annotated[str | None, typer.Option(help="nullify | replace | perturb.")] = None,
    value: Annotated[str | None, typer.Option(help="REPLACE: the alternate value (JSON).")] = None,
    delta: Annotated[
        str | None, typer.Option(help="PERTURB: the bounded change (a JSON number).")
    ] = None,
    revision: Annotated[
        str | None, typer.Option(help="Declared revision swap, e.g. model=r2.")
    ] = None,
    bundle: Annotated[
        str | None,
        typer.Option(
            help="A declared bundle of the call's fields, changed as one "
            "(REPLACE takes a JSON object)."
        ),
    ] = None,
    samples: Annotated[int, typer.Option(help="Paired samples N.")] = 20,
    seed: Annotated[int, typer.Option(help="First sample seed S (samples use S..S+N-1).")] = 1,
    tolerance: Annotated[
        list[str] | None, typer.Option(help="LAYER=VALUE, e.g. score=0.001, readback=ignore.")
    ] = None,
    requester: Annotated[str, typer.Option(help="Who asks (recorded).")] = "cli",
    authoritative: Annotated[
        list[str] | None,
        typer.Option(
            "--authoritative-substitute",
            help="A boundary whose declared substitute is the service itself (repeatable): "
            "the label may rest on its answers to requests the record does not hold.",
        ),
    ] = None,
    from_cut: Annotated[
        str | None,
        typer.Option(
            help="Start every run from this declared cut's recorded state "
            "(the work before it is not re-run; the target must lie after it)."
        ),
    ] = None,
    inference: Annotated[
        list[str] | None,
        typer.Option(
            "--inference",
            help="An inference grant as a JSON object (repeatable): boundary, endpoint "
            "(the operator's name for it), model (the pinned identity), vary, caps "
            "(calls, input_tokens, output_tokens, wall_seconds). After departure, a call "
            "of that boundary the record does not hold is asked of the endpoint.",
        ),
    ] = None,
    detail: Annotated[
        str,
        typer.Option(
            help="coarse (the tight default) or per-sample: every count — a row per "
            "sample, exact served-by counts — in a v2 certificate with a larger bound.",
        ),
    ] = "coarse",
    file: Annotated[
        bool,
        typer.Option(
            "--file/--no-file",
            help="Also export the certificate to the home's certificates folder "
            "(it is stored in the database either way).",
        ),
    ] = True,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Replay a specimen with one declared intervention and certify the comparison."""
    from ..replay import AuditRequest, Tolerances

    intervention = build_intervention(
        call=call,
        field=field,
        strategy=strategy,
        value=value,
        delta=delta,
        revision=revision,
        bundle=bundle,
    )
    request = AuditRequest(
        specimen_id=specimen,
        intervention=intervention,
        purpose=purpose,
        requester=requester,
        samples=samples,
        seed=seed,
        tolerances=Tolerances.parse(tolerance or []),
        from_cut=from_cut,
        authoritative_substitutes=tuple(authoritative or ()),
        inference=parse_grants(inference or ()),
        detail=detail,
    )
    with open_runtime(home) as runtime:
        outcome = run_with_progress(runtime, request, quiet=json_out)
        if file:
            outcome = with_exported_certificate(runtime, outcome)
    if json_out:
        out = outcome.to_dict()
        certified = _predicate(outcome)
        for name in ("effect", "inference"):  # as the signed certificate states them
            if isinstance(certified.get(name), dict):
                out[name] = certified[name]
        emit_json(out)
    else:
        show_outcome(outcome)
    if outcome.failure:
        raise typer.Exit(4)


def verify_cmd(
    certificate: Annotated[
        str,
        typer.Argument(
            help="A certificate or release report file (DSSE JSON), or the id of one "
            "stored in the database (au-..., rr-...)."
        ),
    ],
    home: HomeOption = None,
    public_key: Annotated[
        Path | None, typer.Option(help="Issuer public key PEM (default: the home's).")
    ] = None,
    json_out: JsonOption = False,
    certificates: Annotated[
        Path | None,
        typer.Option(
            help="A release report's certificates as exported files "
            "(default: those stored in the database)."
        ),
    ] = None,
    log_key: Annotated[
        str | None,
        typer.Option(
            "--log-key",
            help="The log's verifier key (ledger checkpoint --public-key), for a bundle: "
            "with --public-key too, the bundle is verified with no home or database.",
        ),
    ] = None,
    witness: Annotated[
        list[str] | None,
        typer.Option(
            "--witness",
            help="A witness's C2SP cosigner key (repeatable): a bundle's checkpoint must "
            "carry its cosignature.",
        ),
    ] = None,
    quorum: Annotated[
        int | None,
        typer.Option(
            min=1, max=64, help="How many of the --witness keys must have cosigned (default: all)."
        ),
    ] = None,
) -> None:
    """Check a certificate's signature, statement, predicate schema and ledger linkage.

    A bundle (<audit>.bundle.json, or a release report's <report>.bundle.json) is
    checked against the log's signed checkpoint instead: with --public-key and
    --log-key, offline, with no home or database."""
    from ledger.certificates import is_bundle

    from .._verification import issuer_key, log_verifier, verify, verify_offline, witness_keys

    document = _read_document(certificate)
    witnesses = witness_keys(witness or (), quorum)
    if _is_report_bundle(document):  # a release report with its proofs
        offline = public_key is not None and log_key is not None
        with nullcontext() if offline else open_runtime(home) as runtime:
            keys = issuer_key(runtime, public_key), log_verifier(runtime, log_key)
        verify_report_bundle_cmd(document, *keys, witnesses, quorum, json_out=json_out)
        return
    if is_bundle(document) and public_key is not None and log_key is not None:
        keys = issuer_key(None, public_key), log_verifier(None, log_key)
        report = verify_offline(document, *keys, witnesses=witnesses, quorum=quorum)
    elif is_bundle(document):
        with open_runtime(home) as runtime:
            keys = issuer_key(runtime, public_key), log_verifier(runtime, log_key)
        report = verify_offline(document, *keys, witnesses=witnesses, quorum=quorum)
    else:
        if log_key is not None or witnesses:
            raise BadInput("--log-key and --witness verify a bundle (<audit>.bundle.json)")
        with open_runtime(home) as runtime:
            envelope = load_envelope(runtime, certificate) if document is _NO_FILE else document
            key = issuer_key(runtime, public_key)
            if isinstance(envelope, dict) and _is_report(envelope):  # a release report
                verify_report_cmd(envelope, key, runtime, certificates, json_out=json_out)
                return
            report = verify(runtime, envelope, public_key=key)
    if json_out:
        emit_json(report.to_dict())
    else:
        if report.finding is not None:
            console.print(report.finding, markup=False, highlight=False)
        table(
            "certificate verification",
            ("step", "check", "result", "detail"),
            ((c.step, c.name, "ok" if c.ok else "FAILED", c.detail) for c in report.checks),
        )
    if not report.ok:
        failed = report.first_failure
        if not json_out:
            console.print(f"[red]verification failed: {failed.name if failed else 'unknown'}[/red]")
        raise typer.Exit(1)
    if not json_out and _isolation(report.statement) != "bwrap":
        console.print(
            "[yellow]isolation: development — not an enclave: the replay behind this "
            "certificate ran without the enclave's wall[/yellow]"
        )


_NO_FILE = object()


def _read_document(given: str) -> Any:
    """The JSON in the file ``given``, or ``_NO_FILE`` when there is no such file
    (``given`` may then be a stored document's id)."""
    path = Path(given)
    try:
        is_file = path.exists()
    except OSError:  # e.g. a name longer than the file system takes: no such file
        is_file = False
    if not is_file:
        return _NO_FILE
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        raise BadInput("certificate file is not valid JSON") from None


def load_envelope(runtime: Runtime, given: str) -> Any:
    """The envelope in the file ``given`` or, when no such file exists and ``given`` is
    a stored certificate's audit id or a stored report's id, the stored one."""
    from ledger import REPORT_ID, stored_certificate, stored_report

    document = _read_document(given)
    if document is _NO_FILE:
        engine = runtime.ledger.engine
        if REPORT_ID.fullmatch(given):
            report = stored_report(engine, given)
            if report is not None:
                return report.envelope
            raise BadInput("no stored release report has that id")
        if _AUDIT_ID.fullmatch(given):
            stored = stored_certificate(engine, given)
            if stored is not None:
                return stored.envelope
            raise BadInput("no stored certificate has that audit id")
        raise BadInput("certificate file not found")
    return document


def _is_report(envelope: dict[str, Any]) -> bool:
    from ..release import is_report

    return is_report(envelope)


def _is_report_bundle(document: Any) -> bool:
    from ..release import is_report_bundle

    return is_report_bundle(document)


def verify_report_cmd(
    envelope: dict[str, Any], key: Any, runtime: Any, folder: Path | None, *, json_out: bool
) -> None:
    """A release report and every certificate it names (``enclave.release``)."""
    from ledger import certificates_by_digest

    from ..release import verify_report
    from ..replay.certificates import RuntimeLedgerLookup

    engine = runtime.ledger.engine
    checks = verify_report(
        envelope,
        public_key=key,
        ledger_lookup=RuntimeLedgerLookup(runtime.ledger),
        certificates_dir=folder,
        certificate_source=None if folder is not None else partial(certificates_by_digest, engine),
    )
    _report_checks(checks, json_out=json_out)


def verify_report_bundle_cmd(
    bundle: dict[str, Any],
    key: Any,
    log_key: Any,
    witnesses: Any,
    quorum: int | None,
    *,
    json_out: bool,
) -> None:
    """A release report bundle, offline: the issuer's key and the log's key alone."""
    from ..release import verify_report_bundle

    checks = verify_report_bundle(
        bundle, public_key=key, log_key=log_key, witnesses=witnesses, quorum=quorum
    )
    _report_checks(checks, json_out=json_out)


def _report_checks(checks: list[tuple[str, bool, str]], *, json_out: bool) -> None:
    if json_out:
        emit_json(
            {
                "ok": all(ok for _, ok, _ in checks),
                "checks": [
                    {"check": name, "ok": ok, "detail": detail} for name, ok, detail in checks
                ],
            }
        )
    else:
        table(
            "release report verification",
            ("check", "result", "detail"),
            ((name, "ok" if ok else "FAILED", detail) for name, ok, detail in checks),
        )
    if not all(ok for _, ok, _ in checks):
        raise typer.Exit(1)


def _isolation(statement: dict[str, Any] | None) -> str | None:
    environment = ((statement or {}).get("predicate") or {}).get("environment") or {}
    return environment.get("isolation") if isinstance(environment, dict) else None


@certificates_app.command("list")
def certificates_list_cmd(
    specimen: Annotated[
        str | None, typer.Option("--specimen", help="Only this specimen's certificates.")
    ] = None,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """List the certificates stored in the database (metadata only)."""
    from ledger import list_certificates

    with open_runtime(home) as runtime:
        found = list_certificates(runtime.ledger.engine, specimen_id=specimen)
    rows = [
        {
            "audit_id": c.audit_id,
            "specimen_id": c.specimen_id,
            "tenant": c.tenant_id,
            "classification": c.classification,
            "issued_at": c.issued_at,
            "envelope_digest": c.envelope_digest,
        }
        for c in found
    ]
    if json_out:
        emit_json({"certificates": rows})
        return
    table(
        "certificates",
        ("audit", "specimen", "tenant", "classification", "issued at"),
        (
            (r["audit_id"], r["specimen_id"], r["tenant"], r["classification"], r["issued_at"])
            for r in rows
        ),
    )


@certificates_app.command("export")
def certificates_export_cmd(
    folder: Annotated[
        Path,
        typer.Argument(help="Where to write <audit>.dsse.json files and their bundles."),
    ],
    audit_ids: Annotated[
        list[str] | None, typer.Argument(help="Audit ids (none: every stored certificate).")
    ] = None,
    home: HomeOption = None,
    json_out: JsonOption = False,
) -> None:
    """Write stored certificates as DSSE JSON files and, beside each, its bundle with
    the proofs of its ledger entries (``verify`` accepts both)."""
    from .._exports import export_certificates
    from ..replay.certificates import certificate_bundle

    with open_runtime(home) as runtime:
        paths = export_certificates(
            runtime.ledger.engine,
            folder,
            audit_ids or (),
            bundle_of=partial(certificate_bundle, runtime),
        )
    exported(paths, folder, "certificate", json_out=json_out)
