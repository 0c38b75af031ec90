"""Ledger-wide settings fixed when a ledger is created: the test clock.

A ledger created with `todoledger init --test-clock` honours TODOLEDGER_NOW
(the README generator and the tests that show or age times); every other
ledger keeps the real clock for its leases, liveness ages and `reclaim`
whatever the environment says. The mark is written once, on a ledger with no
history yet: an existing ledger cannot be switched.
"""

from __future__ import annotations

from todoledger.core.model import LedgerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.store.base import Store

TEST_CLOCK = "test_clock"


def setting(store: Store, name: str) -> str | None:
    rows = store.query("SELECT value FROM ledger_settings WHERE name = ?", (name,))
    return str(rows[0][0]) if rows else None


def has_test_clock(store: Store) -> bool:
    return setting(store, TEST_CLOCK) == "on"


def start_test_clock(store: Store, at: str) -> None:
    """Mark a new ledger as one whose clock TODOLEDGER_NOW may fix. Refused on
    a ledger that has history: switching an existing ledger to a clock its
    writers set would let them date writes past every lease."""
    with store.write():
        if has_test_clock(store):
            return
        if store.query("SELECT 1 FROM ops LIMIT 1"):
            raise LedgerError(
                "this ledger has history already: only a new ledger can be created with"
                " --test-clock (an existing ledger keeps the real clock)"
            )
        store.execute(
            "INSERT INTO ledger_settings (name, value, set_at) VALUES (?, ?, ?)", (TEST_CLOCK, "on", at)
        )


def watch_clock(store: Store) -> None:
    """Tell the clock (core/timefmt.py) whether this ledger honours TODOLEDGER_NOW.
    Asked at once when the variable is set (a server's threads then never query
    through the clock), else on the first `now()` that sees it; a closed store
    answers no."""
    from todoledger.core.timefmt import NOW_ENV, fixed_clock_allowed

    known: list[bool] = []

    def probe() -> bool:
        if not known:
            try:
                known.append(has_test_clock(store))
            except Exception:  # closed, or another thread's transaction: the real clock
                return False
        return known[0]

    import os

    if os.environ.get(NOW_ENV):
        probe()
    fixed_clock_allowed(probe)
