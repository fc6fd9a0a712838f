"""A certificate's governed inference as HTML and plain text: the grants an audit asked a
model under, and per arm the calls the operator's endpoint answered, those served again
from the audit's own sealed record, and the tokens they used.

Counts and names only (the certificate carries no prompt or answer); every value is
escaped. Hooks for tests and styling: ``enclave-inference``, ``enclave-inference-arms``,
``enclave-inference-grants``, ``enclave-inference-seeded`` (``data-seeded``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["inference_html", "inference_lines"]

# the certificate's arms, in its order: the preparation's runs count as one arm
ARMS = ("preparation", "baseline", "intervened", "placebo")
_ARM_COLUMNS = (
    ("asked", "asked of the endpoint"),
    ("from_record", "from the audit's record"),
    ("input_tokens", "input tokens"),
    ("output_tokens", "output tokens"),
)
_CAPS = (
    ("calls", "calls"),
    ("input_tokens", "input tokens"),
    ("output_tokens", "output tokens"),
    ("wall_seconds", "wall seconds"),
)


def _text(value: Any) -> str:
    return "—" if value is None else str(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], css: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _arm_rows(inference: Mapping[str, Any]) -> list[list[str]]:
    arms = _mapping(inference.get("arms"))
    return [
        [arm, *(_text(_mapping(arms.get(arm)).get(key)) for key, _ in _ARM_COLUMNS)] for arm in ARMS
    ]


def _caps(value: Any) -> str:
    caps = _mapping(value)
    return ", ".join(f"{name} {_text(caps.get(key))}" for key, name in _CAPS)


def _grant_rows(inference: Mapping[str, Any]) -> list[list[str]]:
    grants = [_mapping(g) for g in _list(inference.get("grants"))]
    return [
        [
            _text(g.get("boundary")),
            _text(g.get("endpoint")),
            _text(g.get("model")),
            ", ".join(_text(v) for v in _list(g.get("vary"))) or "—",
            _caps(g.get("caps")),
        ]
        for g in grants
    ]


def _seeded(value: Any) -> tuple[str, str]:
    if value is True:
        return "true", "Provider seed: set by the supervisor for each paired sample."
    if value is False:
        return "false", (
            "Provider seed: not varied, so arms asking the same request get the same "
            "recorded answer."
        )
    return "none", "Provider seed: not stated."


def inference_html(summary: Mapping[str, Any]) -> str:
    """The ``inference`` section of a certificate's predicate, or "" when the audit
    authorised no inference."""
    inference = summary.get("inference")
    if not isinstance(inference, Mapping):
        return ""
    state, sentence = _seeded(inference.get("seeded"))
    return (
        '<div class="enclave-inference"><h4>Governed inference</h4>'
        + _table(
            ("arm", *(name for _, name in _ARM_COLUMNS)),
            _arm_rows(inference),
            "enclave-inference-arms",
        )
        + _table(
            ("boundary", "endpoint", "pinned model", "vary", "caps"),
            _grant_rows(inference),
            "enclave-inference-grants",
        )
        + f'<p class="enclave-inference-seeded" data-seeded="{state}">{escape(sentence)}</p>'
        + "</div>"
    )


def inference_lines(summary: Mapping[str, Any]) -> list[str]:
    """The same as plain-text lines (none without inference)."""
    inference = summary.get("inference")
    if not isinstance(inference, Mapping):
        return []
    lines = []
    for row in _arm_rows(inference):
        arm, asked, from_record, input_tokens, output_tokens = row
        lines.append(
            f"inference {arm}: asked {asked}, from record {from_record}, "
            f"tokens in {input_tokens} out {output_tokens}"
        )
    for boundary, endpoint, model, vary, caps in _grant_rows(inference):
        lines.append(
            f"inference grant: {boundary} via {endpoint}, model {model}, vary {vary}, caps {caps}"
        )
    lines.append(_seeded(inference.get("seeded"))[1])
    return lines
