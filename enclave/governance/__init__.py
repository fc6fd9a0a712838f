"""Governance of audits: intervention policies and their lifecycle, fail-closed
eligibility, analysts and their tokens, Cedar access decisions, the disclosure budget.

Everything here speaks metadata. The one place that touches plaintext is the policy
preview (``preview_policy``), which opens a specimen inside the enclave and returns
keyed digests and schema validity only.
"""

from ._access import AccessDecision, AccessPolicy, Action, Resource, policies_root
from ._analysts import (
    KNOWN_ROLES,
    Analyst,
    add_analyst,
    authenticate,
    disable_analyst,
    list_analysts,
    revoke_analyst,
    rotate_token,
    token_hash,
)
from ._eligibility import AuditDraft, Eligible, check_eligibility
from ._intake import (
    Admitted,
    BudgetExhausted,
    InvalidPurpose,
    NoEffect,
    admit_audit,
    budget_used,
    check_purpose,
    record_refusal,
)
from ._policy import IDENTITY_FIELD, Budget, InterventionPolicy, PolicyParams, PolicyStatus
from ._preview import Preview, PreviewParameter, preview_policy
from ._registry import (
    ValidationReport,
    activate_policy,
    get_policy,
    list_policies,
    load_policy,
    load_policy_file,
    retire_policy,
    validate_policy,
)
from ._schemas import ToolDeclaration, find_tool, parameter_problems

__all__ = [
    "IDENTITY_FIELD",
    "KNOWN_ROLES",
    "AccessDecision",
    "AccessPolicy",
    "Action",
    "Admitted",
    "Analyst",
    "AuditDraft",
    "Budget",
    "BudgetExhausted",
    "Eligible",
    "InterventionPolicy",
    "InvalidPurpose",
    "NoEffect",
    "PolicyParams",
    "PolicyStatus",
    "Preview",
    "PreviewParameter",
    "Resource",
    "ToolDeclaration",
    "ValidationReport",
    "activate_policy",
    "add_analyst",
    "admit_audit",
    "authenticate",
    "budget_used",
    "check_eligibility",
    "check_purpose",
    "disable_analyst",
    "find_tool",
    "get_policy",
    "list_analysts",
    "list_policies",
    "load_policy",
    "load_policy_file",
    "parameter_problems",
    "policies_root",
    "preview_policy",
    "record_refusal",
    "retire_policy",
    "revoke_analyst",
    "rotate_token",
    "token_hash",
    "validate_policy",
]
