"""The audit request form: specimen → call → active policy → parameters → purpose.

Pure helpers (``call_options``, ``policy_options``, ``parse_tolerances``, ``build_body``)
are kept apart from the widgets so they can be tested without a front end.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

import ipywidgets as w

from ._wire import AuditRequestBody

__all__ = [
    "RequestForm",
    "build_body",
    "call_options",
    "parse_tolerances",
    "policy_options",
    "prefill",
]

REVISION = "__revision__"


def call_options(specimen: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, call_id)`` for each recorded call of a specimen detail."""
    out = []
    for call in specimen.get("calls") or []:
        alias = f" {call.get('alias')}→{call.get('resolved')}" if call.get("alias") else ""
        label = f"{call.get('call_id')} · {call.get('kind')} {call.get('name')}{alias}"
        out.append((label, str(call.get("call_id"))))
    return out


def _matches(policy: Mapping[str, Any], call: Mapping[str, Any] | None) -> bool:
    if call is None:
        return True
    tool, schema = policy.get("tool"), policy.get("schema_id")
    return tool in (None, "", call.get("name")) and schema in (None, "", call.get("schema_id"))


def cut_options(specimen: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """The cuts the specimen recorded, in the order the run reached them, after the
    full replay (``docs/cuts.md``): names only, never their state."""
    cuts = [c for c in specimen.get("cuts") or [] if isinstance(c, Mapping)]
    return [("none: full replay", None)] + [
        (f"{c.get('name')} ({c.get('call_id')})", str(c.get("name"))) for c in cuts
    ]


def policy_options(
    policies: Sequence[Mapping[str, Any]], call: Mapping[str, Any] | None
) -> list[tuple[str, Any]]:
    """Active policies that apply to the chosen call, then the declared-revision choice."""
    out: list[tuple[str, Any]] = []
    for p in policies:
        if _matches(p, call):
            label = (
                f"{p.get('id')} v{p.get('version')} · {p.get('strategy')} {p.get('field') or ''}"
            )
            out.append((label.strip(), p))
    out.append(("declared revision swap (e.g. model=r2)", REVISION))
    return out


def prefill(policy: Mapping[str, Any]) -> dict[str, Any]:
    """Form values suggested by a policy's authorised parameters (the first alternate)."""
    params = policy.get("params") or {}
    strategy = str(policy.get("strategy", "")).lower()
    alternates = params.get("alternates") or []
    if strategy == "revision" and alternates:
        return {"revision": f"{params.get('revision_point', 'model')}={alternates[0]}"}
    if strategy == "replace" and alternates:
        return {"value": json.dumps(alternates[0])}
    delta = params.get("delta")
    if strategy == "perturb" and isinstance(delta, list) and delta:
        return {"delta": float(delta[0])}
    return {}


def parse_tolerances(text: str) -> dict[str, float | str]:
    """``"score=0.001, readback=ignore"`` → ``{"score": 0.001, "readback": "ignore"}``."""
    out: dict[str, float | str] = {}
    for item in filter(None, (part.strip() for part in text.replace(";", ",").split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError("tolerances look like LAYER=VALUE, e.g. score=0.001")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            out[name.strip()] = value.strip()
    return out


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word is a string value


def build_body(
    *,
    specimen_id: str,
    call_id: str | None,
    policy: Any,
    value: str,
    delta: float | None,
    revision: str,
    samples: int,
    seed: int,
    tolerances: str,
    purpose: str,
    from_cut: str | None = None,
    per_sample: bool = False,
) -> AuditRequestBody:
    common: dict[str, Any] = dict(
        specimen_id=specimen_id,
        purpose=purpose,
        samples=samples,
        seed=seed,
        tolerances=parse_tolerances(tolerances),
        from_cut=from_cut or None,
        per_sample=per_sample,
    )
    if policy == REVISION or policy is None or str(policy.get("strategy")).lower() == "revision":
        policy_id = None if policy in (REVISION, None) else policy.get("id")
        return AuditRequestBody(revision=revision.strip() or None, policy_id=policy_id, **common)
    strategy = str(policy.get("strategy", "")).upper()
    return AuditRequestBody(
        call_id=call_id,
        field=policy.get("field"),
        strategy=strategy,
        value=_value(value) if value.strip() else None,
        has_value=bool(value.strip()),
        delta=delta if strategy == "PERTURB" else None,
        policy_id=policy.get("id"),
        **common,
    )


class RequestForm(w.VBox):
    """Widgets of the request form; ``on_submit(body)`` is called with a valid body."""

    def __init__(
        self,
        *,
        on_submit: Callable[[AuditRequestBody], None],
        load_specimen: Callable[[str], Mapping[str, Any]],
        load_policies: Callable[[], list[dict[str, Any]]],
    ) -> None:
        self._on_submit, self._load_specimen, self._load_policies = (
            on_submit,
            load_specimen,
            load_policies,
        )
        self._calls: dict[str, Mapping[str, Any]] = {}
        self._policies: list[dict[str, Any]] = []
        style = {"description_width": "110px"}
        lay = w.Layout(width="520px")
        self.specimen = w.Dropdown(description="specimen", options=[], style=style, layout=lay)
        self.call = w.Dropdown(description="call", options=[], style=style, layout=lay)
        self.policy = w.Dropdown(description="policy", options=[], style=style, layout=lay)
        self.value = w.Text(
            description="value (REPLACE)", placeholder="JSON, e.g. 0.56", style=style
        )
        self.delta = w.FloatText(description="delta (PERTURB)", value=0.0, style=style)
        self.revision = w.Text(description="revision", placeholder="model=r2", style=style)
        self.samples = w.BoundedIntText(
            description="samples", value=20, min=1, max=100_000, style=style
        )
        self.seed = w.BoundedIntText(description="seed", value=1, min=0, max=2**31, style=style)
        self.tolerances = w.Text(description="tolerances", placeholder="score=0.001", style=style)
        self.from_cut = w.Dropdown(
            description="start from cut",
            options=[("none: full replay", None)],
            style=style,
            layout=lay,
        )
        self.per_sample = w.Checkbox(
            description="every count (per-sample detail, where the policy grants it)",
            value=False,
            style=style,
            layout=lay,
        )
        self.purpose = w.Text(
            description="purpose *", placeholder="why (recorded)", style=style, layout=lay
        )
        self.submit = w.Button(description="Request audit", button_style="primary")
        self.message = w.HTML()
        for widget, css in (
            (self.specimen, "enclave-specimen-select"),
            (self.call, "enclave-call-select"),
            (self.policy, "enclave-policy-select"),
            (self.value, "enclave-value"),
            (self.delta, "enclave-delta"),
            (self.revision, "enclave-revision"),
            (self.samples, "enclave-samples"),
            (self.seed, "enclave-seed"),
            (self.tolerances, "enclave-tolerances"),
            (self.from_cut, "enclave-from-cut"),
            (self.per_sample, "enclave-per-sample"),
            (self.purpose, "enclave-purpose"),
            (self.submit, "enclave-submit"),
            (self.message, "enclave-form-message"),
        ):
            widget.add_class(css)
        self.specimen.observe(self._specimen_changed, names="value")
        self.call.observe(self._call_changed, names="value")
        self.policy.observe(self._policy_changed, names="value")
        self.submit.on_click(self._submit)
        super().__init__(
            [
                w.HTML("<h3>Request an audit</h3>"),
                self.specimen,
                self.call,
                self.policy,
                self.value,
                self.delta,
                self.revision,
                w.HBox([self.samples, self.seed]),
                self.tolerances,
                self.from_cut,
                self.per_sample,
                self.purpose,
                self.submit,
                self.message,
            ]
        )

    def set_specimens(self, ids: Sequence[str]) -> None:
        current = self.specimen.value
        self.specimen.options = list(ids)
        if current in ids:
            self.specimen.value = current

    def refresh_policies(self) -> None:
        self._policies = self._load_policies()
        self._call_changed(None)

    def _specimen_changed(self, _: Any) -> None:
        if not self.specimen.value:
            return
        detail = self._load_specimen(self.specimen.value)
        self._calls = {str(c.get("call_id")): c for c in detail.get("calls") or []}
        self.call.options = call_options(detail)
        self.from_cut.options = cut_options(detail)

    def _call_changed(self, _: Any) -> None:
        call = self._calls.get(self.call.value) if self.call.value else None
        self.policy.options = policy_options(self._policies, call)

    def _policy_changed(self, _: Any) -> None:
        if isinstance(self.policy.value, Mapping):
            for name, value in prefill(self.policy.value).items():
                getattr(self, name).value = value

    def _submit(self, _: Any) -> None:
        try:
            body = build_body(
                specimen_id=self.specimen.value or "",
                call_id=self.call.value,
                policy=self.policy.value,
                value=self.value.value,
                delta=self.delta.value,
                revision=self.revision.value,
                samples=self.samples.value,
                seed=self.seed.value,
                tolerances=self.tolerances.value,
                purpose=self.purpose.value,
                from_cut=self.from_cut.value,
                per_sample=self.per_sample.value,
            )
        except ValueError as exc:
            self.message.value = (
                f'<div class="enclave-error" data-code="bad_input">{escape(str(exc))}</div>'
            )
            return
        self.message.value = ""
        self._on_submit(body)
