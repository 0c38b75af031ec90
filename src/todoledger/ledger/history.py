"""History: undo (inverse events appended, never a rewrite), and a plan as
JSON Lines to export and import (diffable in git; importing the same file
twice changes nothing)."""

from __future__ import annotations

from todoledger.core import graph
from todoledger.core.model import ANNOTATIONS, CREATED, REMOVED, STATE_FIELDS, Item, LedgerError
from todoledger.core.timefmt import now
from todoledger.ledger import readiness
from todoledger.ledger.values import EXPORTED, current_value, default_value, validate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from todoledger.ledger.unit import Unit
    from todoledger.store.repo import Writes


def undo(u: Unit, plan: str, writer: str, *, any_writer: bool = False) -> dict[str, Any]:
    """Reverse the writer's last change by appending inverse events; with
    `any_writer`, the plan's last change, whoever made it. A change that a
    later change overwrote is not undone behind that change's back."""
    at = now()
    with u.transaction():
        last = u.repo.last_undoable(plan, None if any_writer else writer)
        if last is None:
            anyone = None if any_writer else u.repo.last_undoable(plan)
            if anyone is None:
                raise LedgerError(f"nothing to undo in plan {plan!r}")
            raise LedgerError(
                f"nothing of {writer}'s to undo in plan {plan!r}; the last change is"
                f" {anyone[1]} by {anyone[2]} (op {anyone[0]}): --any undoes it"
            )
        op, kind, by, when, summary = last
        if any_writer:
            from todoledger.core.approval import is_person, person_only, principal
            from todoledger.ledger.signed import person, registry, sign

            if principal(by) != principal(writer) and (is_person(writer) or registry(u)["keys"]):
                # Another's change: a person's to undo (signed, on a signed ledger).
                writer = person(u, f"undo --any of {by}'s change (op {op})", writer)
                sign(u, "undo --any", plan, None, {"op": op, "kind": kind, "by": by})
            elif not is_person(writer) and principal(by) != principal(writer):
                raise LedgerError(person_only(f"undo --any of {by}'s change (op {op})", writer))
        events = [
            ev for ev in u.repo.events(plan, op=op) if ev.item is not None and ev.field not in ANNOTATIONS
        ]
        if events:
            _refuse_undoing_a_persons_word(u, plan, writer, (op, kind, by), events)
        if events:
            touched = {(ev.item, ev.field) for ev in events}
            created = {ev.item for ev in events if ev.field in (CREATED, REMOVED)}
            items = sorted({ev.item for ev in events if ev.item is not None})
            for later in u.repo.later_changes(plan, max(ev.seq for ev in events), items):
                if (
                    (later.item, later.field) in touched
                    or later.item in created
                    or later.field in (CREATED, REMOVED)
                ):
                    raise LedgerError(
                        f"cannot undo op {op} ({kind} by {by}): {later.item}'s {later.field} was changed"
                        f" since by {later.writer} (op {later.op}); undo that first or change it by hand"
                    )
        w = u.op(plan, writer, at, "undo", summary=f"undo op {op} ({kind} by {by} at {when})")
        for ev in reversed(events):
            assert ev.item is not None
            if ev.field == CREATED:
                current = u.repo.item(ev.item)
                if current is not None:
                    w.remove(current)
            elif ev.field == REMOVED:
                fields = dict(ev.old)
                restored = Item(id=ev.item, plan=plan, content=fields.get("content", ""))
                for name in STATE_FIELDS:
                    if name in fields and fields[name] is not None:
                        setattr(restored, name, fields[name])
                w.create(restored)
            else:
                current = u.repo.item(ev.item)
                if current is not None:
                    w.set(ev.item, ev.field, current_value(current, ev.field), ev.old)
        u.repo.mark_undone(op, w.op)
        u.repo.touch_plan(plan, at)
    return {
        "plan": plan,
        "undone_op": op,
        "kind": kind,
        "writer": by,
        "at": when,
        "summary": summary,
        "events": len(events),
        "yours": by == writer,
    }


def _refuse_undoing_a_persons_word(
    u: Unit, plan: str, writer: str, last: tuple[int, str, str], events: list[Any]
) -> None:
    """An agent's undo of its own add would remove the item, and with it the gate a
    person wrote on it or the approval a person gave it since (approvals and checks are
    annotations, which do not block an undo): a drop without a word, around the refused
    bare cancel. Refused; a person's `undo --any`, or a cancel with a reason, remains."""
    from todoledger.core.approval import is_person

    if is_person(writer):
        return
    op, kind, by = last
    for ev in events:
        if ev.field != CREATED:
            continue
        current = u.repo.item(ev.item)
        why = readiness.held_by_person(u, plan, current, need=False) if current is not None else None
        if why is not None:
            raise LedgerError(
                f"cannot undo op {op} ({kind} by {by}): it would remove {ev.item}, and {ev.item} is held by"
                f" {why} (cancel it with a reason: todoledger cancel {ev.item} --reason ...); nothing was done"
            )


