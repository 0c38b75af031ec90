"""Sweeps' records, below the façade: a sweep defined as items (a parent, one
child per combination, each with the check that runs it), each repeat's
receipt and numbers in one transaction, and the results per combination.
Running the combinations is `ledger.sweeps`, above the façade."""

from __future__ import annotations

from collections.abc import Sequence

from todoledger.core import sweep as core
from todoledger.core.checkspec import parse
from todoledger.core.model import OPEN_STATUSES, LedgerError
from todoledger.core.timefmt import now
from todoledger.core.verification import CheckRow, Receipt
from todoledger.ledger import items
from todoledger.ledger.gates import insert_check, receipt_event
from todoledger.store.checks import CheckRepo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit


def add(
    u: Unit,
    plan: str,
    writer: str,
    name: str,
    *,
    template: str,
    params: Sequence[str],
    run: str,
    metrics: Sequence[str],
    repeat: int = 1,
    baseline: Sequence[str] = (),
    keep: str | None = None,
    timeout: float = 3600.0,
) -> dict[str, Any]:
    """Define a sweep and expand it into items (a parent, one child per combination)."""
    sweep = core.define(
        name,
        template=template,
        params=list(params),
        run=run,
        metrics=list(metrics),
        repeat=repeat,
        baseline=list(baseline),
        keep=keep,
        timeout=timeout,
    )
    at = now()
    repo = CheckRepo(u.store)
    with u.transaction():
        if repo.sweep(plan, name) is not None:
            raise LedgerError(f"sweep {name!r} exists in plan {plan!r}")
        parent = items.add(u, plan, writer, f"Sweep {name}: {template}", notes=_notes(sweep))
        repo.add_sweep(plan, name, parent["id"], sweep.as_dict(), writer, at)
        made = []
        for position, (combo, is_base) in enumerate(sweep.combinations()):
            child = items.add(u, plan, writer, sweep.title(combo, is_base), parent=parent["id"])
            check = parse("cmd:" + sweep.command(combo), {"timeout": sweep.timeout})
            row = insert_check(u, plan, child["id"], "run", check, writer, at, trusted=True)
            repo.add_sweep_item(plan, name, child["id"], combo, is_base, row.id, position)
            made.append(
                {"id": child["id"], "content": child["content"], "params": combo, "baseline": is_base}
            )
    return {"plan": plan, "sweep": name, "parent": parent["id"], "items": made}


def _notes(sweep: core.Sweep) -> str:
    return f"run: {sweep.run}; metrics: {', '.join(n for n, _ in sweep.metrics)}; repeat {sweep.repeat}"


def _load(
    u: Unit, plan: str, name: str
) -> tuple[str, core.Sweep, list[tuple[str, dict[str, str], bool, str]]]:
    repo = CheckRepo(u.store)
    found = repo.sweep(plan, name)
    if found is None:
        raise LedgerError(f"no sweep {name!r} in plan {plan!r} (todoledger sweep add)")
    return found[0], core.Sweep.from_dict(found[1]), repo.sweep_items(plan, name)


def finish(u: Unit, plan: str, writer: str, name: str) -> None:
    """Complete the sweep's parent once every combination is completed."""
    at = now()
    with u.transaction():
        parent_id, _, rows = _load(u, plan, name)
        parent = u.repo.item(parent_id)
        children = u.repo.items_by_id([r[0] for r in rows])
        if parent is None or parent.status not in OPEN_STATUSES:
            return
        if any(c.status != "completed" for c in children.values()):
            return
        w = u.op(plan, writer, at, "sweep", summary=f"sweep {name} complete")
        w.set(
            parent.id,
            "evidence",
            parent.evidence,
            f"{len(children)} combinations measured: todoledger sweep results {name}",
        )
        w.set(parent.id, "status", parent.status, "completed")
        u.repo.touch_plan(plan, at)


def record_repeat(
    u: Unit,
    plan: str,
    writer: str,
    sweep: core.Sweep,
    check: CheckRow,
    receipt: Receipt,
    values: dict[str, float],
    k: int,
) -> None:
    """One repeat, in one transaction: its receipt, its numbers, and after the
    last repeat the completed item; a kill loses at most the repeat running."""
    repo = CheckRepo(u.store)
    at = receipt.at
    with u.transaction():
        item = u.require(plan, check.item)
        w = u.op(plan, writer, at, "sweep", summary=f"sweep {sweep.name} {item.id} run {k}/{sweep.repeat}")
        repo.add_receipt(plan, receipt)
        w.annotate(item.id, "receipt", None, receipt_event(check, receipt))
        if receipt.result == "holds":
            for metric, value in values.items():
                index = repo.add_metric(
                    plan, item.id, metric, value, writer, at, provenance="measured", check_id=check.id
                )
                w.annotate(
                    item.id,
                    "metric",
                    None,
                    {
                        "name": metric,
                        "value": value,
                        "run": index,
                        "provenance": "measured",
                        "check": check.id,
                    },
                )
        if item.status == "pending":
            w.set(item.id, "status", "pending", "in_progress")
        if receipt.result == "holds" and k >= sweep.repeat:
            medians = ", ".join(
                f"{n} median {core.summary(repo.metric_values(item.id, n))['median']:g}"
                for n, _ in sweep.metrics
            )
            w.set(
                item.id, "evidence", item.evidence, f"{sweep.repeat} runs of {check.check.text()}: {medians}"
            )
            w.set(item.id, "status", "in_progress", "completed")
        u.repo.touch_plan(plan, at)


def exists(u: Unit, plan: str, name: str) -> bool:
    """Is there a sweep of this name in the plan?"""
    with u.store.read():
        return CheckRepo(u.store).sweep(plan, name) is not None


def listing(u: Unit, plan: str) -> list[dict[str, str]]:
    """The sweeps of a plan, oldest first: name and parent item."""
    with u.store.read():
        return [{"name": n, "parent": p} for n, p in CheckRepo(u.store).sweeps_of(plan)]


def results(u: Unit, plan: str, name: str) -> dict[str, Any]:
    """Per combination and metric: median/min/max/spread, ratio to the baseline, verdict, flags."""
    repo = CheckRepo(u.store)
    with u.store.read():
        _, sweep, rows = _load(u, plan, name)
        runs = [
            (combo, is_base, {n: repo.metric_values(item, n) for n, _ in sweep.metrics})
            for item, combo, is_base, _ in rows
        ]
    return {"plan": plan, "sweep": name, "keep": sweep.keep, "rows": core.results(sweep, runs)}


def pending(
    u: Unit, plan: str, name: str
) -> tuple[core.Sweep, int, list[tuple[int, CheckRow, dict[str, str], int]]]:
    """The sweep, its number of combinations, and the combinations still to run:
    (index, the check that runs it, its parameters, repeats already finished)."""
    repo = CheckRepo(u.store)
    with u.store.read():
        _, sweep, rows = _load(u, plan, name)
        work = []
        for index, (item_id, combo, _, check_id) in enumerate(rows):
            check = repo.get(check_id)
            item = u.repo.item(item_id)
            if check is None or item is None or item.status not in OPEN_STATUSES:
                continue
            if not check.trusted:
                raise LedgerError(f"sweep {name}: {check_id} is not trusted (todoledger trust {check_id})")
            finished = repo.count_holds(check_id, check.check.canonical())
            work.append((index, check, combo, finished))
    return sweep, len(rows), work
