"""Who writes and which plan, when nobody says: the route's writer
(`todoledger.identity`) and TODOLEDGER_PLAN (else `main`). Every layer above the store
asks here, so the service and its companions (verification, sweeps) agree."""

from __future__ import annotations

import os

from todoledger.core.model import DEFAULT_PLAN


def default_writer() -> str:
    """The writer of this process when it names none: from where the call comes
    (`todoledger.identity`): a token, an agent's shell, a terminal, or a script."""
    from todoledger.identity import route_writer  # here: the hook path never asks

    return route_writer()


def default_plan() -> str:
    return os.environ.get("TODOLEDGER_PLAN") or DEFAULT_PLAN
