"""HTML and plain-text views of what the service returns: metadata and certificates only.

Every value is escaped. Stable hooks for tests and styling: ``enclave-classification``,
``enclave-histogram``, ``enclave-disclosure`` (``data-bits``), ``enclave-verify-report``
and ``enclave-verify-check`` (``data-ok``), ``enclave-error`` (``data-code``),
``enclave-specimens``, ``enclave-audit`` (``data-status``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from ._errors import EnclaveClientError, ServiceRefused
from ._histogram import binned_histogram_svg, histogram_svg, interval_svg
from ._inference_view import inference_html, inference_lines
from ._wire import AuditStatus, VerifyReport

__all__ = [
    "STYLE",
    "audit_html",
    "audit_text",
    "badge_html",
    "certificate_html",
    "certificate_text",
    "error_html",
    "error_text",
    "specimens_html",
    "specimens_text",
    "summary_finding",
    "verify_html",
    "verify_text",
]

STYLE = """<style>
.enclave-card{font-family:system-ui,sans-serif;font-size:13px;line-height:1.4}
.enclave-card table{border-collapse:collapse;margin:4px 0}
.enclave-card td,.enclave-card th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.enclave-classification{display:inline-block;padding:3px 10px;border-radius:12px;
 color:#fff;font-weight:600;background:#6c757d}
.enclave-classification[data-tone=effect]{background:#b03a2e}
.enclave-classification[data-tone=none]{background:#2e7d32}
.enclave-classification[data-tone=limited]{background:#a66d00}
.enclave-verify-check[data-ok=true]::before{content:"\\2714  ";color:#2e7d32}
.enclave-verify-check[data-ok=false]::before{content:"\\2718  ";color:#b03a2e}
.enclave-error{color:#b03a2e;font-weight:600}
.enclave-finding{font-size:14px;margin:6px 0;max-width:60em}
</style>"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _num(value: Any, fmt: str = "{:+.4f}") -> str:
    return fmt.format(value) if isinstance(value, int | float) else "—"


def _interval(pair: Any, fmt: str = "{:+.4f}") -> str:
    if isinstance(pair, Sequence) and len(pair) == 2:
        return f"[{_num(pair[0], fmt)}, {_num(pair[1], fmt)}]"
    return "—"


_TONES = {"influential": "effect", "equivalent": "none", "no-measurable-influence": "none"}


def _tone(classification: str) -> str:
    """``effect``, ``none`` or ``limited`` (observable-only, baseline not reproduced...)."""
    return _TONES.get(classification, "limited")


def badge_html(classification: str | None, auditability: str | None = None) -> str:
    label = classification or "pending"
    return (
        f'<span class="enclave-classification" data-classification="{_e(label)}" '
        f'data-auditability="{_e(auditability)}" data-tone="{_tone(label)}">{_e(label)}</span>'
    )


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], css: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# -- specimens and audits -----------------------------------------------------------

# keys of the service's specimen summary (``ledger.SpecimenSummary.to_dict()``)
_SPECIMEN_COLUMNS = (
    "specimen_id",
    "tenant_id",
    "agent_name",
    "agent_version",
    "highest_classification",
    "step_count",
    "sealed_at",
    "legal_hold",
)


def specimens_html(page: Mapping[str, Any], *, first: int | None = None) -> str:
    """A page of specimens; ``first`` is the page's position in the listing when the
    caller knows it (a cursor page does not say where it starts)."""
    items = page.get("items") or []
    rows = "".join(
        f'<tr data-specimen-id="{_e(it.get("specimen_id"))}">'
        + "".join(f"<td>{_e(it.get(c))}</td>" for c in _SPECIMEN_COLUMNS)
        + "</tr>"
        for it in items
    )
    head = "".join(f"<th>{_e(c.replace('_', ' '))}</th>" for c in _SPECIMEN_COLUMNS)
    if not items:
        shown = "0"
    elif first is None:
        shown = str(len(items))
    else:
        shown = f"{first + 1}–{first + len(items)}"
    return (
        f'<div class="enclave-card">{STYLE}<table class="enclave-specimens" data-total='
        f'"{_e(page.get("total"))}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        f'<div class="enclave-page">specimens {shown} of {_e(page.get("total"))}</div></div>'
    )


def specimens_text(page: Mapping[str, Any]) -> str:
    lines = ["  ".join(_SPECIMEN_COLUMNS[:6])]
    for it in page.get("items") or []:
        lines.append("  ".join(str(it.get(c)) for c in _SPECIMEN_COLUMNS[:6]))
    lines.append(f"({len(page.get('items') or [])} of {page.get('total')})")
    return "\n".join(lines)


def audit_html(status: AuditStatus) -> str:
    total = max(status.progress_total, 1)
    detail = f" — failure: {_e(status.failure_code)}" if status.failure_code else ""
    return (
        f'<div class="enclave-audit" data-audit-id="{_e(status.audit_id)}" '
        f'data-status="{_e(status.status)}"><code>{_e(status.audit_id)}</code> '
        f'<b class="enclave-audit-status">{_e(status.status)}</b> '
        f'<progress max="{total}" value="{status.progress_done}"></progress> '
        f"{status.progress_done}/{status.progress_total}"
        + (
            " " + badge_html(status.classification, status.auditability)
            if status.classification
            else ""
        )
        + f"{detail}"
        + ("" if status.finding is None else _finding_html(status.finding, "status"))
        + "</div>"
    )


def audit_text(status: AuditStatus) -> str:
    text = f"{status.audit_id} {status.status} {status.progress_done}/{status.progress_total}"
    if status.classification:
        text += f" {status.classification} ({status.auditability})"
    if status.failure_code:
        text += f" failure: {status.failure_code}"
    if status.finding is not None:
        text += f"\n{status.finding}"
    return text


# -- certificates ---------------------------------------------------------------------


def _layers_rows(layers: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, layer in sorted(layers.items()):
        if not isinstance(layer, Mapping):
            continue
        rows.append(
            [
                name,
                "reproduced" if layer.get("ok") else "DIVERGED",
                _num(layer.get("similarity"), "{:.3f}"),
                "—" if layer.get("equal") is None else ("equal" if layer["equal"] else "differs"),
                _num(layer.get("delta"), "{:+.6f}"),
                _num(layer.get("tolerance"), "{:g}"),
                _changed_fields(layer.get("changed_fields")),
            ]
        )
    return rows


def _changed_fields(fields: Any) -> str:
    """A v3 certificate counts a layer's changed fields; older ones named them."""
    if isinstance(fields, int) and not isinstance(fields, bool):
        return f"{fields} field{'s' if fields != 1 else ''}" if fields else ""
    return ", ".join(map(str, fields or []))


def _short(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _lineage_item(link: Mapping[str, Any]) -> str:
    rest = ", ".join(f"{k}={_short(v)}" for k, v in sorted(link.items()) if k != "kind")
    return f'<li data-kind="{_e(link.get("kind"))}"><b>{_e(link.get("kind"))}</b> {_e(rest)}</li>'


def summary_finding(summary: Mapping[str, Any]) -> str:
    """The finding of a certificate's decoded predicate (``ledger.certificates.finding``),
    or why it states none. Only a v3 predicate has ``substituted``, only a v2 one
    ``sample_rows``."""
    from ledger.certificates import (
        PREDICATE_TYPE,
        PREDICATE_TYPE_V1,
        PREDICATE_TYPE_V2,
        PredicateInvalid,
        finding,
    )

    if "substituted" in summary:
        kind = PREDICATE_TYPE
    elif "sample_rows" in summary:
        kind = PREDICATE_TYPE_V2
    else:
        kind = PREDICATE_TYPE_V1
    try:
        return finding(summary, kind)
    except PredicateInvalid:
        return "No finding: this certificate's figures do not pass their checks."


def _finding_html(text: str, source: str) -> str:
    return f'<p class="enclave-finding" data-source="{source}">{_e(text)}</p>'


def certificate_html(summary: Mapping[str, Any], *, audit_id: str | None = None) -> str:
    """The certificate's predicate as a card (badge, baseline layers, effect with a
    histogram, placebo, governed inference, lineage, what is not established)."""
    aud = summary.get("auditability") or {}
    aud_class = aud.get("class") if isinstance(aud, Mapping) else aud
    request = summary.get("request") or {}
    parts = [
        f'<div class="enclave-card enclave-certificate" data-audit-id="{_e(audit_id)}">',
        STYLE,
        f"<h3>Certificate {_e(audit_id)}</h3>",
        _finding_html(summary_finding(summary), "certificate"),
        badge_html(summary.get("classification"), aud_class),
        f' <span class="enclave-auditability">{_e(aud_class)}</span>',
    ]
    if isinstance(aud, Mapping) and aud.get("reason"):
        parts.append(f'<p class="enclave-auditability-reason">{_e(aud["reason"])}</p>')
    parts.append(
        _table(
            ("specimen", "call", "strategy", "purpose", "samples", "seed"),
            [
                [
                    request.get("specimen"),
                    request.get("call"),
                    request.get("strategy"),
                    request.get("purpose"),
                    request.get("samples"),
                    request.get("seed"),
                ]
            ],
            "enclave-request",
        )
    )
    baseline = summary.get("baseline")
    if isinstance(baseline, Mapping):
        parts.append(
            f"<h4>Baseline: {'reproduced' if baseline.get('reproduced') else 'NOT reproduced'}</h4>"
        )
        parts.append(
            _table(
                (
                    "layer",
                    "baseline",
                    "similarity",
                    "equality",
                    "delta",
                    "tolerance",
                    "changed fields",
                ),
                _layers_rows(baseline.get("layers") or {}),
                "enclave-layers",
            )
        )
    effect = summary.get("effect")
    if isinstance(effect, Mapping):
        conf = effect.get("confidence")
        level = f"{conf:.0%}" if isinstance(conf, float) else "95%"
        parts.append("<h4>Comparison (paired samples)</h4>")
        parts.append(
            _table(
                ("measure", "estimate", f"{level} interval"),
                [
                    [
                        "mean paired score delta",
                        _num(effect.get("mean_delta")),
                        _interval(effect.get("delta_interval")),
                    ],
                    [
                        "decision flip rate",
                        _num(effect.get("flip_rate"), "{:.3f}"),
                        _interval(effect.get("flip_interval"), "{:.3f}"),
                    ],
                    [
                        "decision rate: baseline → intervened",
                        f"{_num(effect.get('baseline_rate'), '{:.3f}')} → "
                        f"{_num(effect.get('intervened_rate'), '{:.3f}')}",
                        "",
                    ],
                ],
                "enclave-effect",
            )
        )
        parts.append(_histogram(effect))
    else:
        parts.append('<p class="enclave-no-effect">No effect is reported by this certificate.</p>')
    placebo = summary.get("placebo")
    if isinstance(placebo, Mapping):
        verdict = "passed" if placebo.get("passed") else "FAILED"
        parts.append(
            f'<p class="enclave-placebo" data-passed="{str(bool(placebo.get("passed"))).lower()}">'
            f"Placebo control: <b>{verdict}</b> "
            f"(max |delta| {_num(placebo.get('max_abs_delta'), '{:.2g}')}, "
            f"flips {_e(placebo.get('flips'))})</p>"
        )
    else:
        parts.append('<p class="enclave-placebo" data-passed="none">Placebo control: not run</p>')
    parts.append(inference_html(summary))
    parts.append(_disclosure_html(summary.get("disclosure")))
    lineage = [link for link in summary.get("lineage") or [] if isinstance(link, Mapping)]
    parts.append(
        '<h4>Lineage</h4><ol class="enclave-lineage">'
        + "".join(_lineage_item(link) for link in lineage)
        + "</ol>"
    )
    parts.append(
        '<h4>Not established</h4><ul class="enclave-not-established">'
        + "".join(f"<li>{_e(s)}</li>" for s in summary.get("not_established") or [])
        + "</ul>"
    )
    parts.append(
        f'<p class="enclave-issued">issued {_e(summary.get("issued_at"))} by '
        f"<code>{_e(summary.get('issuer'))}</code></p></div>"
    )
    return "".join(parts)


def _histogram(effect: Mapping[str, Any]) -> str:
    """The certificate's fixed-bin histogram (v2); v1 certificates carried raw deltas; a
    v3 certificate discloses no per-sample figures, so it has no histogram."""
    if "histogram" not in effect and "deltas" not in effect:
        interval, mean = effect.get("delta_interval"), effect.get("mean_delta")
        if not isinstance(interval, Sequence) or not isinstance(mean, int | float):
            return ""  # a categorical outcome: decided on flips alone
        equivalence = (effect.get("equivalence") or {}).get("delta_interval")
        tolerance = effect.get("score_tolerance")
        return interval_svg(
            mean,
            interval,
            equivalence if isinstance(equivalence, Sequence) else None,
            tolerance if isinstance(tolerance, int | float) else 0.0,
        )
    binned = effect.get("histogram")
    if isinstance(binned, Mapping):
        return binned_histogram_svg(
            binned.get("edges") or [],
            binned.get("counts") or [],
            effect.get("delta_interval"),
            effect.get("mean_delta"),
        )
    return histogram_svg(effect.get("deltas") or [], effect.get("delta_interval"))


def _disclosure_bits(disclosure: Any) -> float | None:
    if isinstance(disclosure, Mapping):
        bits = disclosure.get("bits")
        if isinstance(bits, int | float) and not isinstance(bits, bool):
            return float(bits)
    return None


def _disclosure_html(disclosure: Any) -> str:
    """The disclosure bound: how many bits the certificate's agent-influenced content
    can carry at most, with its largest terms."""
    bits = _disclosure_bits(disclosure)
    if bits is None or not isinstance(disclosure, Mapping):
        return '<p class="enclave-disclosure" data-bits="none">Disclosure bound: not stated</p>'
    terms = [t for t in disclosure.get("terms") or [] if isinstance(t, Mapping)]
    top = sorted(terms, key=lambda t: -float(t.get("bits") or 0))[:3]
    detail = ", ".join(f"{_e(t.get('field'))} {_num(t.get('bits'), '{:.1f}')}" for t in top)
    return (
        f'<p class="enclave-disclosure" data-bits="{bits:.2f}">Disclosure bound: '
        f"<b>{bits:.2f} bits</b> at most from agent-influenced content "
        f"(resolution {_e(disclosure.get('resolution'))}; largest terms: {detail})</p>"
    )


def certificate_text(summary: Mapping[str, Any], *, audit_id: str | None = None) -> str:
    aud = summary.get("auditability") or {}
    lines = [
        f"certificate {audit_id or ''}".rstrip(),
        summary_finding(summary),
        f"classification: {summary.get('classification')}",
        f"auditability:   {aud.get('class') if isinstance(aud, Mapping) else aud}",
    ]
    effect = summary.get("effect")
    if isinstance(effect, Mapping):
        lines.append(
            f"mean paired score delta: {_num(effect.get('mean_delta'))} "
            f"{_interval(effect.get('delta_interval'))}"
        )
        lines.append(
            f"decision flip rate:      {_num(effect.get('flip_rate'), '{:.3f}')} "
            f"{_interval(effect.get('flip_interval'), '{:.3f}')}"
        )
    placebo = summary.get("placebo")
    if isinstance(placebo, Mapping):
        lines.append(f"placebo: {'passed' if placebo.get('passed') else 'FAILED'}")
    lines.extend(inference_lines(summary))
    bits = _disclosure_bits(summary.get("disclosure"))
    if bits is not None:
        lines.append(f"disclosure bound: {bits:.2f} bits")
    for sentence in summary.get("not_established") or []:
        lines.append(f"not established: {sentence}")
    return "\n".join(lines)


def verify_html(report: VerifyReport, *, title: str = "Verification") -> str:
    items = "".join(
        f'<li class="enclave-verify-check" data-step="{c.step}" data-name="{_e(c.name)}" '
        f'data-ok="{str(c.ok).lower()}"><b>{c.step}. {_e(c.name)}</b> — {_e(c.detail)}</li>'
        for c in report.checks
    )
    verdict = "every check passed" if report.ok else "VERIFICATION FAILED"
    found = "" if report.finding is None else _finding_html(report.finding, "verifier")
    return (
        f'<div class="enclave-card enclave-verify-report" data-ok="{str(report.ok).lower()}">'
        f"{STYLE}"
        f"<h4>{_e(title)}: {verdict}</h4>{found}<ol>{items}</ol></div>"
    )


def verify_text(report: VerifyReport) -> str:
    lines = [f"{'OK ' if c.ok else 'BAD'} {c.step}. {c.name}: {c.detail}" for c in report.checks]
    lines.append("verified" if report.ok else "verification failed")
    if report.finding is not None:
        lines.insert(0, report.finding)
    return "\n".join(lines)


def error_html(exc: EnclaveClientError) -> str:
    status = f' data-status="{exc.status}"' if isinstance(exc, ServiceRefused) else ""
    message = exc.message if isinstance(exc, ServiceRefused) else str(exc)
    return (
        f'<div class="enclave-card enclave-error" data-code="{_e(exc.code)}"{status}>'
        f"{STYLE}Refused: {_e(message)} <code>({_e(exc.code)})</code></div>"
        if isinstance(exc, ServiceRefused)
        else f'<div class="enclave-card enclave-error" data-code="{_e(exc.code)}">{STYLE}'
        f"{_e(message)}</div>"
    )


def error_text(exc: EnclaveClientError) -> str:
    if isinstance(exc, ServiceRefused):
        return f"refused ({exc.status} {exc.code}): {exc.message}"
    return f"error ({exc.code}): {exc}"
