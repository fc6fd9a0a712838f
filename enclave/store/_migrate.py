"""Moving a home's payloads between the file store and the database store.

``migrate`` copies wrapped keys, frames and the audits' sealed inference answers as
they are: no data key is unwrapped and nothing is decrypted. The steps, in order:

1. While the home is bound to the source: copies left in the target by an interrupted
   run of specimens the ledger records as erased are erased there. Nothing else in the
   target is touched: homes on other hosts sharing the ledger's database keep theirs.
2. Each source specimen is copied (wrapped key, frames, then answers) unless the target
   already holds an identical copy (a re-run after an interruption); a partial copy (the
   source's wrapped key, a prefix of its frames and some of its answers, as an
   interrupted run leaves: each answer is written whole) is erased and copied again. Any
   other copy in the target is refused, never erased: it is another home's specimen
   under the same name, or not a copy at all. A specimen the ledger records as erased
   is not copied (its key must not outlive the erasure in a new place), and its target
   copy, if any, is erased. Every copy is verified against its source: the same wrapped
   key, the same number of frames, each frame byte-equal, the end frame present where
   the source has one (a source without one, a capture that never sealed, is copied as
   it is and counted as unsealed), and the same answers under the same keys. Specimens
   sealed into the source meanwhile are picked up by listing it again until nothing new
   appears.
3. Only when every copy is verified is the home re-bound to the target (``switch``).
4. Then the source copies are removed, each only after its copy was verified.

A failure before step 3 leaves the home bound to the source with everything in it; a
re-run continues. A re-run on a home already bound to the target (interrupted in step 4)
treats the target as authoritative: it copies only what the target lacks and the ledger
does not record as erased, and removes every source copy. The command holds the home's
payloads exclusively throughout (``enclave.store._in_use``): it refuses while a capture,
a worker or the service of the home holds them, and they refuse while it runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from itertools import zip_longest

from .._errors import InfrastructureError
from ._frames import END_KEY
from ._interface import PayloadBackend

__all__ = ["MigrationSummary", "migrate", "verify_copy"]

_MAX_PASSES = 5  # listings of the source until no new specimen appears


@dataclass(frozen=True)
class MigrationSummary:
    source: str
    target: str
    specimens: int  # in the target once done
    copied: int
    already_copied: int
    unsealed: int
    frames: int  # frames verified
    answers: int  # inference answers verified
    removed: int  # source copies removed
    stale_removed: int  # leftovers of an interrupted run erased from the target

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class CopyMismatch(InfrastructureError):
    """A copy does not match its source (the home stays bound to the source)."""


def _digests(store: PayloadBackend, tenant_id: str, specimen_id: str) -> dict[str, bytes]:
    """Each answer's key and the SHA-256 of its sealed bytes (not the bytes: a specimen
    may hold many answers)."""
    answers = store.answers(tenant_id, specimen_id)
    return {key: hashlib.sha256(sealed).digest() for key, sealed in answers}


def _verify(
    source: PayloadBackend, target: PayloadBackend, tenant_id: str, specimen_id: str
) -> tuple[int, bool, int]:
    """(frames, sealed, answers) once the target's copy equals the source's;
    ``CopyMismatch`` otherwise. Compares wrapped keys, raw frames and sealed answers
    only."""
    if source.wrapped_key(tenant_id, specimen_id) != target.wrapped_key(tenant_id, specimen_id):
        raise CopyMismatch(f"the copy of specimen {specimen_id} has another wrapped key")
    count, last = 0, b""
    theirs: Iterator[tuple[bytes, bytes]] = target.frames(tenant_id, specimen_id)
    ours: Iterator[tuple[bytes, bytes]] = source.frames(tenant_id, specimen_id)
    for mine, copy in zip_longest(ours, theirs):
        if mine is None or copy is None or mine != copy:
            raise CopyMismatch(f"the copy of specimen {specimen_id} differs from its source")
        count, last = count + 1, mine[0]
    answers = _digests(source, tenant_id, specimen_id)
    if _digests(target, tenant_id, specimen_id) != answers:
        raise CopyMismatch(f"the copy of specimen {specimen_id} differs from its source")
    return count, last == END_KEY, len(answers)


def verify_copy(
    source: PayloadBackend, target: PayloadBackend, tenant_id: str, specimen_id: str
) -> tuple[int, bool, int]:
    """(frames, sealed, answers) when the target holds an exact copy; ``CopyMismatch``
    if not (a missing key or unreadable frames included)."""
    from .._errors import DecryptionFailed

    try:
        return _verify(source, target, tenant_id, specimen_id)
    except DecryptionFailed:
        # a missing key row or a truncated frame on either side
        raise CopyMismatch(f"the copy of specimen {specimen_id} is incomplete") from None


def _partial_copy(
    source: PayloadBackend, target: PayloadBackend, tenant_id: str, specimen_id: str
) -> bool:
    """Whether the target's copy is what an interrupted copy of the source leaves: the
    same wrapped key (or none yet), frames equal to the source's first ones, the last
    possibly cut short, and answers the source holds, byte-equal."""
    from .._errors import DecryptionFailed

    try:
        if target.wrapped_key(tenant_id, specimen_id) != source.wrapped_key(tenant_id, specimen_id):
            return False
    except DecryptionFailed:
        return True  # no key: frames nobody can open, whatever they are
    ours = source.frames(tenant_id, specimen_id)
    try:
        for copy in target.frames(tenant_id, specimen_id):
            if next(ours, None) != copy:
                return False
    except DecryptionFailed:
        pass  # a frame cut short where the copy stopped
    answers = _digests(source, tenant_id, specimen_id)
    return all(
        answers.get(key) == digest
        for key, digest in _digests(target, tenant_id, specimen_id).items()
    )


def migrate(
    source: PayloadBackend,
    target: PayloadBackend,
    *,
    names: tuple[str, str],
    bound_to_target: bool,
    switch: Callable[[], None],
    erased: Callable[[str], bool],
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> MigrationSummary:
    """Move every specimen from ``source`` to ``target`` (the module docstring's steps).
    ``switch`` re-binds the home; ``erased(specimen_id)`` says whether the ledger
    records the specimen as erased."""
    copied = already = unsealed = frames = answers = removed = stale = 0
    verified: list[tuple[str, str]] = []

    def copy(tenant: str, specimen: str) -> None:
        nonlocal copied, unsealed, frames, answers
        target.erase(tenant, specimen)  # whatever an interrupted run left unlisted
        target.import_specimen(
            tenant,
            specimen,
            wrapped=source.wrapped_key(tenant, specimen),
            frames=source.frames(tenant, specimen),
        )
        for key, answer in source.answers(tenant, specimen):
            target.keep_answer(tenant, specimen, key, answer)
        count, sealed, kept = verify_copy(source, target, tenant, specimen)
        copied, frames, unsealed = copied + 1, frames + count, unsealed + (not sealed)
        answers += kept

    if not bound_to_target:
        in_source = set(source.specimens())
        for tenant, specimen in target.specimens():  # step 1
            if (tenant, specimen) not in in_source and erased(specimen):
                target.erase(tenant, specimen)
                stale += 1
        seen: set[tuple[str, str]] = set()
        for _ in range(_MAX_PASSES):  # step 2
            todo = [item for item in source.specimens() if item not in seen]
            if not todo:
                break
            present = set(target.specimens())
            total = len(seen) + len(todo)
            for tenant, specimen in todo:
                if erased(specimen):  # the source copy goes in step 4, as every other
                    if (tenant, specimen) in present:
                        target.erase(tenant, specimen)
                        stale += 1
                elif (tenant, specimen) in present:
                    try:
                        count, sealed, kept = verify_copy(source, target, tenant, specimen)
                        already, frames, unsealed = (
                            already + 1,
                            frames + count,
                            unsealed + (not sealed),
                        )
                        answers += kept
                    except CopyMismatch:
                        if not _partial_copy(source, target, tenant, specimen):
                            raise CopyMismatch(
                                f"the target already holds another specimen {specimen}"
                            ) from None
                        copy(tenant, specimen)
                else:
                    copy(tenant, specimen)
                seen.add((tenant, specimen))
                verified.append((tenant, specimen))
                progress(len(seen), total)
        else:
            raise InfrastructureError("specimens keep arriving: stop capture, then migrate")
        switch()  # step 3
    else:
        present = set(target.specimens())
        todo = source.specimens()
        for done, (tenant, specimen) in enumerate(todo, 1):
            if (tenant, specimen) not in present and not erased(specimen):
                copy(tenant, specimen)
            verified.append((tenant, specimen))
            progress(done, len(todo))
    for tenant, specimen in verified:  # step 4
        source.erase(tenant, specimen)
        removed += 1
    return MigrationSummary(
        source=names[0],
        target=names[1],
        specimens=len(target.specimens()),
        copied=copied,
        already_copied=already,
        unsealed=unsealed,
        frames=frames,
        answers=answers,
        removed=removed,
        stale_removed=stale,
    )
