"""``%enclave``: list specimens, request and follow an audit, verify a certificate file.

    %load_ext jupyter_ext
    %enclave whoami
    %enclave specimens [--tenant T] [--agent A] [--auditability CLASS] [--limit N] [--cursor C]
    %enclave audit SPECIMEN (--revision NAME=ID | --call C --field F --strategy S
                   [--value V] [--delta D]) [--samples N] [--seed S]
                   [--tolerance LAYER=VALUE ...] [--policy ID] --purpose TEXT [--no-wait]
    %enclave status AUDIT
    %enclave certificate AUDIT
    %enclave verify PATH [--key ISSUER.pem] [--audit AUDIT] [--offline]

Results render as HTML in a notebook and as plain text elsewhere.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
from collections.abc import Callable
from html import escape
from typing import Any, NoReturn

from IPython.core import magic as _ipython_magic
from IPython.core.magic import Magics, magics_class
from IPython.display import display as _ipython_display

from ledger.certificates import BadCertificateInput

from ._client import EnclaveClient
from ._errors import EnclaveClientError
from ._form import parse_tolerances
from ._offline import verify_file
from ._render import (
    audit_html,
    audit_text,
    certificate_html,
    certificate_text,
    error_html,
    error_text,
    specimens_html,
    specimens_text,
    verify_html,
    verify_text,
)
from ._wire import AuditRequestBody, AuditStatus

__all__ = [
    "EnclaveMagics",
    "ISSUER_KEY_ENV",
    "Rendered",
    "audit_body",
    "load_ipython_extension",
    "magic_parser",
]

ISSUER_KEY_ENV = "REPLAY_ENCLAVE_ISSUER_KEY"


class Rendered:
    """A result with an HTML and a plain-text face."""

    def __init__(
        self, html: str, text: str, data: Any = None, *, audit_id: str | None = None
    ) -> None:
        self.html, self.text, self.data, self.audit_id = html, text, data, audit_id

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def magic_parser() -> _Parser:
    """The parser of a ``%enclave`` line (its errors are ``ValueError``)."""
    root = _Parser(prog="%enclave", add_help=False)
    sub = root.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("whoami", add_help=False)
    sp = sub.add_parser("specimens", add_help=False)
    for opt in ("--tenant", "--agent", "--auditability"):
        sp.add_argument(opt)
    sp.add_argument("--limit", type=int, default=20)
    sp.add_argument("--cursor")
    au = sub.add_parser("audit", add_help=False)
    au.add_argument("specimen")
    for opt in ("--call", "--field", "--strategy", "--value", "--revision", "--policy"):
        au.add_argument(opt)
    au.add_argument("--delta", type=float)
    au.add_argument("--samples", type=int, default=20)
    au.add_argument("--seed", type=int, default=1)
    au.add_argument("--tolerance", action="append", default=[])
    au.add_argument("--purpose", required=True)
    au.add_argument("--no-wait", action="store_true")
    for name in ("status", "certificate"):
        sub.add_parser(name, add_help=False).add_argument("audit")
    ve = sub.add_parser("verify", add_help=False)
    ve.add_argument("path")
    ve.add_argument("--key")
    ve.add_argument("--audit")
    ve.add_argument("--offline", action="store_true")
    return root


def audit_body(args: argparse.Namespace) -> AuditRequestBody:
    """The request body of ``%enclave audit`` (the CLI's options, same meanings)."""
    field = args.field
    if field and not field.startswith("/"):
        field = "/" + field
    value = args.value
    parsed: Any = None
    if value is not None:
        from ._form import _value  # one parser for values typed by analysts

        parsed = _value(value)
    return AuditRequestBody(
        specimen_id=args.specimen,
        purpose=args.purpose,
        samples=args.samples,
        seed=args.seed,
        call_id=args.call,
        field=field,
        strategy=args.strategy.upper() if args.strategy else None,
        value=parsed,
        has_value=value is not None,
        delta=args.delta,
        revision=args.revision,
        tolerances=parse_tolerances(",".join(args.tolerance)),
        policy_id=args.policy,
    )


# Typed handles on IPython's helpers: valid whether or not the installed IPython ships
# type information, so no ignore comment turns "unused" when it does.
line_magic: Callable[[Callable[..., Any]], Callable[..., Any]] = _ipython_magic.line_magic
display: Callable[..., Any] = _ipython_display


@magics_class
class EnclaveMagics(Magics):
    client_factory: Callable[[], EnclaveClient] = staticmethod(EnclaveClient.from_env)
    poll_interval = 0.5

    _client: EnclaveClient | None = None

    def _connected(self) -> EnclaveClient:
        """One client per magics instance, made from the environment on first use."""
        if self._client is None:
            self._client = self.client_factory()
        return self._client

    @line_magic
    def enclave(self, line: str) -> Any:
        try:
            args = magic_parser().parse_args(shlex.split(line))
        except ValueError as exc:
            return Rendered(
                f'<pre class="enclave-error" data-code="usage">{escape(str(exc))}</pre>',
                f"usage: {exc}",
            )
        try:
            return getattr(self, "_" + args.command)(args)
        except (ValueError, BadCertificateInput) as exc:  # the latter: the issuer key file
            return Rendered(
                f'<pre class="enclave-error" data-code="bad_input">{escape(str(exc))}</pre>',
                str(exc),
            )
        except EnclaveClientError as exc:
            return Rendered(error_html(exc), error_text(exc), exc)

    def _whoami(self, _: argparse.Namespace) -> Rendered:
        me = self._connected().whoami()
        roles = ", ".join(map(str, me.get("roles") or []))
        text = f"{me.get('name')} (tenant {me.get('tenant')}, roles {roles})"
        return Rendered(f'<div class="enclave-whoami">{escape(text)}</div>', text, me)

    def _specimens(self, a: argparse.Namespace) -> Rendered:
        page = self._connected().specimens(
            tenant=a.tenant,
            agent=a.agent,
            auditability=a.auditability,
            limit=a.limit,
            cursor=a.cursor,
        )
        return Rendered(specimens_html(page), specimens_text(page), page)

    def _status(self, a: argparse.Namespace) -> Rendered:
        status = self._connected().audit(a.audit)
        return Rendered(audit_html(status), audit_text(status), status)

    def _certificate(self, a: argparse.Namespace) -> Rendered:
        summary = self._connected().certificate_summary(a.audit)
        return Rendered(
            certificate_html(summary, audit_id=a.audit),
            certificate_text(summary, audit_id=a.audit),
            summary,
        )

    def _audit(self, a: argparse.Namespace) -> Rendered:
        body = audit_body(a)  # refuse an incomplete request before connecting
        client = self._connected()
        status = client.request_audit(body)
        if a.no_wait:
            return Rendered(
                audit_html(status), audit_text(status), status, audit_id=status.audit_id
            )
        first = Rendered(audit_html(status), audit_text(status))
        handle = display(first, display_id=True)
        while not status.terminal:
            time.sleep(self.poll_interval)
            status = client.audit(status.audit_id)
            if handle is not None:
                handle.update(Rendered(audit_html(status), audit_text(status)))
        return self._finish(client, status)

    def _finish(self, client: EnclaveClient, status: AuditStatus) -> Rendered:
        if not status.has_certificate:
            return Rendered(
                audit_html(status), audit_text(status), status, audit_id=status.audit_id
            )
        summary = client.certificate_summary(status.audit_id)
        return Rendered(
            certificate_html(summary, audit_id=status.audit_id),
            certificate_text(summary, audit_id=status.audit_id),
            summary,
            audit_id=status.audit_id,
        )

    def _verify(self, a: argparse.Namespace) -> Rendered:
        key = a.key or os.environ.get(ISSUER_KEY_ENV)
        if not key:
            raise ValueError(f"give --key ISSUER.pem or set {ISSUER_KEY_ENV}")
        if not os.path.exists(a.path):
            raise ValueError("certificate file not found")
        client = None if a.offline else self._connected()
        report = verify_file(a.path, key, client=client, audit_id=a.audit)
        title = f"Verification of {os.path.basename(a.path)}"
        return Rendered(verify_html(report, title=title), verify_text(report), report)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_ext`` registers ``%enclave``."""
    ipython.register_magics(EnclaveMagics)
