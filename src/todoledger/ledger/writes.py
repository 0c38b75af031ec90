"""Whole-list writes: an agent's list (any dialect) merged into the plan, with
what the writer should know in the reply: the changes, warnings for progress
claimed past unmet prerequisites, approvals or failing gates, and notices for
what it dropped or what was taken as a rewording."""

from __future__ import annotations

from todoledger.core.describe import short
from todoledger.core.merge import DECIDED, Conflict, Merge, MergeInput, Seen, merge
from todoledger.core.model import (
    DROPPED,
    OPEN_STATUSES,
    AppliedBefore,
    Finding,
    Item,
    LedgerError,
    ParsedWrite,
)
from todoledger.core.record import dataclass, field
from todoledger.core.scoped import nullcontext
from todoledger.core.timefmt import now
from todoledger.ledger import readiness
from todoledger.ledger.unit import leased_to
from todoledger.ledger.values import PROGRESS, list_items

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit
    from todoledger.store.repo import Lease, Writes


# How the command line restores an item someone else closed; MCP names its own tool call.
RESTORE_HINT = "todoledger restore {id}"


@dataclass
class WriteResult:
    plan: str
    dialect: str
    revision: int
    ids: list[str]
    changes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # what the writer should act on now
    skipped: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "dialect": self.dialect,
            "revision": self.revision,
            "ids": self.ids,
            "changes": self.changes,
            "warnings": [w.as_dict() for w in self.warnings],
            "notices": self.notices,
            "skipped": self.skipped,
        }


def write(
    u: Unit,
    plan: str,
    writer: str,
    payload: str | bytes | dict[str, Any] | list[Any],
    *,
    dialect: str = "auto",
    response: Any = None,
    at: str | None = None,
    source_key: str | None = None,
    source_at: str | None = None,
    restore_hint: str = RESTORE_HINT,
) -> WriteResult:
    """An agent's whole list (or patch), parsed for its dialect and merged into the plan."""
    if source_key is not None:
        with u.store.read():
            if u.repo.has_source(source_key):  # imported before: skip even the parsing
                return WriteResult(plan, dialect, u.repo.revision(plan), [], skipped=True)
    from todoledger.dialects import parse

    parsed = parse(payload, dialect, response=response)
    # Inside a longer transaction (an import's batch) the check above still holds.
    checked = source_key is not None and u.batching
    return apply(
        u,
        plan,
        writer,
        parsed,
        at=at,
        source_key=source_key,
        source_at=source_at,
        restore_hint=restore_hint,
        _source_checked=checked,
    )


def apply(
    u: Unit,
    plan: str,
    writer: str,
    parsed: ParsedWrite,
    *,
    at: str | None = None,
    source_key: str | None = None,
    source_at: str | None = None,
    restore_hint: str = RESTORE_HINT,
    _source_checked: bool = False,
) -> WriteResult:
    """A parsed list merged into the plan: the merge's changes recorded as one
    op, the writer's base moved on, and what the writer should know in the reply.
    `restore_hint`: how this route restores an item (`{id}`, `{status}`), told
    to a writer whose list works on an item someone else closed. A call whose
    idempotency key the ledger holds (its first attempt committed, its reply was
    lost) applies nothing: skipped, as a source seen before."""
    try:
        return _apply(u, plan, writer, parsed, at, source_key, source_at, restore_hint, _source_checked)
    except AppliedBefore:
        return WriteResult(plan, parsed.dialect, u.repo.revision(plan), [], skipped=True)


