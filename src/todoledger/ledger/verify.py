"""Checks above the façade: what composes several of `Ledger`'s public
methods. An assumption is an item whose check must hold and that other items
wait for; `done_command` is `todoledger done` (the click command and the lean
path); `parse_metric` reads `NAME=NUMBER`.

    from todoledger import Ledger
    from todoledger.ledger import verify
    with Ledger() as lg:
        item = lg.add("Verify /data has space for 25K samples")
        lg.add_check(item["id"], "disk:/data>=5.4T")            # a completion gate
        verify.assume(lg, "SGLang server is up", check="http://127.0.0.1:30000/health", for_=[item["id"]])
        lg.verify()                                              # runs them, stores receipts
"""

from __future__ import annotations

from todoledger.core.model import LedgerError
from todoledger.ledger.checkrecords import parse_metric

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from todoledger.ledger.ledger import Ledger

__all__ = ["assume", "done_command", "parse_metric"]


def assume(
    lg: Ledger,
    text: str,
    *,
    check: str | None = None,
    options: dict[str, Any] | None = None,
    for_: Iterable[str] = (),
    plan: str | None = None,
    writer: str | None = None,
    trusted: bool = True,
) -> dict[str, Any]:
    """Record an assumption as an item that holds when its check passes; the
    items it is for wait for it. All of it or nothing: one transaction."""
    if check is not None:
        from todoledger.core.checkspec import parse

        parse(check, options)  # a check that cannot be read refuses before anything is written
    with lg.batch():
        dependents = [lg.get(ref, plan)["id"] for ref in for_]
        item = lg.add(text, plan=plan, writer=writer, notes="assumption")
        row = None
        if check is not None:
            row = lg.add_check(
                item["id"], check, options, role="assumption", plan=plan, writer=writer, trusted=trusted
            )
        for dependent in dependents:
            lg.dep_add(dependent, item["id"], plan=plan, writer=writer)
    return {**lg.get(item["id"], plan), "check": row, "for": dependents}


def done_command(
    lg: Ledger,
    ref: str,
    *,
    metric: Sequence[str] = (),
    force: bool = False,
    reason: str | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """`todoledger done` (both the click command and the lean path in cli/entry.py).
    `force` overrides unmet prerequisites; a failing gate also needs the reason."""
    if reason is not None and not force:
        raise LedgerError("--reason goes with --force: it is recorded with the override")
    metrics = dict(parse_metric(m) for m in metric)
    return lg.done(ref, metrics=metrics, force=force, force_reason=reason if force else None, **kw)
