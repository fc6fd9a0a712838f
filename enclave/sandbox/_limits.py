"""Resource limits and the stable reason codes shared by supervisor and worker."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

NETWORK = "network"
PROCESS_SPAWN = "process_spawn"
WRITE_OUTSIDE_SCRATCH = "write_outside_scratch"
NATIVE_CODE = "native_code"
FORBIDDEN_OPERATION = "forbidden_operation"
MEMORY_LIMIT = "memory_limit"
CPU_LIMIT = "cpu_limit"
FILE_SIZE_LIMIT = "file_size_limit"
WALL_CLOCK_TIMEOUT = "wall_clock_timeout"
WORKER_CRASHED = "worker_crashed"
HANDLER_ERROR = "handler_error"

REASONS: frozenset[str] = frozenset(
    {
        NETWORK,
        PROCESS_SPAWN,
        WRITE_OUTSIDE_SCRATCH,
        NATIVE_CODE,
        FORBIDDEN_OPERATION,
        MEMORY_LIMIT,
        CPU_LIMIT,
        FILE_SIZE_LIMIT,
        WALL_CLOCK_TIMEOUT,
        WORKER_CRASHED,
        HANDLER_ERROR,
    }
)

# Exit statuses the worker uses when it ends itself on purpose. They stay below
# 128 so that they cannot be confused with "killed by signal N" (128 + N).
EXIT_CODES: dict[str, int] = {
    NETWORK: 70,
    PROCESS_SPAWN: 71,
    WRITE_OUTSIDE_SCRATCH: 72,
    NATIVE_CODE: 73,
    FORBIDDEN_OPERATION: 74,
    MEMORY_LIMIT: 75,
    HANDLER_ERROR: 76,
    WORKER_CRASHED: 77,
}
REASON_BY_EXIT_CODE: dict[int, str] = {code: reason for reason, code in EXIT_CODES.items()}


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to one worker process.

    ``cpu_seconds`` is the CPU budget of the worker over its whole life (one replay
    job), enforced by RLIMIT_CPU; ``wall_seconds`` bounds each call, enforced by
    the supervisor killing the worker's whole process tree; ``scratch_bytes`` caps the
    worker's scratch tmpfs (bubblewrap ``--size``) on top of RLIMIT_FSIZE per file.
    """

    memory_bytes: int = 1 << 30
    cpu_seconds: int = 60
    file_size_bytes: int = 64 << 20
    open_files: int = 256
    wall_seconds: float = 60.0
    scratch_bytes: int = 256 << 20

    def __post_init__(self) -> None:
        for name in (
            "memory_bytes",
            "cpu_seconds",
            "file_size_bytes",
            "open_files",
            "scratch_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be a positive integer")
        if self.open_files < 16:
            raise ValueError("SandboxLimits.open_files must be at least 16")
        wall = self.wall_seconds
        if isinstance(wall, bool) or not isinstance(wall, int | float):
            raise ValueError("SandboxLimits.wall_seconds must be a positive number")
        if not math.isfinite(wall) or wall <= 0:
            raise ValueError("SandboxLimits.wall_seconds must be a positive number")

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_bytes": self.memory_bytes,
            "cpu_seconds": self.cpu_seconds,
            "file_size_bytes": self.file_size_bytes,
            "open_files": self.open_files,
            "wall_seconds": float(self.wall_seconds),
            "scratch_bytes": self.scratch_bytes,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxLimits:
        expected = {
            "memory_bytes",
            "cpu_seconds",
            "file_size_bytes",
            "open_files",
            "wall_seconds",
            "scratch_bytes",
        }
        if not isinstance(data, dict) or set(data) != expected:
            raise ValueError("SandboxLimits: unexpected fields")
        return cls(**data)