def _apply(
    u: Unit,
    plan: str,
    writer: str,
    parsed: ParsedWrite,
    at: str | None,
    source_key: str | None,
    source_at: str | None,
    restore_hint: str,
    _source_checked: bool,
) -> WriteResult:
    at = at or now()
    warnings = [f for f in parsed.findings if f.level == "warning"]
    with u.transaction(plan):
        if source_key and not _source_checked and u.repo.has_source(source_key):
            return WriteResult(plan, parsed.dialect, u.repo.revision(plan), [], skipped=True)
        # The writer's base and the items it names, as they are now, in one query.
        base, known, blocked = u.repo.writer_view(plan, writer)
        linked = any(e.ext_id or e.blocked_by or e.blocks for e in parsed.items)
        aliases = u.repo.aliases(plan, writer) if linked else {}
        wanted: set[str] = set()
        for entry in parsed.items:
            if entry.ext_id:
                wanted.add(entry.ext_id)
                if entry.ext_id in aliases:
                    wanted.add(aliases[entry.ext_id])
        # Only text the writer has not seen needs a lookup across the plan.
        seen_text = {s.content for s in base.values()}
        contents = [e.content for e in parsed.items if e.content and e.content not in seen_text]
        if contents:
            by_content, also_blocked = u.repo.items_by_content(plan, contents)
            known.update(by_content)
            blocked |= also_blocked
        wanted.difference_update(known)
        if wanted:  # ids the writer names that it has not seen
            named = {
                i: it for i, it in u.repo.items_by_id(sorted(wanted), deps=False).items() if it.plan == plan
            }
            if named:
                known.update(named)
                blocked |= u.repo.with_blockers(list(named))
        known = {i: known[i] for i in sorted(known)}  # in id order, as merge has always met them
        minted: set[str] = set()  # ids this write has given: not in the ledger yet
        _check_patch_targets(u, parsed, known, aliases)
        result = merge(
            MergeInput(
                writer=writer,
                at=at,
                incoming=parsed.items,
                known=known,
                base={k: v for k, v in base.items() if k in known},
                aliases=aliases,
                whole=parsed.whole,
                tail=lambda: u.repo.tail_position(plan),
                new_id=lambda: _mint(u, known, minted),
                # Inside the write transaction writers take turns: the next revision is this write's.
                revision=lambda: u.repo.revision(plan) + 1,
            )
        )
        held = u.foreign_leases(plan, writer, at)
        left = _leave_leased(parsed, result, known, base, held) if held else []
        warnings += _hold_for_approval(u, plan, writer, parsed, result, known)
        left += _hold_person_drops(u, plan, writer, result, known)
        changes = _changes(result, known)
        warnings += _progress_warnings(u, parsed, result, known, blocked)
        warnings += _completion_warnings(u, plan, result)
        notices = (
            _drop_notices(result, known)
            + _revive_notices(result, known)
            + _closed_notices(u, plan, result, known, restore_hint)
            + _reword_notices(parsed, result, known)
            + left
        )
        links = any(e.blocked_by or e.blocks for e in parsed.items)
        fresh = [c for c in result.conflicts if not _repeat_conflict(u, c.item, writer, _conflict(c))]
        recorded = result.creates or result.sets or result.dropped or fresh
        if not (recorded or links or warnings or source_key):
            # Agents rewrite unchanged lists often: no op row, no revision, only the writer's view.
            u.save_base(plan, writer, base, result.base, whole=parsed.whole, listed=True)
            return WriteResult(
                plan, parsed.dialect, u.repo.ensure_plan(plan, at), result.matches, notices=notices
            )
        # A link refused (a cycle) after this write's state went in takes back only this
        # write, so that an enclosing transaction (an import) can go on.
        with u.repo.savepoint() if links else nullcontext():
            w = u.op(
                plan,
                writer,
                at,
                "write",
                dialect=parsed.dialect,
                summary=_summary(changes) if changes else None,
                warnings=[f.as_dict() for f in warnings],
                source_key=source_key,
                source_at=source_at,
            )
            for create in result.creates:
                create.item.plan = plan
                w.create(create.item)
            for s in result.sets:
                w.set(s.item, s.field, s.old, s.new)
            for c in fresh:
                w.annotate(c.item, "conflict", None, _conflict(c))
            for item_id in result.dropped:
                w.annotate(item_id, "dropped", None, writer)
            if links:
                _apply_links(u, w, parsed, result.matches, known, aliases | result.aliases, held)
        new_base = dict(result.base)
        for create in result.creates:
            new_base[create.item.id] = Seen.of(create.item)
            entry = parsed.items[create.index]
            if entry.ext_id and entry.ext_id != create.item.id:
                result.aliases[entry.ext_id] = create.item.id
        u.save_base(plan, writer, base, new_base, whole=parsed.whole, listed=True)
        if result.aliases:
            u.repo.save_aliases(plan, writer, result.aliases)
        revision = u.repo.touch_plan(plan, at) if w.count else u.repo.ensure_plan(plan, at)
    return WriteResult(plan, parsed.dialect, revision, result.matches, changes, warnings, notices)


