"""Markdown task lists into a plan: `todoledger import --format markdown`
and Claude Code's plan mode (`ExitPlanMode`).

An item is matched by its `<!-- id:... -->` (what `export --format markdown`
writes), else by its text under the same parent, else added. Matched items
take the file's text, box and parent; what Markdown does not carry
(priority, dependencies, notes, order) stays as it is, so exporting and
importing again changes nothing. Items the file leaves out stay too: a
checklist is read as a revision of what it lists, never as a deletion.
All of it is one transaction: a refusal leaves the plan as it was.
"""

from __future__ import annotations

from typing import Any

from todoledger.core.mdtasks import MdItem
from todoledger.core.model import LedgerError
from todoledger.ledger import Ledger


def apply(
    ledger: Ledger,
    items: list[MdItem],
    *,
    plan: str,
    writer: str | None = None,
    under: str | None = None,
    at: str | None = None,
) -> dict[str, Any]:
    """Make the plan hold `items` (under the item `under`, if given)."""
    added = changed = 0
    with ledger.batch():
        existing = {it["id"]: it for it in ledger.items(plan)}
        resolved: list[str] = []
        used: set[str] = set()
        last_child: dict[str | None, str] = {}
        completions: list[str] = []  # ticked in the file: applied once everything else is
        for item in items:
            parent = resolved[item.parent] if item.parent is not None else under
            found = _match(item, parent, existing, used, plan)
            if found is None:
                row = ledger.add(
                    item.content,
                    plan=plan,
                    writer=writer,
                    parent=parent,
                    after=last_child.get(parent),
                    status=item.status,
                    at=at,
                )
                added += 1
            else:
                fields: dict[str, Any] = {
                    k: v
                    for k, v in (("content", item.content), ("status", item.status), ("parent", parent))
                    if found.get(k) != v
                }
                row = found
                if fields:
                    if fields.get("parent", "") is None:
                        raise LedgerError(
                            f"item {found['id']} is a sub-item in the plan but at the top level in the "
                            "file; put it back under its parent in the file (nothing was imported)"
                        )
                    if fields.get("status") == "completed":
                        completions.append(found["id"])
                        del fields["status"]
                    if fields:
                        row = ledger.update(
                            found["id"], plan=plan, writer=writer, kind="import", at=at, **fields
                        )
                    changed += 1
            used.add(row["id"])
            existing[row["id"]] = row
            resolved.append(row["id"])
            last_child[parent] = row["id"]
        for item_id in _completion_order(completions, existing):
            ledger.update(item_id, plan=plan, writer=writer, kind="import", at=at, status="completed")
    return {"plan": plan, "records": len(items), "added": added, "changed": changed, "ids": resolved}


def _completion_order(ids: list[str], rows: dict[str, dict[str, Any]]) -> list[str]:
    """The ticked items in an order the ledger accepts: a phase after the
    sub-items below it, an item after what it waits for; else file order (a
    tick the ledger cannot take is then refused, saying why)."""
    chosen = set(ids)
    after: dict[str, set[str]] = {i: {b for b in rows[i].get("depends_on", []) if b in chosen} for i in ids}
    for i in ids:
        node, depth = rows[i].get("parent"), 0
        while node is not None and depth < 64:
            if node in chosen:
                after[node].add(i)
            node, depth = rows.get(node, {}).get("parent"), depth + 1
    order: list[str] = []
    placed: set[str] = set()
    while len(order) < len(ids):
        free = [i for i in ids if i not in placed and after[i] <= placed]
        if not free:  # waits that contradict each other: file order, and the ledger says no
            free = [i for i in ids if i not in placed]
        order += free
        placed.update(free)
    return order


def _match(
    item: MdItem, parent: str | None, existing: dict[str, dict[str, Any]], used: set[str], plan: str
) -> dict[str, Any] | None:
    if item.id is not None:
        found = existing.get(item.id)
        if found is not None:
            return found
    for row in existing.values():
        if row["id"] not in used and row["content"] == item.content and row.get("parent") == parent:
            return row
    return None
