"""``EnclavePanel``: specimens, the request form, live audits and the certificate view.

The panel runs in the kernel and calls the enclave service directly with the analyst's
own bearer token (``REPLAY_ENCLAVE_URL``, ``REPLAY_ENCLAVE_TOKEN``): it receives what the
service's API gives an analyst — metadata and certificates, never payloads.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as w

from ._client import EnclaveClient
from ._errors import EnclaveClientError
from ._form import RequestForm
from ._render import (
    STYLE,
    audit_html,
    certificate_html,
    error_html,
    specimens_html,
    verify_html,
)
from ._wire import AuditRequestBody, AuditStatus

__all__ = ["EnclavePanel"]

AUDITABILITY = ("", "counterfactual-admissible", "observable-only")


class EnclavePanel(w.VBox):
    """``EnclavePanel(client=None, *, page_size=10, poll_interval=1.0,
    export_dir="certificates")``; without a client it connects from the environment."""

    def __init__(
        self,
        client: EnclaveClient | None = None,
        *,
        page_size: int = 10,
        poll_interval: float = 1.0,
        export_dir: str = "certificates",
    ) -> None:
        self._client = client
        self._page_size, self._total = page_size, 0
        # keyset paging: the cursor of every page shown so far (None: the first page)
        self._cursors: list[str | None] = [None]
        self._next: str | None = None
        self._poll_interval, self._export_dir = poll_interval, export_dir
        self._audits: dict[str, AuditStatus] = {}
        self._follow: str | None = None
        self._lock = threading.Lock()
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()
        self.current_certificate: str | None = None

        self.whoami = w.HTML()
        self.error = w.HTML()
        # specimens
        self.tenant = w.Text(description="tenant", layout=w.Layout(width="200px"))
        self.agent = w.Text(description="agent", layout=w.Layout(width="220px"))
        self.auditability = w.Dropdown(
            description="auditability", options=AUDITABILITY, layout=w.Layout(width="330px")
        )
        self.refresh = w.Button(description="Refresh", icon="refresh")
        self.prev = w.Button(description="◀ previous")
        self.next = w.Button(description="next ▶")
        self.specimens = w.HTML()
        # request form
        self.form = RequestForm(
            on_submit=self._request,
            load_specimen=self._load_specimen,
            load_policies=self._load_policies,
        )
        # audits
        self.audits_view = w.HTML()
        self.refresh_audits = w.Button(description="Refresh audits")
        self.audit_pick = w.Dropdown(description="certificate", options=[])
        self.show = w.Button(description="Show certificate")
        # certificate
        self.certificate = w.HTML()
        self.verify = w.Button(description="Verify", icon="check", disabled=True)
        self.export = w.Button(description="Export", icon="download", disabled=True)
        self.verification = w.HTML()
        self.exported = w.HTML()
        for widget, css in (
            (self.specimens, "enclave-specimens-view"),
            (self.tenant, "enclave-filter-tenant"),
            (self.agent, "enclave-filter-agent"),
            (self.auditability, "enclave-filter-auditability"),
            (self.refresh, "enclave-refresh"),
            (self.next, "enclave-next"),
            (self.prev, "enclave-prev"),
            (self.audits_view, "enclave-audits"),
            (self.certificate, "enclave-certificate-view"),
            (self.verify, "enclave-verify"),
            (self.export, "enclave-export"),
            (self.verification, "enclave-verification"),
            (self.exported, "enclave-exported"),
            (self.error, "enclave-panel-error"),
            (self.audit_pick, "enclave-audit-select"),
            (self.show, "enclave-show"),
        ):
            widget.add_class(css)
        self.refresh.on_click(lambda _: self.load_specimens())
        self.prev.on_click(lambda _: self._previous_page())
        self.next.on_click(lambda _: self._next_page())
        self.refresh_audits.on_click(lambda _: self.load_audits())
        self.show.on_click(lambda _: self._show_picked())
        self.verify.on_click(lambda _: self.verify_current())
        self.export.on_click(lambda _: self.export_current())
        super().__init__(
            [
                w.HTML(STYLE + "<h2>Replay Enclave</h2>"),
                self.whoami,
                self.error,
                w.HTML("<h3>Specimens</h3>"),
                w.HBox([self.tenant, self.agent, self.auditability, self.refresh]),
                self.specimens,
                w.HBox([self.prev, self.next]),
                self.form,
                w.HTML("<h3>Audits</h3>"),
                self.audits_view,
                w.HBox([self.refresh_audits, self.audit_pick, self.show]),
                self.certificate,
                w.HBox([self.verify, self.export]),
                self.verification,
                self.exported,
            ]
        )
        self.add_class("enclave-panel")
        if self._connect():
            self.load_specimens()
            self.form.refresh_policies()
            self.load_audits()

    # -- plumbing -------------------------------------------------------------------

    def _connect(self) -> bool:
        try:
            if self._client is None:
                self._client = EnclaveClient.from_env()
            me = self._client.whoami()
        except EnclaveClientError as exc:
            self.error.value = error_html(exc)
            return False
        roles = ", ".join(map(str, me.get("roles") or []))
        self.whoami.value = (
            f'<div class="enclave-whoami">analyst <b>{escape(str(me.get("name")))}</b>'
            f" · tenant {escape(str(me.get('tenant')))} · roles {escape(roles)}</div>"
        )
        return True

    @property
    def client(self) -> EnclaveClient:
        if self._client is None:
            raise RuntimeError("the panel is not connected")
        return self._client

    def _guard(self, action: Callable[[], Any], target: w.HTML | None = None) -> Any:
        """Run ``action``; a service error is shown (in ``target`` or the panel), not raised."""
        try:
            result = action()
        except EnclaveClientError as exc:
            (target or self.error).value = error_html(exc)
            return None
        if target is None:
            self.error.value = ""
        return result

    def _load_specimen(self, specimen_id: str) -> dict[str, Any]:
        return self._guard(lambda: self.client.specimen(specimen_id)) or {}

    def _load_policies(self) -> list[dict[str, Any]]:
        return self._guard(lambda: self.client.policies(status="active")) or []

    # -- specimens -------------------------------------------------------------------

    def load_specimens(self) -> None:
        """The first page (with the current filters)."""
        self._show_page([None])

    def _next_page(self) -> None:
        if self._next is not None:
            self._show_page([*self._cursors, self._next])

    def _previous_page(self) -> None:
        if len(self._cursors) > 1:
            self._show_page(self._cursors[:-1])

    def _show_page(self, cursors: list[str | None]) -> None:
        page = self._guard(
            lambda: self.client.specimens(
                tenant=self.tenant.value or None,
                agent=self.agent.value or None,
                auditability=self.auditability.value or None,
                limit=self._page_size,
                cursor=cursors[-1],
            )
        )
        if page is None:
            return
        self._cursors, self._next = cursors, page.get("next")
        self._total = int(page.get("total") or 0)
        # where this page starts, for the "specimens 11-20 of N" line
        first = (len(cursors) - 1) * self._page_size
        self.specimens.value = specimens_html(page, first=first)
        self.prev.disabled = len(cursors) == 1
        self.next.disabled = self._next is None
        self.form.set_specimens([str(it["specimen_id"]) for it in page.get("items") or []])

    # -- audits ----------------------------------------------------------------------

    def _request(self, body: AuditRequestBody) -> None:
        status = self._guard(lambda: self.client.request_audit(body), self.form.message)
        if status is None:
            return
        self.form.message.value = (
            f'<div class="enclave-requested" data-audit-id="{escape(status.audit_id)}">'
            f"audit {escape(status.audit_id)} {escape(status.status)}</div>"
        )
        with self._lock:
            self._audits[status.audit_id] = status
            self._follow = status.audit_id
        self._render_audits()
        self._start_polling()

    def load_audits(self) -> None:
        listed = self._guard(lambda: self.client.audits())
        if listed is None:
            return
        with self._lock:
            for status in listed:
                self._audits[status.audit_id] = status
        self._render_audits()
        if any(not s.terminal for s in listed):
            self._start_polling()

    def _render_audits(self) -> None:
        with self._lock:
            ordered = sorted(self._audits.values(), key=lambda s: s.created_at or "", reverse=True)
        self.audits_view.value = "".join(audit_html(s) for s in ordered) or "<i>no audits yet</i>"
        certified = [s.audit_id for s in ordered if s.has_certificate]
        if list(self.audit_pick.options) != certified:
            self.audit_pick.options = certified

    def _start_polling(self) -> None:
        if self._poller is not None and self._poller.is_alive():
            return
        self._stop.clear()
        self._poller = threading.Thread(target=self._poll, name="enclave-panel-poll", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._stop.wait(self._poll_interval):
            with self._lock:
                pending = [a for a, s in self._audits.items() if not s.terminal]
            if not pending:
                return
            for audit_id in pending:
                status = self._status_of(audit_id)
                if status is None:
                    continue
                with self._lock:
                    self._audits[audit_id] = status
                    follow = self._follow == audit_id
                self._render_audits()
                if status.terminal and follow and status.has_certificate:
                    self.show_certificate(audit_id)

    def _status_of(self, audit_id: str) -> AuditStatus | None:
        result: AuditStatus | None = self._guard(lambda: self.client.audit(audit_id))
        return result

    def _show_picked(self) -> None:
        if self.audit_pick.value:
            self.show_certificate(self.audit_pick.value)

    def close(self) -> None:
        self._stop.set()
        super().close()

    # -- certificate -----------------------------------------------------------------

    def show_certificate(self, audit_id: str) -> None:
        summary = self._guard(lambda: self.client.certificate_summary(audit_id), self.certificate)
        if summary is None:
            return
        self.current_certificate = audit_id
        self.certificate.value = certificate_html(summary, audit_id=audit_id)
        self.verification.value = self.exported.value = ""
        self.verify.disabled = self.export.disabled = False

    def verify_current(self) -> None:
        audit_id = self.current_certificate
        if audit_id is None:
            return
        report = self._guard(lambda: self.client.verify(audit_id), self.verification)
        if report is not None:
            self.verification.value = verify_html(report, title=f"Verification of {audit_id}")

    def export_current(self) -> str | None:
        audit_id = self.current_certificate
        if audit_id is None:
            return None
        envelope = self._guard(lambda: self.client.certificate(audit_id), self.exported)
        if envelope is None:
            return None
        os.makedirs(self._export_dir, exist_ok=True)
        path = os.path.join(self._export_dir, f"{audit_id}.dsse.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(envelope, handle, indent=2, sort_keys=True)
            handle.write("\n")
        self.exported.value = (
            f'<div class="enclave-export-path">exported to <code>{escape(path)}</code></div>'
        )
        return path
