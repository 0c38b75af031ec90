"""Who writes and which plan, when nobody says: the route's writer
(`todoledger.identity`) and TODOLEDGER_PLAN (else `main`). Every layer above the store
asks here, so the service and its companions (verification, sweeps) agree."""

from __future__ import annotations

import os

from todoledger.core.model import DEFAULT_PLAN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from todoledger.tokens import Holder


def default_writer(holder: Callable[[str], Holder | None] | None = None) -> str:
    """The writer of this process when it names none: from where the call comes
    (`todoledger.identity`): a token (`holder` looks it up in the ledger's
    registry), an agent's shell, a terminal, or a script."""
    from todoledger.identity import route_writer  # here: the hook path never asks

    return route_writer(holder)


def default_plan() -> str:
    return os.environ.get("TODOLEDGER_PLAN") or DEFAULT_PLAN
