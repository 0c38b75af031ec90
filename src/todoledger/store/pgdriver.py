"""Which PostgreSQL driver this process uses: psycopg, or on the agents' hot
path the small libpq binding of store/libpq.py (its docstring says why).

Decided once per process, when store/postgres.py is first imported: the
binding where the process asked for it (`lean()`, through `open_store(...,
lean=True)`), psycopg is not loaded already, and libpq.so.5 loads; psycopg
in every other case.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_wanted = False


def lean() -> None:
    """This process is a short agent call (a lean verb or a hook): the binding, if it can."""
    global _wanted
    _wanted = True


def driver() -> Any:
    import sys

    if _wanted and "psycopg" not in sys.modules:
        from todoledger.store import libpq

        try:
            libpq.load()
        except OSError:  # no system libpq: psycopg's own (psycopg_binary bundles one)
            pass
        else:
            return libpq
    import psycopg

    return psycopg
