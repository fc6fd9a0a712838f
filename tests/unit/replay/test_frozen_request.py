"""The frozen audit request and its predicate, byte for byte: certificates embed them, so
how an intervention is defined in code must not change a byte of either."""

from __future__ import annotations

import json

import pytest

from enclave.keys import TenantDigester
from enclave.replay import AuditRequest, Intervention, Strategy
from ledger import canonical_json

CALL = "main/a#0"
_TAIL = (
    '"policy":null,"purpose":"p","requester":"r","samples":4,"seed":1,"specimen_id":"sp-1",'
    '"tolerances":{"ignored":[],"score":1e-9}}'
)
_LAYERS = (
    '"tolerances":{"decision":"exact","effects":"exact","evidence":"exact","policy":"exact",'
    '"proposal":"exact","readback":"exact","score":1e-9}}'
)

CASES = [
    (
        Intervention(Strategy.REPLACE, call_id=CALL, field="/x", value=None),
        '{"intervention":{"bundle":null,"call_id":"main/a#0","delta":null,"field":"/x",'
        '"revision":null,"strategy":"replace","value":null},' + _TAIL,
        '{"call":"main/a#0","field":"/x","parameters":{"digest":"hmac-sha256:'
        '47ed800f8e9229ae61042a186d4e4e3e5878c934a2d1ac23defad78611a215b4","kind":"value"},'
        '"purpose":"p","requester":"r","samples":4,"seed":1,"specimen":"sp-1",'
        '"strategy":"REPLACE",' + _LAYERS,
    ),
    (
        Intervention(Strategy.PERTURB, call_id=CALL, field="/x", delta=1),
        '{"intervention":{"bundle":null,"call_id":"main/a#0","delta":1,"field":"/x",'
        '"revision":null,"strategy":"perturb","value":null},' + _TAIL,
        '{"call":"main/a#0","delta":1,"field":"/x","parameters":{"digest":"hmac-sha256:'
        'e934429f54bda11d8c094d51cc4282c141740d6af1c2fdf3ba889687ef68ea48","kind":"delta"},'
        '"purpose":"p","requester":"r","samples":4,"seed":1,"specimen":"sp-1",'
        '"strategy":"PERTURB",' + _LAYERS,
    ),
    (
        Intervention(strategy=Strategy.REVISION, revision=("model", "r2")),
        '{"intervention":{"bundle":null,"call_id":null,"delta":null,"field":null,'
        '"revision":["model","r2"],"strategy":"revision","value":null},' + _TAIL,
        '{"call":"main/a#0","field":"#identity","parameters":{"digest":"hmac-sha256:'
        '6bb0de39390f89dce697e6ecddad229c77484c58262c388a5f193cbc559f635b","kind":"revision"},'
        '"purpose":"p","requester":"r","revision":"model=r2","samples":4,"seed":1,'
        '"specimen":"sp-1","strategy":"REVISION",' + _LAYERS,
    ),
]


@pytest.mark.parametrize(("intervention", "frozen", "predicate"), CASES)
def test_the_frozen_request_and_predicate_keep_their_bytes(
    intervention: Intervention, frozen: str, predicate: str
) -> None:
    request = AuditRequest(
        specimen_id="sp-1", intervention=intervention, purpose="p", requester="r", samples=4
    )
    assert canonical_json(request.to_dict()).decode() == frozen
    digester = TenantDigester(b"k" * 32)
    assert canonical_json(request.to_predicate(call_id=CALL, digester=digester)).decode() == (
        predicate
    )
    back = AuditRequest.from_dict(json.loads(frozen))
    assert back == request and back.intervention == intervention
