"""Governance of audits: intervention policies and their lifecycle, fail-closed
eligibility, analysts and their tokens, Cedar access decisions, the disclosure budget.

Everything here speaks metadata. The one place that touches plaintext is the policy
preview (``preview_policy``), which opens a specimen inside the enclave and returns
keyed digests and schema validity only.

Every name is imported on first use: the analysts' commands, for one, load neither
Cedar (``cedarpy``) nor the policy checks.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._access import AccessDecision as AccessDecision
    from ._access import AccessPolicy as AccessPolicy
    from ._access import Action as Action
    from ._access import Resource as Resource
    from ._access import policies_root as policies_root
    from ._analysts import KNOWN_ROLES as KNOWN_ROLES
    from ._analysts import Analyst as Analyst
    from ._analysts import add_analyst as add_analyst
    from ._analysts import authenticate as authenticate
    from ._analysts import disable_analyst as disable_analyst
    from ._analysts import list_analysts as list_analysts
    from ._analysts import revoke_analyst as revoke_analyst
    from ._analysts import rotate_token as rotate_token
    from ._analysts import token_hash as token_hash
    from ._budget import BITS_PER_AUDIT as BITS_PER_AUDIT
    from ._budget import Budget as Budget
    from ._eligibility import AuditDraft as AuditDraft
    from ._eligibility import Eligible as Eligible
    from ._eligibility import check_eligibility as check_eligibility
    from ._eligibility import check_specimen as check_specimen
    from ._eligibility import is_categorical as is_categorical
    from ._inference import inference_classification as inference_classification
    from ._intake import Admitted as Admitted
    from ._intake import BudgetExhausted as BudgetExhausted
    from ._intake import InvalidPurpose as InvalidPurpose
    from ._intake import NoEffect as NoEffect
    from ._intake import admit_audit as admit_audit
    from ._intake import budget_used as budget_used
    from ._intake import check_purpose as check_purpose
    from ._intake import record_refusal as record_refusal
    from ._params import PolicyParams as PolicyParams
    from ._policy import IDENTITY_FIELD as IDENTITY_FIELD
    from ._policy import InterventionPolicy as InterventionPolicy
    from ._policy import PolicyStatus as PolicyStatus
    from ._preview import Preview as Preview
    from ._preview import PreviewParameter as PreviewParameter
    from ._preview import preview_policy as preview_policy
    from ._registry import ValidationReport as ValidationReport
    from ._registry import activate_policy as activate_policy
    from ._registry import get_policy as get_policy
    from ._registry import list_policies as list_policies
    from ._registry import load_policy as load_policy
    from ._registry import load_policy_file as load_policy_file
    from ._registry import retire_policy as retire_policy
    from ._registry import validate_policy as validate_policy
    from ._schemas import ToolDeclaration as ToolDeclaration
    from ._schemas import field_schema as field_schema
    from ._schemas import find_tool as find_tool
    from ._schemas import parameter_problems as parameter_problems

_FRONT = {
    "AccessDecision": "._access",
    "AccessPolicy": "._access",
    "Action": "._access",
    "Resource": "._access",
    "policies_root": "._access",
    "KNOWN_ROLES": "._analysts",
    "Analyst": "._analysts",
    "add_analyst": "._analysts",
    "authenticate": "._analysts",
    "disable_analyst": "._analysts",
    "list_analysts": "._analysts",
    "revoke_analyst": "._analysts",
    "rotate_token": "._analysts",
    "token_hash": "._analysts",
    "AuditDraft": "._eligibility",
    "Eligible": "._eligibility",
    "check_eligibility": "._eligibility",
    "check_specimen": "._eligibility",
    "is_categorical": "._eligibility",
    "inference_classification": "._inference",
    "Admitted": "._intake",
    "BudgetExhausted": "._intake",
    "InvalidPurpose": "._intake",
    "NoEffect": "._intake",
    "admit_audit": "._intake",
    "budget_used": "._intake",
    "check_purpose": "._intake",
    "record_refusal": "._intake",
    "BITS_PER_AUDIT": "._budget",
    "IDENTITY_FIELD": "._policy",
    "Budget": "._budget",
    "InterventionPolicy": "._policy",
    "PolicyParams": "._params",
    "PolicyStatus": "._policy",
    "Preview": "._preview",
    "PreviewParameter": "._preview",
    "preview_policy": "._preview",
    "ValidationReport": "._registry",
    "activate_policy": "._registry",
    "get_policy": "._registry",
    "list_policies": "._registry",
    "load_policy": "._registry",
    "load_policy_file": "._registry",
    "retire_policy": "._registry",
    "validate_policy": "._registry",
    "ToolDeclaration": "._schemas",
    "field_schema": "._schemas",
    "find_tool": "._schemas",
    "parameter_problems": "._schemas",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
