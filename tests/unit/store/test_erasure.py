"""Per-specimen crypto-shredding: payloads and wrapped key destroyed, the ledger keeps
digests and records the erasure, a later audit is refused as unresolvable."""

from __future__ import annotations

from pathlib import Path

import pytest

from enclave import Home, Refused, Runtime, erase_specimen, rewrap_tenant, utc_now
from enclave.capture import capture
from enclave.cli import demo_audits
from enclave.incidents import procurement
from enclave.replay import AuditRequest, run_audit


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    rt = Runtime.open(Home.init(tmp_path / "home"), env={})
    yield rt
    rt.close()


def _capture(runtime: Runtime) -> str:
    base = procurement.BASELINE_INPUT
    return capture(
        runtime, procurement.AGENT, base["inputs"], tenant_id="acme", seed=base["seed"]
    ).specimen_id


def _request(specimen_id: str) -> AuditRequest:
    _title, request = demo_audits({"procurement": specimen_id})[0]
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=request.intervention,
        purpose="review",
        requester="test",
        samples=4,
        seed=1,
        authoritative_substitutes=request.authoritative_substitutes,
    )


def test_erased_specimen_keeps_digests_and_refuses_audits(runtime: Runtime, tmp_path: Path) -> None:
    specimen = _capture(runtime)
    before = runtime.ledger.get_specimen(specimen)
    folder = tmp_path / "home" / "payloads" / "acme" / specimen
    assert (folder / "datakey.json").exists()

    index = erase_specimen(runtime, specimen, now=utc_now())

    assert not folder.exists()
    after = runtime.ledger.get_specimen(specimen)
    assert after.manifest_digest == before.manifest_digest  # digests stay
    assert [e.index for e in runtime.ledger.entries(kind="specimen.erased", subject=specimen)] == [
        index
    ]
    assert runtime.ledger.verify().ok
    with pytest.raises(Refused) as info:
        run_audit(runtime, _request(specimen), now=utc_now())
    assert info.value.code == "unresolvable"
    assert not runtime.ledger.entries(kind="certificate.issued")


def test_erasure_removes_answers_a_home_kept_before_its_payload_store_held_them(
    runtime: Runtime, tmp_path: Path
) -> None:
    """A home made before the payload store kept inference answers has them under
    ``<home>/inference/<tenant>/<specimen>/``: erasure removes them too, and only them."""
    specimen, other = _capture(runtime), _capture(runtime)
    legacy = tmp_path / "home" / "inference" / "acme"
    for each in (specimen, other):
        (legacy / each).mkdir(parents=True)
        (legacy / each / f"{'ab' * 32}.ct").write_bytes(b"sealed")
    erase_specimen(runtime, specimen, now=utc_now())
    assert not (legacy / specimen).exists()
    assert (legacy / other / f"{'ab' * 32}.ct").exists()


def test_erasing_twice_or_unknown_is_refused(runtime: Runtime) -> None:
    specimen = _capture(runtime)
    erase_specimen(runtime, specimen, now=utc_now())
    with pytest.raises(Refused):
        erase_specimen(runtime, specimen, now=utc_now())
    with pytest.raises(Refused):
        erase_specimen(runtime, "sp-does-not-exist", now=utc_now())


def test_rotation_rewrap_and_trim(runtime: Runtime) -> None:
    old = _capture(runtime)
    assert runtime.rotator.rotate("acme") == 2
    new = _capture(runtime)
    assert runtime.payloads.wrapped_key("acme", new).kek_version == 2
    # old specimens stay replayable after rotation
    assert run_audit(runtime, _request(old), now=utc_now()).classification == "influential"
    assert rewrap_tenant(runtime, "acme") == 2
    assert runtime.payloads.wrapped_key("acme", old).kek_version == 2
    runtime.rotator.trim_versions("acme", keep_from=2)
    assert run_audit(runtime, _request(old), now=utc_now()).classification == "influential"


def test_trim_without_rewrap_makes_old_specimens_unrecoverable(runtime: Runtime) -> None:
    old = _capture(runtime)
    runtime.rotator.rotate("acme")
    runtime.rotator.trim_versions("acme", keep_from=2)
    with pytest.raises(Refused) as info:
        run_audit(runtime, _request(old), now=utc_now())
    assert info.value.code == "grant_refused"
