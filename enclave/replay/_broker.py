"""The supervisor's side of governed inference: checks a run's ask, asks the endpoint.

A run that needs an answer its record does not hold for a governed boundary sends an
``ask`` (``enclave.sandbox.inside.ask``) with the boundary and the request as the wire
adapter keys it; the template adds the run's tag (seed and arm). ``InferenceBroker.answer``
is the handle's ``on_ask``. Invariants, checked in this order:

1. **Shape.** The ask is ``{"boundary", "request"}`` within ``MAX_ASK_BYTES``; the tag's
   arm is an arm and its seed one of the stage's seeds. Else ``AskRefused``.
2. **Policy.** The boundary has a grant; the request is a POST to a URL the record holds
   for that boundary, with a JSON object body whose ``model`` (the name it asks for) and
   sampling parameters (``SAMPLING_PARAMETERS``) equal a recorded request's, except those
   the grant names in ``vary``, and whose API version headers (``API_HEADERS``) equal a
   recorded request's; every recorded answer carries the pinned identity. Else
   ``AskRefused`` (the branch is contaminated, as a live call is).
3. **Pairing.** A grant that varies ``seed`` gets the sample's seed as the provider seed,
   the same for every arm of the sample: arms that ask the same thing get the same draw.
   An endpoint whose API takes no seed (Anthropic's) cannot pair samples so: such a
   grant is refused before anything is asked (``inference_unseeded``); unseeded, a
   sample's arms are paired only as far as the provider answers alike.
4. **Caps.** Once the audit's caps (answers, input and output tokens, counted over every
   stage; wall seconds spent asking) are spent, every ask is refused; an answer that
   takes the tokens past a cap is refused and not recorded. Answers from the record count
   as asked ones do, so a re-run of an audit meets its caps exactly as the first run did.
   A stage given an ``allowance`` (a sample batch: its seeds' share of what the
   preparation left) is also refused past it, so batches run at once cannot together
   pass a cap.
5. **The audit's record first.** An answer the record holds for exactly this ask is
   served from it (``from_record``); otherwise the endpoint is asked.
6. **Asked with the operator's credential.** The endpoint is the operator's (``_endpoints``);
   the credential is the supervisor's, sent as the endpoint's API takes it, and goes in
   no frame, record or log. The request's API version headers go with it.
7. **Pinned.** An answer whose ``model`` is not the pinned identity is ``ModelDrift``.
   An error status, a transport failure or no JSON is ``InferenceUnavailable``.
8. **Sealed.** The answer is filed in the audit's record (``_inference_record``) and
   counted per arm, in the usage form of either API (``prompt_tokens`` and
   ``completion_tokens``; or ``input_tokens``, the cache's input tokens and
   ``output_tokens``); only counts leave this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ledger import CanonicalizationError, canonical_json

from .._errors import Refused
from ..sandbox import AskRefused
from ._endpoints import Endpoint
from ._errors import InferenceUnavailable, ModelDrift
from ._inference_grant import SAMPLING_PARAMETERS, InferenceGrant
from ._inference_record import InferenceRecord
from ._model import Trajectory, is_hole

__all__ = ["API_HEADERS", "MAX_ASK_BYTES", "InferenceBroker", "Tally"]

MAX_ASK_BYTES = 1 << 20
# equal to a recorded request's unless a grant varies them: the model the request names
# (the alias: the answer carries the resolved identity) and how the answer is drawn
_FIXED = SAMPLING_PARAMETERS | {"model"}
_ARMS = ("baseline", "intervened", "placebo")
# the request headers that choose the API's version or features: asked with, and equal
# to a recorded request's
API_HEADERS = ("anthropic-beta", "anthropic-version", "openai-beta")
# input tokens too, in an answer of the Anthropic messages API (null when not used)
_CACHE_INPUT = ("cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass
class Tally:
    """What one arm (or a stage) asked: of the endpoint, of the record; tokens used."""

    asked: int = 0
    from_record: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "asked": self.asked,
            "from_record": self.from_record,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    def add(self, other: Mapping[str, int]) -> None:
        for name in ("asked", "from_record", "input_tokens", "output_tokens"):
            setattr(self, name, getattr(self, name) + int(other.get(name, 0)))


@dataclass(frozen=True)
class _Recorded:
    """What the record says of a governed boundary: its URLs and sampling parameters."""

    urls: frozenset[str]
    sampling: tuple[dict[str, Any], ...]
    versions: tuple[dict[str, str], ...]  # the API_HEADERS of each recorded request


def _recorded(trajectory: Trajectory, grant: InferenceGrant) -> _Recorded:
    urls, sampling, versions = set(), [], []
    for step in trajectory.steps:
        if step.name != grant.boundary:
            continue
        url, body = step.request.get("url"), step.request.get("body")
        answer = step.response.get("body")
        if is_hole(url) or is_hole(body) or is_hole(answer):
            raise Refused(
                "the record withholds what a governed call is checked against",
                code="inference_not_pinned",
            )
        json_body = body.get("json") if isinstance(body, dict) else None
        answered = answer.get("json") if isinstance(answer, dict) else None
        model = answered.get("model") if isinstance(answered, dict) else None
        if not isinstance(json_body, dict) or model != grant.model:
            raise Refused(
                "the pinned model is not the identity the record's answers carry",
                code="inference_not_pinned",
            )
        urls.add(str(url))
        sampling.append({k: v for k, v in json_body.items() if k in _FIXED})
        versions.append(_api_headers(step.request.get("headers")))
    if not urls:
        raise Refused(
            "the record holds no call of the governed boundary", code="inference_not_pinned"
        )
    return _Recorded(frozenset(urls), tuple(sampling), tuple(versions))


def _api_headers(headers: Any) -> dict[str, str]:
    """The API version headers of a request's headers (as the wire adapter keys them)."""
    if not isinstance(headers, dict):
        return {}
    return {name: str(headers[name]) for name in API_HEADERS if name in headers}


