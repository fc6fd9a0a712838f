"""What runs inside the sandbox wall, in the replay worker: the handler the supervisor
starts (``_entry``), each run's fresh process (``_fresh_run``), the replay engine and
its tracked responses, the substitute fidelity check, the served-by marks and what the
worker sends back (``_outgoing``: one run's result and one seed's summary).

Nothing here imports a supervisor-side module; the data both sides share (``_model``,
``_errors``, ``_compare``, ``_quantize``, ``_decisions``, ``_results``) lives one folder
up (tests/project/test_sandbox_wall.py checks both).

The names below are what the supervisor's side reads of the worker (the engine for a
run by hand, the served-by vocabulary the reply is checked against, the substitutes a
stage lists, one seed's summary); each is imported on first use, so a worker importing
this package loads only what it uses.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._engine import ReplayContext as ReplayContext
    from ._engine import replay_run as replay_run
    from ._fidelity import check_substitutes as check_substitutes
    from ._fidelity import substitute_calls as substitute_calls
    from ._outgoing import summarize_seed as summarize_seed
    from ._served import AMBIENT_MISSING as AMBIENT_MISSING
    from ._served import ARMS as ARMS
    from ._served import HOWS as HOWS
    from ._served import UNRECORDED as UNRECORDED
    from ._served import arm_order as arm_order
    from ._served import mark_allowed as mark_allowed
    from ._served import served_by_table as served_by_table

_FRONT = {
    "AMBIENT_MISSING": "._served",
    "ARMS": "._served",
    "HOWS": "._served",
    "UNRECORDED": "._served",
    "ReplayContext": "._engine",
    "arm_order": "._served",
    "check_substitutes": "._fidelity",
    "mark_allowed": "._served",
    "replay_run": "._engine",
    "served_by_table": "._served",
    "substitute_calls": "._fidelity",
    "summarize_seed": "._outgoing",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