def export(u: Unit, plan: str) -> Iterator[str]:
    """JSON Lines, one item a line in plan order, keys sorted: diffs well in git."""
    import json

    with u.store.read():
        items = u.repo.items(plan)
        checks = _export_checks(u, plan)
    for it in items:
        # State only: who and when live in the history, not in the diffable plan.
        record = {
            k: v for k, v in it.as_dict().items() if k in EXPORTED and v not in (None, []) and v is not False
        }
        if it.id in checks:
            record["checks"] = checks[it.id]
        yield json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def import_jsonl(
    u: Unit, plan: str, writer: str, lines: Iterable[str], *, force: bool = False
) -> dict[str, Any]:
    """Make the plan's items match an export; unchanged items cost nothing,
    so importing the same file twice changes nothing. An item another writer
    holds a lease on is refused unless a person forces it (recorded)."""
    import json

    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LedgerError(f"line {number}: invalid JSON ({exc.msg})") from None
        if (
            not isinstance(record, dict)
            or not isinstance(record.get("id"), str)
            or not isinstance(record.get("content"), str)
        ):
            raise LedgerError(f'line {number}: an item record needs a string "id" and "content"')
        for name in STATE_FIELDS:
            if record.get(name) is not None:
                try:
                    record[name] = validate(name, record[name], stored=True)
                except LedgerError as exc:
                    raise LedgerError(f"line {number}: {exc}") from None
        records.append(record)
    ids = [r["id"] for r in records]
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise LedgerError(f"item id {twice[0]} appears more than once")
    at = now()
    added = changed = 0
    with u.transaction():
        w = u.op(plan, writer, at, "import", summary=f"import {len(records)} items")
        existing = u.repo.items_by_id([r["id"] for r in records])
        for r in records:
            if r["id"] in existing and existing[r["id"]].plan != plan:
                raise LedgerError(f"item {r['id']} belongs to plan {existing[r['id']].plan!r}")
        in_file = set(ids)
        for r in records:
            for ref in [*(r.get("depends_on") or []), *([r["parent"]] if r.get("parent") else [])]:
                if ref not in in_file and u.repo.item(ref) is None:
                    raise LedgerError(f"item {r['id']} refers to {ref}, which is not in the plan")
                other = u.repo.item(ref)
                if other is not None and other.plan != plan:
                    raise LedgerError(f"item {r['id']} refers to {ref} of plan {other.plan!r}")
        for r in records:
            current = existing.get(r["id"])
            if current is None:
                item = Item(id=r["id"], plan=plan, content=r["content"])
                for name in STATE_FIELDS:
                    if name in r and name != "depends_on":
                        setattr(item, name, r[name])
                w.create(item)
                added += 1
            else:
                # An import is no back door: what only a person may do to an item
                # (lift its need for approval, start or complete it while it waits
                # for one) is refused here as on every other route.
                readiness.check_person(
                    u,
                    plan,
                    current,
                    writer,
                    r.get("status", default_value("status")),
                    {"needs_approval": bool(r.get("needs_approval", False))},
                )
                before = w.count
                for name in STATE_FIELDS:
                    if name == "depends_on":
                        continue
                    w.set(current.id, name, getattr(current, name), r.get(name, default_value(name)))
                changed += w.count > before
                if w.count > before:
                    _past_lease(u, w, current, writer, at, force)
        for r in records:
            if r.get("parent"):
                graph.check_new_parent(r["id"], r["parent"], u.repo.parent_of)
        for r in records:
            blockers = sorted(r.get("depends_on") or [])
            current_deps = sorted(u.repo.blockers(r["id"]))
            if blockers != current_deps:
                for b in blockers:
                    if b not in current_deps:
                        graph.check_new_dependency(r["id"], b, u.repo.blockers)
                current = existing.get(r["id"])
                if current is not None:
                    _past_lease(u, w, current, writer, at, force)
                w.set(r["id"], "depends_on", current_deps, blockers)
        if any(r.get("parent") or r.get("depends_on") for r in records):
            # Phases and dependencies together may make the plan wait for itself.
            graph.check_plan_waits([(i.id, i.parent, i.status, i.depends_on) for i in u.repo.items(plan)])
        imported_checks = _import_checks(u, w, records)
        if w.count:
            u.repo.touch_plan(plan, at)
    out: dict[str, Any] = {"plan": plan, "records": len(records), "added": added, "changed": changed}
    if imported_checks:
        out["untrusted_checks"] = imported_checks  # nothing runs them before `todoledger trust`
    return out


def _past_lease(u: Unit, w: Writes, item: Item, writer: str, at: str, force: bool) -> None:
    """An import changes a leased item only as a person's recorded override (once per item)."""
    if (writer, item.id) in u.overrides:
        return
    lease = u.leased(item, writer, at, force=force)
    if lease is not None:
        u.record_override(w, lease, {})


def _export_checks(u: Unit, plan: str) -> dict[str, list[dict[str, Any]]]:
    from todoledger.ledger.receipts import export_checks

    return export_checks(u, plan)


def _import_checks(u: Unit, w: Writes, records: list[dict[str, Any]]) -> int:
    from todoledger.ledger.receipts import import_checks

    return import_checks(u, w, records)
