"""The service's wire shapes (pydantic), which also make the published OpenAPI.

Request bodies forbid unknown keys, bound every string and number and coerce nothing
(``"1"`` is not a seed; ``1.0`` is not a sample count). Response
models describe metadata only; none has a place for payload content.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictStr,
    field_validator,
    model_validator,
)

from ledger import AuditState, Classification

from .._checkpoints import MAX_NOTE_BYTES
from .._errors import BadInput
from ..governance import check_purpose

__all__ = [
    "AuditBody",
    "AuditList",
    "AuditRequestedModel",
    "AuditStatusModel",
    "CallModel",
    "CancelBody",
    "CertificateSummary",
    "CheckpointModel",
    "CutModel",
    "ErrorBody",
    "ErrorDetail",
    "FieldModel",
    "InferenceArms",
    "InferenceCapsModel",
    "InferenceGrantModel",
    "InferenceSummary",
    "InferenceTally",
    "LedgerHead",
    "LedgerVerify",
    "LedgerVerifyBody",
    "LogKeyModel",
    "NO_CONTROL",
    "PolicyList",
    "PolicyModel",
    "SpecimenDetail",
    "SpecimenList",
    "SpecimenSummaryModel",
    "VerifyCheck",
    "VerifyReport",
    "WhoAmI",
]

MAX_SEED = 2**53 - 1
# a name the ledger is asked for holds no control character: PostgreSQL refuses a NUL in
# text where SQLite finds nothing, so without this one request answered 404 on one
# backend and 503 "ledger unavailable" on the other. Refused alike before any query.
NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class WhoAmI(BaseModel):
    name: str
    tenant: str
    roles: list[str]


class SpecimenSummaryModel(BaseModel):
    """``ledger.SpecimenSummary`` as the OpenAPI document shows it: the same fields,
    filled from its ``to_dict()`` (``specimens list --json`` prints the same dicts)."""

    model_config = ConfigDict(frozen=True)

    specimen_id: str
    tenant_id: str
    agent_name: str
    agent_version: str
    manifest_digest: str
    highest_classification: Classification
    sealed_at: str
    step_count: int
    erased: bool
    legal_hold: bool


class SpecimenList(BaseModel):
    """One keyset page; ``next`` is the cursor of the following page (None: the end)."""

    items: list[SpecimenSummaryModel]
    limit: int
    next: str | None
    total: int


class FieldModel(BaseModel):
    side: str
    path: str
    classification: str
    retention: str
    digest: str | None


class CallModel(BaseModel):
    call_id: str
    kind: str
    name: str
    agent: str
    alias: str | None
    resolved: str | None
    schema_id: str | None
    schema_version: str | None
    fields: list[FieldModel]


class CutModel(BaseModel):
    """A cut the specimen recorded (``docs/cuts.md``): its name and the call id of its
    step. Never its state."""

    name: str
    call_id: str


class SpecimenDetail(SpecimenSummaryModel):
    calls: list[CallModel]
    revisions: dict[str, list[str]]
    strategies: list[str]
    # the cuts recorded, in the order the run reached them; ``from_cut`` names one
    cuts: list[CutModel]
    # fixed at seal: ``auditable`` or ``not-auditable-beyond <cut>``; None for a
    # specimen sealed before cuts existed
    sealed_auditability: str | None = None
    # the class sealed in the manifest, and the one that applies now: ``library`` while
    # the specimen is tagged (kept until retired, ``docs/retention.md``)
    retention_class: str
    effective_retention: str


class PolicyModel(BaseModel):
    id: str
    version: int
    tenant: str
    tool: str
    schema_id: str
    schema_version: str
    field: str
    strategy: str
    params: dict[str, Any]
    status: str


class PolicyList(BaseModel):
    items: list[PolicyModel]


# the body's intervention part, checked by the one intervention model
_INTERVENTION_KEYS = ("strategy", "call_id", "field", "value", "delta", "revision")


class AuditBody(BaseModel):
    """``POST /api/v1/audits``. ``revision`` is ``POINT=IDENTITY`` (e.g. ``model=r2``)
    with ``strategy = "revision"``; ``tolerances`` maps a layer to a number (score)
    or ``exact`` / ``ignore``.

    The intervention part (strategy and its parameters) is checked first by the one
    intervention model, strictly and with its one-line messages (400 ``bad_input``);
    ``null`` for a parameter other than ``value`` means it was not given."""

    model_config = ConfigDict(extra="forbid")

    specimen_id: str = Field(min_length=1, max_length=128, pattern=NO_CONTROL, strict=True)
    call_id: str | None = Field(default=None, min_length=1, max_length=256, pattern=NO_CONTROL)
    # a JSON Pointer
    field: str | None = Field(default=None, min_length=1, max_length=256, pattern=NO_CONTROL)
    strategy: Literal["nullify", "replace", "perturb", "revision"]
    value: Any = None
    delta: float | None = Field(default=None, allow_inf_nan=False, ge=-1e6, le=1e6)
    revision: str | None = Field(default=None, min_length=3, max_length=256)
    samples: int = Field(ge=2, le=100_000, strict=True)
    seed: int = Field(ge=0, le=MAX_SEED - 100_000, strict=True)
    # strict members: a bare ``float`` inside a union took ``true`` as 1.0
    tolerances: dict[str, StrictFloat | StrictStr] | None = Field(default=None, max_length=16)
    purpose: str = Field(min_length=1, max_length=500, strict=True)
    policy_id: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=NO_CONTROL, strict=True
    )
    # start every run from this declared cut's recorded state (``docs/cuts.md``)
    from_cut: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$", strict=True
    )
    # every count (a v2 certificate, charged at its larger bound) where the policy grants it
    detail: Literal["coarse", "per-sample"] = "coarse"

    @field_validator("purpose")
    @classmethod
    def _visible_purpose(cls, purpose: str) -> str:
        try:
            return check_purpose(purpose)
        except BadInput:
            raise ValueError("a purpose must be visible text") from None

    @model_validator(mode="before")
    @classmethod
    def _one_intervention_model(cls, data: Any) -> Any:
        if isinstance(data, dict):
            from ..replay import Intervention

            given = {
                k: data[k]
                for k in _INTERVENTION_KEYS
                if k in data and (data[k] is not None or k == "value")
            }
            Intervention.from_json(given)  # BadInput: one line, never the input
        return data


class CancelBody(BaseModel):
    """``POST /api/v1/audits/{audit_id}/cancel`` (optional): why, as a code."""

    model_config = ConfigDict(extra="forbid", strict=True)

    reason: Literal["withdrawn", "duplicate", "wrong_parameters", "superseded", "operator"] = (
        "withdrawn"
    )


class AuditStatusModel(BaseModel):
    model_config = ConfigDict(extra="allow")

    audit_id: str
    status: AuditState  # published as the ``AuditState`` schema: the same six values
    progress_done: int
    progress_total: int
    classification: str | None
    auditability: str | None
    failure_code: str | None
    has_certificate: bool
    created_at: str
    updated_at: str
    # the certificate's finding in plain language (or a failed audit's); null while it runs
    finding: str | None = None


class InferenceCapsModel(BaseModel):
    """Per audit, over every stage: answers asked, tokens read and written, seconds."""

    calls: int
    input_tokens: int
    output_tokens: int
    wall_seconds: int


class InferenceGrantModel(BaseModel):
    """One governed boundary an audit may ask a model about after departure
    (``enclave.replay.inference.InferenceGrant``): the operator's endpoint by name, the
    pinned model identity, the sampling parameters that may differ from the record's."""

    boundary: str
    endpoint: str
    model: str
    vary: list[str]
    caps: InferenceCapsModel