def record_refused(
    u: Unit,
    plan: str,
    writer: str,
    reason: str,
    *,
    dialect: str | None = None,
    at: str | None = None,
    source_key: str | None = None,
    source_at: str | None = None,
) -> bool:
    """Tell in the plan's story that a call was made and refused (by the agent's
    own tool, or by lint): nothing in the plan changes. False if recorded before."""
    at = at or now()
    with u.transaction(plan):
        if source_key and u.repo.has_source(source_key):
            return False
        u.check_new_plan(plan)
        u.repo.ensure_plan(plan, at)
        mine = {"dialect": dialect, "summary": reason, "source_key": source_key, "source_at": source_at}
        marks = u.marks() | u.take_call_key()
        u.repo.new_op(
            plan, writer, at, "refused", **(marks | {k: v for k, v in mine.items() if v is not None})
        )
    return True


# Refusals recorded one by one, per principal and plan and day (issue 31): a sessionless client
# is a new writer on every request, so the cap counts the principal, not the writer. Past it,
# one counter event says so, and every refusal after it is counted in a row (core/refusals.py).
REFUSALS_PER_DAY = 100


def record_refusal(u: Unit, plan: str, writer: str, reason: str, *, cap: int = REFUSALS_PER_DAY) -> bool:
    """Record a live refused write (lint, a lease fence, an identity refusal...) in the plan's
    story, with its writer and reason; nothing else changes. Only in a plan that exists (a
    refusal creates no plan). Past the cap, counted under the day's counter event. False when
    nothing was recorded or counted (no such plan)."""
    from todoledger.core.approval import principal
    from todoledger.core.refusals import counter_key, counter_note

    at = now()
    who = principal(writer)
    day = at[:10]
    with u.transaction(plan):
        if u.repo.revision(plan) == 0 and not u.repo.items(plan) and not u.repo.ops(plan):
            return False
        today = sum(int(n) for w, n in u.repo.refused_since(plan, day) if principal(str(w)) == who)
        if today < cap:
            return record_refused(u, plan, writer, reason, at=at)
        counter = counter_key(plan, who, day)
        record_refused(u, plan, writer, counter_note(who, cap), at=at, source_key=counter)
        u.repo.count_refusal(counter, plan, who, day)
    return True


def _hold_for_approval(
    u: Unit, plan: str, writer: str, parsed: ParsedWrite, result: Merge, known: dict[str, Item]
) -> list[Finding]:
    """An agent's list cannot start or complete an item that waits for a
    person's approval: that status change is left out, and the agent told."""
    from todoledger.core.approval import is_person

    moves = [s for s in result.sets if s.field == "status" and s.new in PROGRESS and s.item in known]
    if is_person(writer) or not moves:
        return []
    awaiting = readiness.awaiting(u, plan, [known[s.item] for s in moves])
    if not awaiting:
        return []
    result.sets = [s for s in result.sets if not (s in moves and s.item in awaiting)]
    where = {item_id: parsed.items[n].where or f"item {n}" for n, item_id in enumerate(result.matches)}
    return [
        Finding(
            "warning",
            where.get(s.item, s.item),
            "needs-approval",
            f"{short(known[s.item].content, 60)!r} stays {known[s.item].status}: it needs a person's"
            " approval before an agent marks it " + str(s.new),
            s.item,
        )
        for s in moves
        if s.item in awaiting
    ]


def _hold_person_drops(u: Unit, plan: str, writer: str, result: Merge, known: dict[str, Item]) -> list[str]:
    """An agent's whole list that leaves out an item a person gated or approved does not drop
    it (as needs-approval holds a start): dropping is no way around a refused cancel (issue 31)."""
    from todoledger.core.approval import is_person

    if is_person(writer) or not result.dropped:
        return []
    held = {
        i: why for i in result.dropped if i in known and (why := readiness.held_by_person(u, plan, known[i]))
    }
    if not held:
        return []
    result.dropped = [i for i in result.dropped if i not in held]
    # The drop's own changes (status dropped, the reason it gives): none of it applies.
    result.sets = [x for x in result.sets if not (x.item in held and x.field in ("status", "reason"))]
    return [
        f"{short(known[i].content, 60)!r} ({i}) stays {known[i].status}: it is held by {why}, so a list that"
        " leaves it out does not drop it; to cancel it, give a reason (plan_update status=cancelled, or"
        " todoledger cancel --reason)"
        for i, why in held.items()
    ]


