"""Readiness: what an item waits for, which items are ready, and what only a
person may let through (approvals). Shared by whole-list writes, single-item
commands and claims, so that each judges an item as `next` does.

Most plans have no checks: for them one query answers whether anything is
gated, and the gates' modules (see bench/bench_core.py for their import cost
on the agent's path) stay unloaded.
"""

from __future__ import annotations

from todoledger.core import graph
from todoledger.core.model import REPORTED, Item, LedgerError
from todoledger.ledger.values import PROGRESS, list_items

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.ledger.unit import Unit
    from todoledger.store.repo import Writes


def verification(
    u: Unit, plan: str, items: list[tuple[str, str]]
) -> tuple[dict[str, str | None], frozenset[str]]:
    """Per (id, status) of the plan's items, its verification state; and the
    items gated: completed, but held back as unfinished until their gates pass
    (`core.verification.gated`); none without checks."""
    if not items or not u.repo.has_checks(plan):
        return {i: REPORTED if status == "completed" else None for i, status in items}, frozenset()
    from todoledger.ledger.gates import states_and_held

    return states_and_held(u, plan, items)


def gated(u: Unit, plan: str, checked: bool | None = None) -> frozenset[str]:
    """The plan's items whose gates have not passed: what waits for them is not
    ready. `checked`: whether the plan has checks, where the caller knows."""
    if not (u.repo.has_checks(plan) if checked is None else checked):
        return frozenset()
    from todoledger.ledger.gates import gated_items

    return gated_items(u, plan)


def ready(u: Unit, plan: str, limit: int, *, approved_only: bool = True) -> list[Item]:
    """Up to `limit` ready items by priority then order: prerequisites finished and proven,
    and no person's approval awaited. `approved_only=False`: also those that wait only for
    a person's approval (what a person may start, and what an approval prompt asks about)."""
    out: list[Item] = []
    fetch = limit + 8
    gated_ids: frozenset[str] | None = None
    while True:
        candidates, checked = u.repo.ready_candidates(plan, fetch)
        if gated_ids is None:
            gated_ids = gated(u, plan, checked)
        # The query knows its prerequisites completed; these did not finish all the same.
        unfinished = gated_ids | u.repo.open_below([b for it in candidates for b in it.depends_on])
        # Waiting for a person's approval is not ready: no agent may start it (check_person).
        unfinished_ids = awaiting(u, plan, candidates) if approved_only else set()
        out = [
            it
            for it in candidates
            if it.id not in unfinished_ids
            and not unfinished.intersection(it.depends_on)
            and not ancestor_blocked(u, it, gated_ids)
        ][:limit]
        if len(out) >= limit or len(candidates) < fetch:
            return out
        fetch *= 4


def ancestor_blocked(u: Unit, item: Item, gated_ids: frozenset[str] = frozenset()) -> bool:
    """Does a phase above the item wait for unfinished work?"""
    parent, depth = item.parent, 0
    while parent and depth < 64:
        blockers = u.repo.items_by_id(u.repo.blockers(parent))
        if any(graph.unmet(b) or b.id in gated_ids for b in blockers.values()):
            return True
        if u.repo.open_below(list(blockers)):  # all completed, but over open work
            return True
        parent, depth = u.repo.parent_of(parent), depth + 1
    return False


def awaiting_ids(u: Unit, plan: str, ids: list[str]) -> set[str]:
    """Of these items (by id), those that need an approval they do not have: what a read
    marks not ready. Costs nothing where no item of the read needs approval (`ids` empty)."""
    if not ids:
        return set()
    found = u.repo.items_by_id(ids, deps=False)
    return awaiting(u, plan, list(found.values()))


def awaiting(u: Unit, plan: str, items: list[Item]) -> set[str]:
    """Of these items, those that need an approval they do not have (as they are now)."""
    gated = [it for it in items if it.needs_approval]
    if not gated:
        return set()
    from todoledger.core.approval import item_approvals

    events = [e.as_dict() for e in u.repo.approval_events(plan)]
    standing = item_approvals([it.as_dict() for it in gated], events)
    return {i for i, a in standing.items() if a.waiting}


def unmet_prerequisites(
    u: Unit, item_id: str, status_after: dict[str, str] | None = None
) -> list[tuple[Item, str]]:
    """What the item waits for that is not finished, its phases' prerequisites
    included, each with why: its status, or why a completed one does not
    count (its gate has not passed, or open work below it), as `next`
    judges them. `status_after` overlays statuses a write is about to set."""
    ids = list(u.repo.blockers(item_id))
    parent, depth = u.repo.parent_of(item_id), 0
    while parent and depth < 64:
        ids += u.repo.blockers(parent)
        parent, depth = u.repo.parent_of(parent), depth + 1
    found = u.repo.items_by_id(list(dict.fromkeys(ids)), deps=False)
    overlay = status_after or {}
    for blocker in found.values():
        blocker.status = overlay.get(blocker.id, blocker.status)
    done = [i for i in found if not graph.unmet(found[i])]
    gated_ids = gated(u, found[done[0]].plan) if done else frozenset()
    below = u.repo.open_below(done) if done else set()
    out: list[tuple[Item, str]] = []
    for i in dict.fromkeys(ids):
        if i not in found:
            continue
        if graph.unmet(found[i]):
            out.append((found[i], found[i].status))
        elif i in gated_ids:
            out.append((found[i], "completed, its gate has not passed"))
        elif i in below:
            out.append((found[i], "completed above open sub-items"))
    return out