class InferenceBroker:
    """One stage's asks, under the audit's grants; see the module's invariants."""

    def __init__(
        self,
        *,
        grants: Sequence[InferenceGrant],
        endpoints: Mapping[str, Endpoint],
        trajectory: Trajectory,
        record: InferenceRecord,
        seeds: frozenset[int],
        spent: Mapping[str, int | float] | None = None,
        allowance: Mapping[str, int | float] | None = None,
        clock: Callable[[], float] = time.monotonic,
        transport: Any = None,
    ) -> None:
        self._grants = {g.boundary: g for g in grants}
        missing = {g.endpoint for g in grants} - set(endpoints)
        if missing:
            raise Refused(
                "a grant names an endpoint the operator has not configured",
                code="inference_endpoint_unknown",
            )
        if any(g.seeded and not endpoints[g.endpoint].takes_seed for g in grants):
            raise Refused(
                "a grant varies the seed of an endpoint whose API takes none",
                code="inference_unseeded",
            )
        self._endpoints = endpoints
        self._recorded = {g.boundary: _recorded(trajectory, g) for g in grants}
        self._record = record
        self._seeds = seeds
        self._clock = clock
        self._transport = transport
        self._client: Any = None
        prior = dict(spent or {})
        self.calls = int(prior.get("calls", 0))
        self.input_tokens = int(prior.get("input_tokens", 0))
        self.output_tokens = int(prior.get("output_tokens", 0))
        self.seconds = float(prior.get("seconds", 0.0))
        self._start = self.spent()
        self._allowance = dict(allowance or {})  # what this stage alone may spend
        self.stage_seconds = 0.0  # spent asking in this stage alone
        self.arms: dict[str, Tally] = {arm: Tally() for arm in _ARMS}

    def close(self) -> None:
        """Close the endpoint client (at the end of the stage)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    @property
    def boundaries(self) -> tuple[str, ...]:
        return tuple(self._grants)

    # -- the handle's on_ask -----------------------------------------------------------
    def answer(self, tag: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        grant, request, arm, seed = self._checked(tag, body)
        payload = dict(request["body"]["json"])
        if grant.seeded:
            payload["seed"] = seed
        path = urlsplit(request["url"]).path
        versions = _api_headers(request.get("headers"))
        asked = {
            "boundary": grant.boundary,
            "endpoint": grant.endpoint,
            "model": grant.model,
            "path": path,
            "body": payload,
        }
        if versions:  # only then: the keys of answers asked without any stay as they were
            asked["headers"] = versions
        key = self._record.key_of(asked)
        self._within_caps(grant)
        answer = self._record.get(key)
        tally = self.arms[arm]
        if answer is None:
            answer = self._ask(grant, path, payload, versions)
            fresh = True
            tally.asked += 1
        else:
            fresh = False
            tally.from_record += 1
        used = _usage(answer)
        self.calls += 1
        self.input_tokens += used[0]
        self.output_tokens += used[1]
        caps = grant.caps
        if self.input_tokens > caps.input_tokens or self.output_tokens > caps.output_tokens:
            raise AskRefused("the answer takes the audit past its token caps")
        if self._past_allowance(("input_tokens", "output_tokens"), strict=True):
            raise AskRefused("the answer takes the stage past its share of the caps")
        if fresh:  # only an answer within the caps is kept: a re-run meets the same caps
            kept = self._record.put(key, answer)
            if kept != answer:  # another batch's, kept first: served, and counted, instead
                again = _usage(kept)
                self.input_tokens += again[0] - used[0]
                self.output_tokens += again[1] - used[1]
                answer, used = kept, again
        tally.input_tokens += used[0]
        tally.output_tokens += used[1]
        return answer

    def spent(self) -> dict[str, int | float]:
        """Totals over this stage and those before it: what the caps count."""
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "seconds": self.seconds,
        }

    # -- 1. and 2. ------------------------------------------------------------------------
    def _checked(
        self, tag: dict[str, Any], body: dict[str, Any]
    ) -> tuple[InferenceGrant, dict[str, Any], str, int]:
        try:
            size = len(canonical_json(body))
        except CanonicalizationError:
            raise AskRefused("an ask that is no JSON") from None
        if size > MAX_ASK_BYTES or set(body) != {"boundary", "request"}:
            raise AskRefused("an ask out of shape")
        arm, seed = tag.get("arm"), tag.get("seed")
        if arm not in _ARMS or type(seed) is not int or seed not in self._seeds:
            raise AskRefused("an ask from no run of this stage")
        grant = self._grants.get(str(body["boundary"]))
        request = body["request"]
        if grant is None or not isinstance(request, dict):
            raise AskRefused("an ask of a boundary no grant names")
        recorded = self._recorded[grant.boundary]
        payload = request.get("body")
        json_body = payload.get("json") if isinstance(payload, dict) else None
        if (
            request.get("method") != "POST"
            or request.get("url") not in recorded.urls
            or not isinstance(payload, dict)
            or set(payload) != {"json"}
            or not isinstance(json_body, dict)
        ):
            raise AskRefused("an ask of another API")
        sampling = {k: v for k, v in json_body.items() if k in _FIXED and k not in grant.vary}
        allowed = [{k: v for k, v in r.items() if k not in grant.vary} for r in recorded.sampling]
        if sampling not in allowed:  # the model it names (an alias) or how it samples
            raise AskRefused("an ask of another model or with other sampling parameters")
        headers = request.get("headers", {})
        if not isinstance(headers, dict) or _api_headers(headers) not in recorded.versions:
            raise AskRefused("an ask of another version of the API")
        return grant, request, str(arm), seed

    # -- 5. to 7. ------------------------------------------------------------------------
    def _within_caps(self, grant: InferenceGrant) -> None:
        caps = grant.caps
        if (
            self.calls >= caps.calls
            or self.input_tokens >= caps.input_tokens
            or self.output_tokens >= caps.output_tokens
            or self.seconds >= caps.wall_seconds
        ):
            raise AskRefused("the audit's inference caps are spent")
        if self._past_allowance(("calls", "input_tokens", "output_tokens", "seconds")):
            raise AskRefused("the stage's share of the inference caps is spent")

    def _past_allowance(self, names: Sequence[str], *, strict: bool = False) -> bool:
        """Whether this stage alone has spent its allowance of any of ``names`` (reached
        it; with ``strict``, gone past it)."""
        now = self.spent()
        for name in names:
            if name not in self._allowance:
                continue
            used, allowed = now[name] - self._start[name], self._allowance[name]
            if used > allowed or (not strict and used >= allowed):
                return True
        return False

    def _ask(
        self,
        grant: InferenceGrant,
        path: str,
        payload: dict[str, Any],
        versions: Mapping[str, str],
    ) -> dict[str, Any]:
        caps = grant.caps
        endpoint = self._endpoints[grant.endpoint]
        headers = {"content-type": "application/json", "accept": "application/json"}
        headers |= versions
        headers |= endpoint.credential_headers()
        import httpx  # the supervisor's own client: only an audit that asks loads it

        from ..adapters.http import answer_record

        started = self._clock()
        try:
            if self._client is None:  # one per stage: building one costs ~20 ms (TLS)
                # no idle connection left open between asks: a stage that ends in an
                # exception leaves no socket behind
                limits = httpx.Limits(max_keepalive_connections=0)
                self._client = httpx.Client(transport=self._transport, limits=limits)
            response = self._client.post(
                endpoint.origin + path,
                content=canonical_json(payload),
                headers=headers,
                timeout=caps.wall_seconds - self.seconds,
            )
            content = response.read()
        except httpx.HTTPError:
            raise InferenceUnavailable("the inference endpoint could not be reached") from None
        finally:
            elapsed = self._clock() - started
            self.seconds += elapsed
            self.stage_seconds += elapsed
        answer = answer_record(response, content)
        body = answer.get("body")
        json_body = body.get("json") if isinstance(body, dict) else None
        if not 200 <= response.status_code < 300 or not isinstance(json_body, dict):
            raise InferenceUnavailable("the inference endpoint answered with no answer")
        if json_body.get("model") != grant.model:
            raise ModelDrift("the endpoint answered with another model identity")
        _usage(answer)
        return answer


def _usage(answer: dict[str, Any]) -> tuple[int, int]:
    """(input, output) tokens an answer reports using, in the OpenAI API's usage form or
    the Anthropic messages API's (where the cache's input tokens are input too)."""
    body = answer.get("body")
    json_body = body.get("json") if isinstance(body, dict) else None
    usage = json_body.get("usage") if isinstance(json_body, dict) else None
    if isinstance(usage, dict) and "prompt_tokens" not in usage and "input_tokens" in usage:
        cached = sum(_count(usage, name) for name in _CACHE_INPUT if usage.get(name) is not None)
        return _count(usage, "input_tokens") + cached, _count(usage, "output_tokens")
    return _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")


def _count(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InferenceUnavailable("the inference endpoint's answer counts no tokens")
    return value
