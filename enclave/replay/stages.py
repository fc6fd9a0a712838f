"""The job workers' entry to replay: an audit's stages, each runnable as its own job.

For ``enclave.jobs`` (the durable workers that claim a stage and run it) and whoever
starts their sandboxes ahead: record the request, ``prepare_audit`` (grant, decrypt,
prove the intervention, baseline gate), ``run_sample_batch`` (paired samples in an
isolated worker, a share of them repeated on a second one: ``repeat_seeds``) and
``finalize_audit`` (verdict and certificate); the objects they hand each other
(metadata and bounded numbers only); and the handler, preload list
(``worker_preload``: with the agent's frameworks) and sandbox a stage starts its worker
with, and how a batch's seeds are split into shards replayed at once
(``split_seeds``, each shard's worker with the whole CPU budget). A user
runs all of them at once with ``enclave.replay.run_audit``.
"""

from ._audit import record_request
from ._frameworks import worker_preload
from ._outcome import Preparation
from ._results import BatchResult, SampleSummary
from ._shards import MIN_SHARD_SEEDS, split_seeds
from ._stages import (
    WORKER_HANDLER,
    WORKER_PRELOAD,
    finalize_audit,
    prepare_audit,
    repeat_seeds,
    run_sample_batch,
    stage_sandbox,
)

__all__ = [
    "MIN_SHARD_SEEDS",
    "WORKER_HANDLER",
    "WORKER_PRELOAD",
    "BatchResult",
    "Preparation",
    "SampleSummary",
    "finalize_audit",
    "prepare_audit",
    "record_request",
    "repeat_seeds",
    "run_sample_batch",
    "split_seeds",
    "stage_sandbox",
    "worker_preload",
]