def refuse_unmet(u: Unit, item: Item, status: str) -> None:
    """Refuse starting or completing an item whose prerequisites are unmet, naming why."""
    if status == item.status:
        return
    waiting = unmet_prerequisites(u, item.id)
    if waiting:
        verb = "complete" if status == "completed" else "start"
        raise LedgerError(
            f"cannot {verb} {item.id}: it waits for {list_items(waiting)};"
            " finish those first or remove the dependency (force overrides, and is recorded)"
        )
    if status == "completed" and u.repo.open_below([item.id]):
        # A phase is done through its children: what waits for it would wait on.
        raise LedgerError(
            f"cannot complete {item.id}: work below it is still open; finish or cancel"
            " its sub-items first (force overrides, and is recorded)"
        )


# What an agent gives as no reason: `cancel` without --reason records "cancelled".
NO_REASON = ("", "cancelled")


def held_by_person(u: Unit, plan: str, item: Item, *, need: bool = True) -> str | None:
    """Why a person holds this item, or None: a gate a person wrote, or the approval it
    needs (`need`) or was given. An agent does not cancel or drop such an item without a word."""
    from todoledger.core.approval import is_person
    from todoledger.core.verification import ROLES
    from todoledger.ledger.gates import check_repo

    theirs = [r for r in check_repo(u).checks(plan, [item.id]) if r.role in ROLES and is_person(r.created_by)]
    if theirs:
        return f"{theirs[0].created_by}'s gate {theirs[0].id}"
    approvals = [e for e in u.repo.approval_events(plan) if e.item == item.id and is_person(e.writer)]
    if approvals:
        return f"{approvals[-1].writer}'s approval"
    if need and item.needs_approval:
        return "the person's approval it needs"
    return None


def refuse_cancel_without_reason(
    u: Unit, plan: str, item: Item, writer: str, reason: str | None
) -> str | None:
    """An agent's cancel of a person's gated or approved item: refused without a reason;
    with one, returns what holds it (recorded as a finding for the person)."""
    from todoledger.core.approval import is_person

    if is_person(writer) or item.status == "cancelled":
        return None
    held = held_by_person(u, plan, item)
    if held is None:
        return None
    if (reason or "").strip() in NO_REASON:
        raise LedgerError(
            f"{item.id} is held by {held}: an agent cancels it only with a reason (--reason, or reason in"
            " plan_update), which the person reads; nothing was done"
        )
    return held


def check_person(
    u: Unit, plan: str, item: Item, writer: str, status: str | None, fields: dict[str, Any]
) -> None:
    """What only a person may do: start, claim or complete an item that waits
    for approval, and lift the need for it."""
    from todoledger.core.approval import is_person

    if is_person(writer):
        return
    if fields.get("needs_approval") is False and item.needs_approval:
        raise LedgerError(f"only a person can lift {item.id}'s need for approval (todoledger approve)")
    if status in PROGRESS and status != item.status and awaiting(u, plan, [item]):
        verb = "complete" if status == "completed" else "start"
        raise LedgerError(
            f"cannot {verb} {item.id}: it needs a person's approval first"
            " (todoledger approve, or the board); an agent cannot approve"
        )


def add_dep(u: Unit, w: Writes, item_id: str, blocker: str) -> None:
    """Make the item wait for `blocker` (refusing a cycle), as an event."""
    graph.check_new_dependency(item_id, blocker, u.repo.blockers)
    current = u.repo.blockers(item_id)
    if blocker not in current:
        w.set(item_id, "depends_on", sorted(current), sorted([*current, blocker]))
        check_waits(u, item_id, new_leaf=True)


def check_waits(u: Unit, item_id: str, *, new_leaf: bool = False) -> None:
    """Refuse the item's links, as written in this transaction, where phases and
    dependencies together make it wait for itself (`core.graph.check_waits`).
    `new_leaf`: only the item's own dependencies are new (its start is the one
    fact a cycle can pass)."""
    graph.check_waits(item_id, u.repo.blockers, u.repo.parent_of, u.repo.children, start_only=new_leaf)


def persons_gate(u: Unit, plan: str, ref: str, writer: str) -> dict[str, str] | None:
    """The person's gate that `writer` may not force past on its own (a gate whose
    check a person wrote, for any writer but a person on an unsigned ledger, where
    the person's route is enough): {check, by}; None: forcing needs no person."""
    from todoledger.core.approval import is_person
    from todoledger.ledger.signed import registry

    with u.store.read():
        signed = bool(registry(u)["keys"])
    if is_person(writer) and not signed:
        return None
    from todoledger.core.verification import ROLES
    from todoledger.ledger.gates import check_repo

    with u.store.read():
        item = u.require(plan, ref)
        theirs = [
            r for r in check_repo(u).checks(plan, [item.id]) if r.role in ROLES and is_person(r.created_by)
        ]
    return {"check": theirs[0].id, "by": theirs[0].created_by} if theirs else None
