"""todoledger: a durable, shared, verifiable home for coding agents' plans.

The public API is `Ledger`; it is imported lazily so that the CLI's hook path
stays as light as a bare interpreter start.
"""

from __future__ import annotations

TYPE_CHECKING = False

__version__ = "0.1.0"
__all__ = ["Ledger", "LedgerError", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from todoledger.core.model import LedgerError
    from todoledger.ledger.ledger import Ledger


def __getattr__(name: str) -> Any:
    if name == "Ledger":
        from todoledger.ledger.ledger import Ledger

        return Ledger
    if name == "LedgerError":
        from todoledger.core.model import LedgerError

        return LedgerError
    raise AttributeError(name)
