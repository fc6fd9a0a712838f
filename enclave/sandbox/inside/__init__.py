"""What runs inside the sandbox wall, in the worker process: its start-up (``_worker``),
the template that forks a process per run (``_template``) and a zygote's spawner loop
(``_spawner``), the channel a handler answers through, the code cache, the audit-hook
tripwire and the Landlock and seccomp loaders (which the supervisor also reads to check
what was loaded: the public modules ``seccomp`` and ``landlock``).

Nothing here imports a supervisor-side module: what both sides share is
``enclave.sandbox._wire`` (tests/project/test_sandbox_wall.py checks both). The name
below (the tripwire's events, which the supervisor accepts as a worker's report; a run's
``ask`` of the supervisor, ``_ask``) are imported on first use.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time imported on first use
    from ._ask import AskRefused as AskRefused
    from ._ask import ask as ask
    from ._tripwire import KNOWN_EVENTS as KNOWN_EVENTS

_FRONT = {"KNOWN_EVENTS": "._tripwire", "AskRefused": "._ask", "ask": "._ask"}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
