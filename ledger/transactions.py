"""Transactions on the ledger's database, for the packages that keep their own tables in
it (governance, the job queue, the release library, the payload store, retention): open
a read or a write (``read``, ``write``, ``guarded``: no database exception leaves, see
``LedgerError``), insert a row unless it exists (``insert_new``), and append ledger
entries inside such a write so they commit together with the caller's rows
(``caller_items``, ``lock_tip``, ``append_rows``, then ``save_head`` after the commit).
The ``*_VIEW`` names are tables as plain SQLAlchemy Core, for reads that must not load
SQLModel (``ledger.tables``, which they agree with). ``WRITE_OPTION`` marks a connection a
caller opens itself as a writer; ``POOL_SIZE`` and ``LOCK_WAIT_SECONDS`` are the
engine's pool size and the head file's lock wait. Names are imported on first use,
like the package front's.
"""

from typing import TYPE_CHECKING

from .lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._chain import append_rows as append_rows
    from ._chain import caller_items as caller_items
    from ._chain import lock_tip as lock_tip
    from ._engine import POOL_SIZE as POOL_SIZE
    from ._engine import WRITE_OPTION as WRITE_OPTION
    from ._head import LOCK_WAIT_SECONDS as LOCK_WAIT_SECONDS
    from ._head import save_head as save_head
    from ._statements import insert_new as insert_new
    from ._transactions import guarded as guarded
    from ._transactions import is_driver_error as is_driver_error
    from ._transactions import read as read
    from ._transactions import write as write
    from ._views import ANALYSTS_VIEW as ANALYSTS_VIEW
    from ._views import CERTIFICATES_VIEW as CERTIFICATES_VIEW
    from ._views import RELEASE_REPORTS_VIEW as RELEASE_REPORTS_VIEW

_NAMES = {
    "append_rows": "ledger._chain",
    "caller_items": "ledger._chain",
    "lock_tip": "ledger._chain",
    "POOL_SIZE": "ledger._engine",
    "WRITE_OPTION": "ledger._engine",
    "LOCK_WAIT_SECONDS": "ledger._head",
    "save_head": "ledger._head",
    "insert_new": "ledger._statements",
    "guarded": "ledger._transactions",
    "is_driver_error": "ledger._transactions",
    "read": "ledger._transactions",
    "write": "ledger._transactions",
    "ANALYSTS_VIEW": "ledger._views",
    "CERTIFICATES_VIEW": "ledger._views",
    "RELEASE_REPORTS_VIEW": "ledger._views",
}

__getattr__ = deferred(__name__, globals(), _NAMES)

__all__ = sorted(_NAMES)