def _leave_leased(
    parsed: ParsedWrite,
    result: Merge,
    known: dict[str, Item],
    base: dict[str, Seen],
    held: dict[str, Lease],
) -> list[str]:
    """A list does not change an item another writer holds a live lease on:
    a lease is a policy, not bad input, so the rest of the list applies and
    the item stays as its holder has it, named in the reply (the hooks log it).
    The writer's view of it stays as it was, so its change is not forgotten."""
    linked = {i for e, i in zip(parsed.items, result.matches, strict=True) if e.blocked_by and i in held}
    skipped = {s.item for s in result.sets if s.item in held} | (set(result.dropped) & held.keys()) | linked
    if not skipped:
        return []
    result.sets = [s for s in result.sets if s.item not in skipped]
    result.dropped = [i for i in result.dropped if i not in skipped]
    result.revived = [i for i in result.revived if i not in skipped]
    result.conflicts = [c for c in result.conflicts if c.item not in skipped]
    for item_id in skipped:
        if item_id in base:
            result.base[item_id] = base[item_id]
        else:
            result.base.pop(item_id, None)
    named = {i: f"{short(known[i].content, 60)!r} ({i})" if i in known else i for i in skipped}
    return [f"{leased_to(held[i], named[i])}: left as {held[i].holder} has it" for i in sorted(skipped)]


def _progress_warnings(
    u: Unit, parsed: ParsedWrite, result: Merge, known: dict[str, Item], blocked: set[str]
) -> list[Finding]:
    """A list cannot be refused for what the agent already did, but starting or
    finishing work whose prerequisites are unmet is told to the writer and kept.
    `blocked`: which known items wait for anything (most lists have no links at all)."""
    after = {s.item: s.new for s in result.sets if s.field == "status"}
    moved = [i for i, status in after.items() if status in PROGRESS and i in known]
    if not moved:
        return []
    linked = {i for i in moved if known[i].parent or i in blocked}
    out: list[Finding] = []
    for index, item_id in enumerate(result.matches):
        status = after.get(item_id)
        if item_id not in linked or status not in PROGRESS:
            continue
        waiting = readiness.unmet_prerequisites(u, item_id, after)
        if waiting:
            where = parsed.items[index].where or f"item {index}"
            message = (
                f"{short(known[item_id].content, 60)!r} marked {status} while it waits for"
                f" {list_items(waiting)}"
            )
            out.append(Finding("warning", where, "prerequisites-unmet", message, item_id))
    return out


def _check_patch_targets(
    u: Unit, parsed: ParsedWrite, known: dict[str, Item], aliases: dict[str, str]
) -> None:
    if parsed.whole:
        return
    for entry in parsed.items:
        target = entry.ext_id and aliases.get(entry.ext_id, entry.ext_id)
        if entry.ext_id and target not in known and not entry.content:
            raise LedgerError(
                f"{entry.where or 'task'}: unknown task id {entry.ext_id!r} and no subject to create it"
            )


def _apply_links(
    u: Unit,
    w: Writes,
    parsed: ParsedWrite,
    matches: list[str],
    known: dict[str, Item],
    aliases: dict[str, str],
    held: dict[str, Lease],
) -> None:
    """The list's links (blocked_by, blocks), except onto items another writer holds."""

    def resolve(ref: str) -> str | None:
        target = aliases.get(ref, ref)
        if target in known:
            return target
        item = u.repo.item(target)
        return target if item is not None and item.plan == w.plan else None  # never reach into another plan

    for entry, item_id in zip(parsed.items, matches, strict=True):
        for blocker_ref in entry.blocked_by if item_id not in held else ():
            blocker = resolve(blocker_ref)
            if blocker:
                readiness.add_dep(u, w, item_id, blocker)
        for dependent_ref in entry.blocks:
            dependent = resolve(dependent_ref)
            if dependent and dependent not in held:
                readiness.add_dep(u, w, dependent, item_id)


def _repeat_conflict(u: Unit, item: str, writer: str, detail: dict[str, Any]) -> bool:
    """Has this writer already reported this conflict since the item last changed?"""
    return detail in u.repo.conflicts_since_change(item, writer)


def _completion_warnings(u: Unit, plan: str, result: Merge) -> list[Finding]:
    """Gated items the list says completed that are not proven (one query for a plan without checks)."""
    completed = [s.item for s in result.sets if s.field == "status" and s.new == "completed"]
    if not completed or not u.repo.has_checks(plan):
        return []
    from todoledger.ledger.gates import write_warnings

    return write_warnings(u, plan, completed)


