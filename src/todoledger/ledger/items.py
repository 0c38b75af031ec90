"""Single-item commands: add, update (start, done, cancel, dependencies),
restore and clear. Starting or completing an item is refused while what it
waits for is unmet, and completing one runs its gates first."""

from __future__ import annotations

from todoledger.core import graph
from todoledger.core.merge import Seen
from todoledger.core.model import (
    DEFAULT_PRIORITY,
    STATE_FIELDS,
    UNDONE_STATUSES,
    CycleError,
    Item,
    LedgerError,
)
from todoledger.core.timefmt import now
from todoledger.ledger import readiness
from todoledger.ledger.values import PROGRESS, validate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from todoledger.ledger.receipts import GatePassed
    from todoledger.ledger.unit import Unit
    from todoledger.store.repo import Writes


def update(
    u: Unit,
    plan: str,
    writer: str,
    ref: str,
    *,
    kind: str = "update",
    at: str | None = None,
    force: bool = False,
    token: int | None = None,
    consent: dict[str, str] | None = None,
    recheck: Callable[[], Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Change one item's fields (content, status, priority, active_form,
    parent, evidence, reason, notes) and dependencies (`add_blocker`,
    `remove_blocker`). Starting or completing an item whose prerequisites
    are unmet is refused unless `force`, which is recorded. `token`, a
    claim's fencing token, refuses the change once the item was claimed again.
    An item another writer holds a live lease on is refused, unless a person
    forces it (recorded as a `forced` event past the lease). `consent`: a person's
    consent to force this completion past their gate, as `tasks.gate_consent`
    found it for the MCP task that waited for it (the façade looks; without it, a
    force past a person's gate is refused as ever); kept with the override, once
    `recheck` finds it again inside the transaction."""
    status = fields.get("status")
    # Why a person forced it: recorded with whatever the force overrides.
    why = {"reason": fields["force_reason"]} if fields.get("force_reason") else {}
    at = at or now()
    with u.store.read():  # before the gates run: a refusal runs no check
        early = u.require(plan, ref)
        if token is None:  # with a token, the fence in the transaction says who holds it
            u.leased(early, writer, at, force=force)
        readiness.check_person(u, plan, early, writer, status, fields)
        if status == "cancelled":
            readiness.refuse_cancel_without_reason(u, plan, early, writer, fields.get("reason"))
        if status in PROGRESS and not force:
            readiness.refuse_unmet(u, early, status)
    gate = _gate(u, plan, ref, writer, fields, force, consent)
    with u.transaction(plan):
        item = u.require(plan, ref)
        if gate is not None and gate.forced is not None and consent is not None:
            _consent_holds(item.id, consent, recheck)
        if token is not None:
            u.fence(item, writer, token, at)
        overridden = u.leased(item, writer, at, force=force)
        readiness.check_person(u, plan, item, writer, status, fields)
        held = (
            readiness.refuse_cancel_without_reason(u, plan, item, writer, fields.get("reason"))
            if status == "cancelled"
            else None
        )
        waiting: list[tuple[Item, str]] = []
        if status in PROGRESS and status != item.status:
            if not force:
                readiness.refuse_unmet(u, item, status)  # again: it may have changed since the gates ran
            waiting = readiness.unmet_prerequisites(u, item.id)
        above_open = status == "completed" and status != item.status and bool(u.repo.open_below([item.id]))
        w = u.op(
            plan,
            writer,
            at,
            kind,
            summary=f"{kind} {item.id}" + (" (forced)" if waiting or above_open or overridden else ""),
        )
        if overridden is not None:
            u.record_override(w, overridden, why)
        if gate is not None:
            gate.record(u, w)  # the gates' receipts (and an override) go with the change
        if waiting:
            w.annotate(
                item.id,
                "forced",
                None,
                {"past": "prerequisites", "open": [b.id for b, _ in waiting]} | why,
            )
        if above_open:
            w.annotate(item.id, "forced", None, {"past": "open sub-items"} | why)
        if held is not None:  # the person reads it: a finding of the report
            w.annotate(item.id, "held_cancel", None, {"held": held, "reason": fields.get("reason")})
        _update_item(u, w, plan, item, fields)
        u.repo.save_base(plan, writer, {item.id: Seen.of(u.require(plan, item.id))})
        if w.count:
            u.repo.touch_plan(plan, at)
        return u.require(plan, item.id).as_dict()


def _update_item(u: Unit, w: Writes, plan: str, item: Item, fields: dict[str, Any]) -> None:
    add_blocker = fields.pop("add_blocker", None)
    remove_blocker = fields.pop("remove_blocker", None)
    for name, value in fields.items():
        if name not in STATE_FIELDS or name == "depends_on":
            raise LedgerError(
                f"cannot update {name!r}"
                + (": use add_blocker/remove_blocker" if name == "depends_on" else "")
            )
        if value is None:
            continue
        value = validate(name, value)
        if name == "parent":
            value = u.require(plan, value).id if value else None
            if value:
                graph.check_new_parent(item.id, value, u.repo.parent_of)
        old = getattr(item, name)
        if name == "status" and value != item.status and item.reason and fields.get("reason") is None:
            # A reason belongs to the state it explains: it stays in the history, not on the item.
            w.set(item.id, "reason", item.reason, None)
            item.reason = None
        w.set(item.id, name, old, value)
        setattr(item, name, value)
    if fields.get("parent"):
        readiness.check_waits(u, item.id)  # under a phase it waits for, or that waits for it
    if add_blocker:
        readiness.add_dep(u, w, item.id, u.require(plan, add_blocker).id)
    if remove_blocker:
        blocker = u.require(plan, remove_blocker).id
        current = u.repo.blockers(item.id)
        if blocker not in current:
            raise LedgerError(f"{item.id} does not wait for {blocker}")
        w.set(item.id, "depends_on", sorted(current), sorted(b for b in current if b != blocker))


def restore(u: Unit, plan: str, writer: str, ref: str) -> dict[str, Any]:
    """Bring back a dropped or cancelled item with the status it had before."""
    with u.store.read():
        item = u.require(plan, ref)
        if item.status not in UNDONE_STATUSES:
            raise LedgerError(f"{item.id} is {item.status}, not dropped or cancelled: nothing to restore")
        previous = "pending"
        for ev in reversed(u.repo.events(plan, item.id)):
            if ev.field == "status" and ev.new in UNDONE_STATUSES and ev.old not in UNDONE_STATUSES:
                previous = ev.old or "pending"
                break
    return update(u, plan, writer, item.id, status=previous, kind="restore")


def add(
    u: Unit,
    plan: str,
    writer: str,
    content: str,
    *,
    parent: str | None = None,
    after: str | None = None,
    priority: str | None = None,
    status: str = "pending",
    depends_on: Iterable[str] = (),
    notes: str | None = None,
    estimate: str | None = None,
    uses: Iterable[str] = (),
    needs_approval: bool = False,
    at: str | None = None,
) -> dict[str, Any]:
    """A new item, placed after `after` (else last among its parent's children, else last)."""
    at = at or now()
    content = validate("content", content)
    estimate = validate("estimate", estimate) if estimate else None
    used: list[str] = validate("uses", list(uses)) if uses else []
    priority = validate("priority", priority or DEFAULT_PRIORITY)
    status = validate("status", status)
    if notes is not None:
        notes = validate("notes", notes)
    with u.transaction(plan):
        parent_id = u.require(plan, parent).id if parent else None
        blockers = sorted({u.require(plan, d).id for d in depends_on})
        position = _position_after(u, plan, after, parent_id)
        item = Item(
            id=u.fresh_id({}),
            plan=plan,
            content=content,
            status=status,
            priority=priority,
            parent=parent_id,
            position=position,
            depends_on=blockers,
            notes=notes,
            estimate=estimate,
            uses=used,
            needs_approval=bool(needs_approval),
        )
        w = u.op(plan, writer, at, "add", summary=f"added {item.id}")
        w.create(item)
        if parent_id and blockers:  # the transaction ends with nothing written if it waits for itself
            try:
                readiness.check_waits(u, item.id, new_leaf=True)
            except CycleError as refusal:  # its id is never written: name it as the caller knows it
                raise CycleError(str(refusal).replace(item.id, "the new item")) from None
        u.repo.save_base(plan, writer, {item.id: Seen.of(item)})
        u.repo.touch_plan(plan, at)
        created = u.require(plan, item.id)
    return created.as_dict()


def _position_after(u: Unit, plan: str, after: str | None, parent: str | None) -> float:
    anchor = u.require(plan, after) if after else None
    if anchor is None and parent:
        kids = [i for i in u.repo.items(plan) if i.parent == parent]
        anchor = kids[-1] if kids else u.require(plan, parent)
    if anchor is None:
        return u.repo.tail_position(plan) + 1.0
    following = u.repo.position_after(plan, anchor.position)
    return anchor.position + 1.0 if following is None else (anchor.position + following) / 2


def clear(u: Unit, plan: str, writer: str) -> int:
    """Remove every item of a plan (recorded, so `undo` brings them back)."""
    """Remove every item of a plan (recorded, so `undo` brings them back)."""
    at = now()
    with u.transaction(plan):
        items = u.repo.items(plan)
        w = u.op(plan, writer, at, "clear", summary=f"cleared {len(items)} items")
        for item in items:
            w.remove(item)
        if items:
            u.repo.touch_plan(plan, at)
    return len(items)


def _gate(
    u: Unit,
    plan: str,
    ref: str,
    writer: str,
    fields: dict[str, Any],
    force: bool,
    consent: dict[str, str] | None,
) -> GatePassed | None:
    """Completing an item runs its gates first (outside any transaction: a check may take a minute)."""
    force_reason = fields.pop("force_reason", None)
    if fields.get("status") != "completed":
        return None
    if force_reason is None:
        consent = None
        with u.store.read():
            if not u.repo.has_checks(plan):
                return None  # no gates to run
    else:
        consent = _refuse_force_past_person(u, plan, ref, writer, consent)
    from todoledger.ledger.receipts import gate_before_done

    try:
        passed = gate_before_done(u, plan, ref, writer, force_reason)
    except LedgerError as refusal:
        if force and force_reason is None:  # forcing past a gate takes a reason, recorded with it
            raise LedgerError(f"{refusal}; overriding a failing gate needs {u.override}") from None
        raise
    if passed is not None and passed.forced is not None and consent is not None:
        passed.forced = passed.forced | consent  # who let it through, kept with the override
    return passed


def _consent_holds(item_id: str, consent: dict[str, str], recheck: Callable[[], Any] | None) -> None:
    """Inside the completing transaction: the person's consent still stands as it was
    found before the gates ran (`recheck`, the façade's `tasks.gate_consent` again: not
    used meanwhile by another update of the same task, the item not changed nor
    approved again since)."""
    if recheck is None or recheck() != consent:
        raise LedgerError(
            f"{item_id} not completed: the consent to task {consent['task'][:8]} changed or was used"
            " while its gates ran; nothing was done"
        )


def _refuse_force_past_person(
    u: Unit, plan: str, ref: str, writer: str, consent: dict[str, str] | None
) -> dict[str, str] | None:
    """Only a person forces past a gate whose check a person wrote: on a signed ledger
    with the person's signature, made now. Or a person consented: approved the item
    naming this writer's MCP task that waits to force its completion
    (`tasks.gate_consent`); the consent is returned, kept with the `forced` event."""
    from todoledger.ledger.signed import force

    theirs = readiness.persons_gate(u, plan, ref, writer)
    if theirs is None:
        return None
    with u.store.read():
        item_id = u.require(plan, ref).id
    if consent is None:
        verb = f"--force past {theirs['by']}'s gate {theirs['check']} on {item_id}"
        force(u, verb, writer, plan, item_id, {"past": "gate", "check": theirs["check"]})
    return consent
