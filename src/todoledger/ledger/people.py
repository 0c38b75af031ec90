"""People: approvals of items and of the whole plan (only a person approves),
each plan's writers, and measured durations for the schedule."""

from __future__ import annotations

from todoledger.core.model import LedgerError
from todoledger.core.timefmt import now
from todoledger.ledger.values import epoch, rows_open

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from todoledger.ledger.unit import Unit


def approve(
    u: Unit,
    plan: str,
    writer: str,
    ref: str,
    lets_through: Callable[[str], list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """A person approves an item as it is now: an agent may then start it.
    `lets_through(item_id)`: the waiting MCP tasks the person names to complete it
    past a person's gate, after they were shown them (`todoledger approve ID --task
    TASK`; `ledger.tasks.consented`), kept in the approval with their arguments and
    under its signature on a signed ledger (`ledger.tasks.gate_consent`). An
    approval that names none lets none through."""
    from todoledger.core.approval import item_snapshot
    from todoledger.ledger.signed import person, sign
    from todoledger.store.tasks import TaskRepo

    writer = person(u, "approve", writer)
    entries: list[dict[str, Any]] = []
    if lets_through is not None:
        with u.store.read():
            item_id = u.require(plan, ref).id
        entries = lets_through(item_id)
    at = now()
    with u.transaction():
        item = u.require(plan, ref)
        snapshot = item_snapshot(item.as_dict())
        if entries:
            for entry in entries:  # still waiting as shown: the same task, the same arguments
                row = TaskRepo(u.store).get(entry["task"])
                same = row is not None and {
                    "task": row["id"],
                    "writer": row["writer"],
                    "arguments": row["arguments"],
                }
                if row is None or row["status"] != "working" or same != entry:
                    raise LedgerError(
                        f"task {entry['task'][:8]} changed while you approved; nothing was done"
                    )
            snapshot["lets_through"] = entries
        sign(u, "approve", plan, item.id, snapshot)
        w = u.op(plan, writer, at, "approve", summary=f"approved {item.id}")
        w.annotate(item.id, "approved", None, snapshot)
        u.repo.touch_plan(plan, at)
    standing: dict[str, Any] = approvals(u, plan)["items"].get(item.id, {})
    return standing | {"id": item.id, "content": item.content, "lets_through": entries}


def approve_plan(u: Unit, plan: str, writer: str) -> dict[str, Any]:
    """A person approves the plan as it stands: its items' content, order,
    dependencies and gates, with a hash; any later change is flagged."""
    from todoledger.core.approval import plan_hash, plan_snapshot
    from todoledger.ledger.signed import person, sign

    writer = person(u, "approve --plan", writer)
    at = now()
    with u.transaction():
        items = u.repo.items(plan)
        if not items:
            raise LedgerError(f"plan {plan!r} is empty: nothing to approve")
        snap = plan_snapshot([it.as_dict() for it in items])
        digest = plan_hash(snap)
        sign(u, "approve --plan", plan, None, {"hash": digest, "items": snap})
        w = u.op(plan, writer, at, "approve", summary=f"approved the plan ({len(items)} items)")
        w.annotate(None, "plan_approved", None, {"hash": digest, "items": snap})
        u.repo.touch_plan(plan, at)
    return {"plan": plan, "by": writer, "at": at, "hash": digest, "items": len(snap)}


def approvals(u: Unit, plan: str, *, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The plan against its last approval, and each item's standing:
    {"plan": {approved, by, at, hash, diff}, "items": {id: {...}}, "waiting": [ids]}.
    Items listed are those that need approval or were approved."""
    from todoledger.core.approval import item_approvals, plan_standing

    with u.store.read():  # `rows`: the plan's items as `show` gave them, read in the same instant
        rows = rows if rows is not None else [it.as_dict() for it in u.repo.items(plan)]
        events = [e.as_dict() for e in u.repo.approval_events(plan)]
    last_plan = next((e for e in reversed(events) if e["field"] == "plan_approved"), None)
    standing = item_approvals(rows, events)
    items = {i: a.as_dict() for i, a in standing.items() if a.needs_approval or a.by is not None}
    waiting = [i for i, a in standing.items() if a.waiting and rows_open(rows, i)]
    return {"plan": plan_standing(rows, last_plan), "items": items, "waiting": waiting}


def durations(u: Unit, plan: str) -> dict[str, str]:
    """How long each completed item took, measured from its history (first
    start, or creation, to completion), as `1h30m`."""
    from todoledger.core.schedule import format_duration, measured

    with u.store.read():
        events = [e.as_dict() for e in u.repo.events(plan)]
        untimed = u.repo.untimed_ops(plan)
    # An item with a change of no known time (m009) has no measured duration.
    unknown = {e["item"] for e in events if e["op"] in untimed}
    return {i: format_duration(sec) for i, sec in measured(events, epoch).items() if i not in unknown}


def started_by(u: Unit, plan: str, ids: Sequence[str] | None = None) -> dict[str, str]:
    """Who started each item now in progress: the writer of the change that made it
    so (not whoever touched it last: a note on it is not doing the work). `ids`: the
    items in progress, when the caller has them (reading every item to find them cost
    the board's 2,000-item page a tenth of its time)."""
    with u.store.read():
        doing = (
            list(ids)
            if ids is not None
            else [it.id for it in u.repo.items(plan) if it.status == "in_progress"]
        )
        return _starters(u, plan, doing)


def _starters(u: Unit, plan: str, doing: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item_id in doing:
        for e in u.repo.events(plan, item_id):
            if (e.field == "status" and e.new == "in_progress") or (
                e.field == "created" and isinstance(e.new, dict) and e.new.get("status") == "in_progress"
            ):
                out[item_id] = e.writer
    return out


def writers(u: Unit, plan: str) -> list[dict[str, Any]]:
    """Each writer of the plan: last write, number of changes, what it holds in progress
    (the items in progress it started)."""
    from todoledger.core.approval import is_person

    with u.store.read():
        rows = u.repo.writers(plan)
        doing = [it.id for it in u.repo.items(plan) if it.status == "in_progress"]
        starters = _starters(u, plan, doing)
        untimed = u.repo.untimed_ops(plan)
    out = []
    for writer, at, count in rows:
        holding = [i for i in doing if starters.get(i) == writer]
        out.append(
            {
                "writer": writer,
                "person": is_person(writer),
                "last_write": at,
                "untimed": bool(untimed),  # its times are when they were recorded here, not the calls'
                "changes": int(count),
                "in_progress": holding,
            }
        )
    return out
