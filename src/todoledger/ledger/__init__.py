"""The ledger: plans, their items and history, behind one façade, `Ledger`.

The layout shows how a write flows, bottom to top (each module imports only
those below it; tests/test_layers.py holds the ranks):

    unit, values          the unit of work (store, transaction, ops); field values
    gates                 verification state, running checks, receipts, the gate of done
    readiness             what an item waits for, what is ready, what needs a person
    writes, items, leases, reading, history, people, checkrecords
                          one concern each, taking a Unit and plain values
    sweeprows             sweeps' records
    facade, facade_*      the façade's base (default plan and writer) and its method
                          groups (checks, leases, history, people)
    ledger                `Ledger`
    shared, verify, sweeps
                          above the façade, public methods only
"""

from __future__ import annotations

from todoledger.ledger.ledger import Ledger
from todoledger.ledger.retry import new_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.shared import SharedLedger
    from todoledger.ledger.writes import WriteResult

__all__ = ["Ledger", "SharedLedger", "WriteResult", "new_key"]


def __getattr__(name: str) -> Any:
    # Servers share a ledger; the agents' verbs never load it.
    if name == "SharedLedger":
        from todoledger.ledger.shared import SharedLedger

        return SharedLedger
    if name == "WriteResult":
        from todoledger.ledger.writes import WriteResult

        return WriteResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