class AuditRequestedModel(AuditStatusModel):
    """The answer to ``POST /audits``: the queued audit and the inference grants its
    request carries, from the policy that authorised it (empty: none)."""

    inference: list[InferenceGrantModel]


class InferenceTally(BaseModel):
    """What one arm asked: answers from the endpoint, answers from the audit's record,
    tokens read and written. Counts only."""

    asked: int
    from_record: int
    input_tokens: int
    output_tokens: int


class InferenceArms(BaseModel):
    preparation: InferenceTally
    baseline: InferenceTally
    intervened: InferenceTally
    placebo: InferenceTally


class InferenceSummary(BaseModel):
    """A certificate's ``inference`` section: the grants, whether the supervisor seeded
    each paired sample's draw, and per arm what was asked."""

    grants: list[InferenceGrantModel]
    seeded: bool
    arms: InferenceArms


class CertificateSummary(BaseModel):
    """A certificate's predicate, decoded: every member of the signed predicate as it is
    (certificate v2, ``docs/certificate-v2.md``); ``inference`` is typed here and present
    only when the audit was granted inference."""

    model_config = ConfigDict(extra="allow")

    inference: InferenceSummary | None = None


class AuditList(BaseModel):
    """One keyset page; ``next`` is the cursor of the following page (None: the end)."""

    items: list[AuditStatusModel]
    limit: int
    next: str | None
    total: int


class VerifyCheck(BaseModel):
    step: int
    name: str
    ok: bool
    detail: str


class VerifyReport(BaseModel):
    ok: bool
    checks: list[VerifyCheck]
    # re-derived from the verified figures; null unless every check passed
    finding: str | None = None


class LedgerHead(BaseModel):
    index: int | None
    hash: str | None


class LogKeyModel(BaseModel):
    origin: str
    # C2SP verifier key: <origin>+<key id hex>+base64(0x01 || Ed25519 public key)
    verifier_key: str


class LedgerVerify(BaseModel):
    ok: bool
    length: int
    first_bad_index: int | None
    reason: str | None
    # where checking began: 0 for a full run, else the checkpoint it resumed from
    verified_from: int
    # the size of the signed checkpoint the run proved the ledger extends, if given one
    signed_checkpoint: int | None = None
    # which entries were read and which the checkpoint vouched for, in words
    proved: str | None = None


class LedgerVerifyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # a C2SP checkpoint this log signed (POST /ledger/checkpoint): resume from it
    checkpoint: str = Field(min_length=1, max_length=MAX_NOTE_BYTES)


class CheckpointModel(BaseModel):
    origin: str
    tree_size: int
    root: str  # base64 of the Merkle tree hash (RFC 9162)
    extends: int | None  # the size of the checkpoint it was proven to extend
    verifier_key: str
    note: str  # the C2SP signed note, with the witnesses' cosignatures
    witnesses: dict[str, str]  # each witness's name and what it said