def _describe(item: str, name: str, old: Any, new: Any) -> dict[str, Any]:
    if name == "status" and new in ("cancelled", DROPPED):
        return {"kind": "status", "item": item, "old": old, "new": new}
    kind = {"content": "reworded", "position": "reordered", "priority": "priority"}.get(name, name)
    return {"kind": kind, "item": item, "old": old, "new": new}


def _changes(result: Merge, known: dict[str, Item]) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = [
        {"kind": "added", "item": c.item.id, "content": c.item.content} for c in result.creates
    ]
    changes += [_describe(s.item, s.field, s.old, s.new) for s in result.sets]
    changes += [{"kind": "conflict", "item": c.item, **_conflict(c)} for c in result.conflicts]
    # Named, not counted: the writer sees what it left out and what it was.
    changes += [
        {"kind": "dropped", "item": i, "content": known[i].content, "was": known[i].status}
        for i in result.dropped
    ]
    return changes


def _drop_notices(result: Merge, known: dict[str, Item]) -> list[str]:
    """Work in progress that a list left out was dropped: if it was finished
    instead, the writer should say so."""
    dropped = {s.item for s in result.sets if s.field == "status" and s.new == DROPPED}
    return [
        f"you dropped {short(known[i].content, 60)!r} ({i}), which was in progress: it is now dropped;"
        " if it is done, mark it completed; list it again to revive it"
        for i in result.dropped
        if i in dropped and known[i].status == "in_progress"
    ]


def _revive_notices(result: Merge, known: dict[str, Item]) -> list[str]:
    """A dropped item listed again is revived: the writer is told it had been dropped, by whom."""
    now = {s.item: s.new for s in result.sets if s.field == "status"}
    out = []
    for i in result.revived:
        reason = known[i].reason or ""
        how = reason.removeprefix("dropped") if reason.startswith("dropped by ") else ""
        out.append(f"{short(known[i].content, 60)!r} ({i}) was dropped{how}; listed again, it is {now[i]}")
    return out


def _closed_notices(
    u: Unit, plan: str, result: Merge, known: dict[str, Item], restore_hint: str
) -> list[str]:
    """A list that works on an item someone completed or cancelled does not
    reopen it: the writer is told who closed it, why, and the one call that
    restores it, so that it can stop or ask."""
    out = []
    for c in result.conflicts:
        if (
            c.field != "status"
            or c.winner != "ledger"
            or c.kept not in DECIDED
            or c.rejected not in OPEN_STATUSES
        ):
            continue
        item = known[c.item]
        by = closed_by(u, plan, c.item)
        why = f": {item.reason!r}" if item.reason and c.kept == "cancelled" else ""
        verb = "restore" if c.kept == "cancelled" else "reopen"
        hint = restore_hint.format(id=c.item, status=c.rejected)
        out.append(
            f"{short(item.content, 60)!r} ({c.item}) was {c.kept} by {by}{why}; listed as {c.rejected},"
            f" it stays {c.kept}. To {verb} it: {hint}; or stop and ask {by}"
        )
    return out


def closed_by(u: Unit, plan: str, item: str) -> str:
    """Who gave the item its current status: the writer of its last status change (or its creation)."""
    return u.repo.status_writers([item]).get(item, "someone")


def _reword_notices(parsed: ParsedWrite, result: Merge, known: dict[str, Item]) -> list[str]:
    """An entry taken as a rewording of an item the list left out carries that
    item's status, history and evidence: the writer is told which, since a
    close text can still be other work."""
    guessed = {
        item_id
        for index, item_id in enumerate(result.matches)
        if item_id is not None and not parsed.items[index].ext_id
    }
    return [
        f"{short(str(s.new), 60)!r} was taken as a rewording of {short(str(s.old), 60)!r} ({s.item}),"
        f" which was {known[s.item].status}: if it is other work, list that item again"
        for s in result.sets
        if s.field == "content" and s.item in guessed and s.item in known
    ]


def _conflict(c: Conflict) -> dict[str, Any]:
    return {"field": c.field, "kept": c.kept, "rejected": c.rejected, "winner": c.winner}


def _summary(changes: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for ch in changes:
        counts[ch["kind"]] = counts.get(ch["kind"], 0) + 1
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def _mint(u: Unit, known: dict[str, Item], minted: set[str]) -> str:
    """A fresh id for a new item of this write: unused in the ledger, and not
    one this write already gave (a long list's new items could meet)."""
    while True:
        candidate = u.fresh_id(known)
        if candidate not in minted:
            minted.add(candidate)
            return candidate
