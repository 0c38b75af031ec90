"""`todoledger show PLAN` and `todoledger show ID`: which one an argument names,
and one item in full (its notes, evidence, checks with their last receipts,
numbers, what it waits for, and its history).

Item ids have a fixed form (`core.ids.looks_like_id`), and a new plan's name
never has it (`Unit.check_new_plan`), so an argument of that form that is an
item of the current plan is that item; anything else is a plan's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from todoledger.core.ids import looks_like_id
from todoledger.core.model import LedgerError
from todoledger.defaults import default_plan

if TYPE_CHECKING:
    from todoledger.ledger import Ledger


def resolve(lg: Ledger, target: str | None, plan: str | None) -> tuple[str | None, str | None]:
    """(plan, item id or None) that `show [TARGET] [--plan PLAN]` names; one line if neither."""
    if target is None:
        return plan, None
    current = plan or default_plan()
    if looks_like_id(target):
        rows = lg.show(current)["items"]
        if any(r["id"] == target for r in rows):
            return current, target
    known = [p["plan"] for p in lg.plans()]
    if target in known:
        return target, None
    if looks_like_id(target):
        raise LedgerError(f"no item {target!r} in plan {current!r}, and no plan named {target!r}")
    listed = ", ".join(known[:10]) or "none yet"
    raise LedgerError(f"no plan {target!r} in the ledger (plans: {listed})")


def detail(lg: Ledger, plan: str, item_id: str) -> dict[str, Any]:
    """Everything about one item, as `show ID --json` prints it."""
    rows = {r["id"]: r for r in lg.show(plan)["items"]}
    row = rows[item_id]
    latest: dict[str, dict[str, Any]] = {}
    for r in lg.receipts(item_id, plan=plan):
        latest[r["check"]] = r

    def brief(other: str) -> dict[str, Any]:
        it = rows.get(other)
        return {"id": other, "content": it["content"], "status": it["status"]} if it else {"id": other}

    checks = []
    for c in lg.checks(plan=plan):
        if c.item != item_id:
            continue
        shown = c.as_dict()
        last = latest.get(c.id)
        shown["last"] = (
            {k: last[k] for k in ("result", "output", "at", "by", "code")} if last is not None else None
        )
        if last is not None and isinstance(last.get("tree"), dict):
            from todoledger.checks.tree import changed

            # What changed since it ran (its input by name, or the tree): why it reads stale.
            shown["last"]["changed"] = changed(last["tree"])
        checks.append(shown)
    return {
        "plan": plan,
        "item": row,
        "waits_for": [brief(d) for d in row.get("depends_on") or ()],
        "waited_on_by": [brief(r["id"]) for r in rows.values() if item_id in (r.get("depends_on") or ())],
        "children": [brief(r["id"]) for r in rows.values() if r.get("parent") == item_id],
        "checks": checks,
        "metrics": lg.metrics(item_id, plan=plan),
        "history": lg.history(plan, item_id),
    }
