"""Markdown task lists into a plan: `todoledger import --format markdown`
(`apply_file`: a whole file, its layout kept) and Claude Code's plan mode
(`ExitPlanMode`, `apply`: headings as parents).

An item is matched by its `<!-- id:... -->` (what `export --format markdown`
writes), else by its text under the same parent, else added. Matched items
take the file's text, box and parent; what Markdown does not carry
(priority, dependencies, notes, order) stays as it is, so exporting and
importing again changes nothing. Items the file leaves out stay too: a
checklist is read as a revision of what it lists, never as a deletion.
All of it is one transaction: a refusal leaves the plan as it was.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from todoledger.core.mdfile import Doc
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


def apply_file(
    ledger: Ledger, doc: Doc, *, plan: str, writer: str | None = None, at: str | None = None
) -> dict[str, Any]:
    """Make the plan hold a Markdown file's tasks (core/mdfile.py) and keep its
    layout, so that export writes the file back as it was.

    Each task is matched to an item by its id comment; else by its place among the
    tasks of the file last imported into this plan (the layout keeps which item
    each line became), so that a line edited in the file updates its item; else by
    its text under the same parent; else it is added. The details under a task are
    its notes. Items the file leaves out stay: a file is a revision of what it
    lists, never a deletion. One transaction: a refusal leaves the plan as it was."""
    added = changed = 0
    with ledger.batch():
        existing = {it["id"]: it for it in ledger.items(plan)}
        before = _previous(ledger.markdown_layout(plan), existing)
        resolved = _match_file(doc, before, existing)
        had_notes = {t["id"] for t in before if t["notes"]}
        ids: list[str] = []
        last_child: dict[str | None, str] = {}
        completions: list[str] = []
        for k, task in enumerate(doc.tasks):
            parent = ids[task.parent] if task.parent is not None else None
            notes = "\n".join(task.notes) if task.notes else None
            found = existing.get(resolved[k] or "")
            if found is None:
                row = ledger.add(
                    task.content,
                    plan=plan,
                    writer=writer,
                    parent=parent,
                    after=last_child.get(parent),
                    status=task.status,
                    notes=notes,
                    at=at,
                )
                added += 1
            else:
                wanted: dict[str, Any] = {"content": task.content, "status": task.status, "parent": parent}
                if notes is not None or found["id"] in had_notes:
                    wanted["notes"] = notes  # the file's details, also when someone deleted them there
                fields = {k2: v for k2, v in wanted.items() if (found.get(k2) or None) != (v or None)}
                row = found
                if fields:
                    if "parent" in fields and fields["parent"] is None:
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
            existing[row["id"]] = row
            ids.append(row["id"])
            last_child[parent] = row["id"]
        for item_id in _completion_order(completions, existing):
            ledger.update(item_id, plan=plan, writer=writer, kind="import", at=at, status="completed")
        ledger.save_markdown_layout(doc.layout(ids), plan=plan)
    return {"plan": plan, "records": len(doc.tasks), "added": added, "changed": changed, "ids": ids}


def _previous(layout: str | None, existing: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks of the file last imported into the plan, whose items are still there."""
    if layout is None:
        return []
    data = json.loads(layout)
    with_notes = {rec[1] for rec in data["lines"] if rec[0] == "n"}
    return [
        {"id": t["id"], "content": t["content"], "notes": k in with_notes}
        for k, t in enumerate(data["tasks"])
        if t["id"] in existing
    ]


def _match_file(
    doc: Doc, before: list[dict[str, Any]], existing: dict[str, dict[str, Any]]
) -> list[str | None]:
    resolved: list[str | None] = [None] * len(doc.tasks)
    used: set[str] = set()
    for k, task in enumerate(doc.tasks):
        if task.id is not None and task.id in existing and task.id not in used:
            resolved[k] = task.id
            used.add(task.id)
    old = [t for t in before if t["id"] not in used]
    new = [k for k in range(len(doc.tasks)) if resolved[k] is None]
    lines = difflib.SequenceMatcher(
        None, [t["content"] for t in old], [doc.tasks[k].content for k in new], autojunk=False
    )
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        if tag in ("equal", "replace"):  # the same place: an edited line is the same item
            for i, j in zip(range(i1, i2), range(j1, j2), strict=False):
                resolved[new[j]] = old[i]["id"]
                used.add(old[i]["id"])
    for k, task in enumerate(doc.tasks):  # no file before: the text under the same parent
        if resolved[k] is not None:
            continue
        parent = resolved[task.parent] if task.parent is not None else None
        for row in existing.values():
            if row["id"] not in used and row["content"] == task.content and row.get("parent") == parent:
                resolved[k] = row["id"]
                used.add(row["id"])
                break
    return resolved
