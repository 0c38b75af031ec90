"""Reading a plan: `show` with what is derived (blocked, ready, verification,
forced), its JSON text, the view every reader renders, history and ops, the
consistency check, watching for changes, and the recovery text (`prime`)."""

from __future__ import annotations

from todoledger.core import graph
from todoledger.core.merge import Seen
from todoledger.core.model import OPEN_STATUSES
from todoledger.ledger import readiness
from todoledger.ledger.values import compact_row, seen_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    from todoledger.core.view import PlanView
    from todoledger.ledger.unit import Unit


def plans(u: Unit) -> list[dict[str, Any]]:
    """Every plan: revision, last update, item and open counts."""
    with u.store.read():
        return [
            {"plan": r[0], "revision": r[1], "updated_at": r[2], "items": r[3], "open": r[4]}
            for r in u.repo.plans()
        ]


def show(u: Unit, plan: str, *, writer: str | None = None) -> dict[str, Any]:
    """The plan with derived `blocked`/`ready`. Given a writer, the items
    join its base: it has now seen them."""
    if writer is not None:
        with u.transaction(plan):
            rows = u.repo.item_rows(plan)
            if rows:
                u.repo.save_base(plan, writer, {r["id"]: seen_of(r) for r in rows})
            revision = u.repo.revision(plan)
            derive = _derivation(u, plan, rows, contests(u, plan))
    else:
        with u.store.read():
            rows = u.repo.item_rows(plan)
            revision = u.repo.revision(plan)
            derive = _derivation(u, plan, rows, contests(u, plan))
    derive()
    return {"plan": plan, "revision": revision, "items": rows}


def _derivation(
    u: Unit, plan: str, rows: list[dict[str, Any]], contested: dict[str, Any]
) -> Callable[[], None]:
    """What `show` and the recovery view derive for their rows (blocked, ready, waits on
    cancelled, verification, forced, contested): read now, inside the caller's read;
    the returned call sets them on the rows, after the read is over."""
    verified, gated = readiness.verification(u, plan, [(r["id"], r["status"]) for r in rows])
    forced = u.repo.forced(plan)
    approval = _awaiting(u, plan, [(r["id"], r["status"], r["needs_approval"]) for r in rows])

    def derive() -> None:
        links = [(r["id"], r["parent"], r["status"], r["depends_on"]) for r in rows]
        derived = not_ready(graph.derive_links(links, gated), approval)
        waiting = graph.cancelled_links(links)
        for row in rows:
            item_id = row["id"]
            row["blocked"], row["ready"] = derived[item_id]
            row["waits_on_cancelled"] = waiting.get(item_id, [])
            row["verification"] = verified[item_id]
            row["forced"] = forced.get(item_id, [])
            row["contested"] = contested.get(item_id, [])

    return derive


def _awaiting(u: Unit, plan: str, rows: list[tuple[str, str, Any]]) -> set[str]:
    """Of these (id, status, needs_approval) rows, the pending ones waiting for a person's approval."""
    return readiness.awaiting_ids(u, plan, [i for i, status, needs in rows if needs and status == "pending"])


def not_ready(derived: dict[str, tuple[bool, bool]], approval: set[str]) -> dict[str, tuple[bool, bool]]:
    """`derived` (blocked, ready) with the items that wait for a person's approval not ready:
    an agent may not start them, and `ready` must never say it can."""
    for item_id in approval:
        derived[item_id] = (derived[item_id][0], False)
    return derived


def contests(u: Unit, plan: str) -> dict[str, list[dict[str, str]]]:
    """Items the plan keeps completed or cancelled while a writer's latest list
    works on them: per item, each such writer, what its list says, and who
    closed the item ("listed as in_progress by X, but cancelled by Y")."""
    found = u.repo.contested(plan)
    if not found:
        return {}
    closers = u.repo.status_writers(sorted({item for item, _, _ in found}))
    out: dict[str, list[dict[str, str]]] = {}
    for item, writer, listed in found:
        if listed in OPEN_STATUSES:
            out.setdefault(item, []).append(
                {"writer": writer, "listed": listed, "closed_by": closers.get(item, "")}
            )
    return out


def show_json(u: Unit, plan: str, *, writer: str | None = None) -> str:
    """`show` as compact JSON text, byte for byte `jsontext.compact(show(...))`,
    written from the rows without building the dicts (`core.itemjson`)."""
    from todoledger.core.itemjson import plan_text
    from todoledger.store.repo import decode

    with u.transaction(plan) if writer is not None else u.store.read():
        rows, deps = u.repo.item_tuples(plan)
        if writer is not None and rows:
            seen = {r[0]: Seen(r[2], r[3], r[4], r[5]) for r in rows}
            u.repo.save_base(plan, writer, seen)
        revision = u.repo.revision(plan)
        verified, gated = readiness.verification(u, plan, [(r[0], r[3]) for r in rows])
        forced = u.repo.forced(plan)
        contested = contests(u, plan)
        approval = _awaiting(u, plan, [(r[0], r[3], r[17]) for r in rows])
    links = [(r[0], r[6], r[3], deps.get(r[0], ())) for r in rows]
    return plan_text(
        plan,
        revision,
        rows,
        deps,
        not_ready(graph.derive_links(links, gated), approval),
        graph.cancelled_links(links),
        verified,
        forced,
        contested,
        decode,
    )


def view(u: Unit, plan: str, *, writer: str | None = None) -> PlanView:
    """The plan as every reader shows it (`core.view`): counts, in progress,
    ready next, blocked, recently completed, each item with its depth."""
    from todoledger.core.view import build

    return build(show(u, plan, writer=writer))


RECOVERY_RECENT = 20  # completed items read for the recovery text and the compact read (they show 5)
RECOVERY_DROPPED = 64  # the dropped items read (changed last): the text names the latest drop's first 5


def recovery_view(u: Unit, plan: str, *, scheduled: bool = False) -> PlanView:
    """The view the recovery text and the compact read render (`prime`, SessionStart,
    compaction, `todoread`), read in bounded work: counts by one aggregate and only
    the rows they can name (`Repo.recovery_rows`), so that a plan of 100,000 finished
    items costs what its open work does. Its in-progress, ready, blocked and waiting
    lists are the whole view's; `recent` and `dropped` hold the latest few, and the
    counts are the whole plan's. `scheduled`: also whether the plan is scheduled (an
    item with an estimate or a resource among the rows: the compact read's critical path)."""
    from todoledger.core.view import build, recounted

    with u.store.read():
        contested = contests(u, plan)
        rows = u.repo.recovery_rows(
            plan, recent=RECOVERY_RECENT, dropped=RECOVERY_DROPPED, also=list(contested), scheduled=scheduled
        )
        totals = u.repo.status_counts(plan)
        revision = u.repo.revision(plan)
        derive = _derivation(u, plan, rows, contested)
    derive()
    return recounted(build({"plan": plan, "revision": revision, "items": rows}), totals)


def rows(u: Unit, plan: str, ids: list[str]) -> list[dict[str, Any]]:
    """These items as they are now, in the order given (those not in the plan
    left out): what a write's reply shows, without reading the whole plan."""
    with u.store.read():
        found = u.repo.items_by_id(list(dict.fromkeys(ids)))
    return [found[i].as_dict() for i in ids if i in found and found[i].plan == plan]


def get(u: Unit, plan: str, ref: str) -> dict[str, Any]:
    """One item, by id or unique prefix."""
    with u.store.read():
        item = u.require(plan, ref)
    return item.as_dict()


def watch(
    u: Unit, *, after: int | None = None, wait: float = 1.0, stop: Callable[[], bool] | None = None
) -> Iterator[dict[str, Any]]:
    """Every plan's events as they are committed, from any process or
    machine: those after event `after` (default: from now on). Between
    looks it waits for the store to signal a commit (PostgreSQL
    LISTEN/NOTIFY) or polls the event sequence (SQLite), looking again at
    least every `wait` seconds, so no event is missed; `stop` ends it
    when nothing is pending."""
    with u.store.read():
        seq = u.repo.last_seq() if after is None else after
    while True:
        with u.store.read():
            events = u.repo.events_after(seq)
        for ev in events:
            seq = ev.seq
            yield ev.as_dict() | {"plan": ev.plan}
        if not events:
            if stop is not None and stop():
                return
            u.store.wait_for_change(wait)


def history(
    u: Unit, plan: str, item: str | None = None, *, created: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The plan's events (or one item's), oldest first; given `created`, a "created"
    event's value keeps only those fields of the item (what a report reads)."""
    with u.store.read():
        item_id = u.require(plan, item).id if item else None
        events = u.repo.event_dicts(plan, item_id, created=created)
        untimed = u.repo.untimed_ops(plan)
    if untimed:  # their `at` is when they were recorded here: say where the source puts them instead
        for e in events:
            where = untimed.get(e["op"])
            if where is not None:
                e["untimed"], e["where"] = True, where
    return events


def ops(u: Unit, plan: str) -> list[dict[str, Any]]:
    """The plan's changes (ops): who, when, what kind, its summary and warnings."""
    import json  # here: the agents' verbs never load it (core/jsontext.py)

    with u.store.read():
        counts = u.repo.refusal_counts(plan)
        found = [
            {
                "op": r[0],
                "writer": r[1],
                "at": r[2],
                "kind": r[3],
                "dialect": r[4],
                "summary": r[5],
                "warnings": json.loads(r[6]) if r[6] else [],
                "undone_by": r[7],
                "source_key": r[8],
                "source_at": r[9],
                "untimed": bool(r[10]),
                "source_msg": r[11],
            }
            for r in u.repo.ops(plan)
        ]
    for o in found:  # a counter event of refusals past the day's cap: how many it counted
        if o["kind"] == "refused" and o["source_key"] in counts:
            o["counted_from"], o["counted"] = counts[o["source_key"]]
    return found


def agent_history(u: Unit) -> bool:
    """Has any agent (any writer that is not a person) written to this ledger?"""
    from todoledger.core.approval import is_person
    from todoledger.store.migrations import MIGRATION_WRITER

    with u.store.read():
        return any(not is_person(w) and w != MIGRATION_WRITER for w in u.repo.all_writers())


def integrity(u: Unit) -> list[str]:
    """What the backend finds wrong with the stored file itself; empty when sound."""
    return u.store.integrity()


def check(u: Unit, plan: str | None = None) -> list[str]:
    """Differences between the stored state and the replay of its events, and
    events whose hash chain does not follow (written around todoledger)."""
    from todoledger.core.replay import replay

    names = [plan] if plan else [p["plan"] for p in plans(u)]
    problems: list[str] = []
    with u.store.read():
        for name in names:
            stored = {i.id: i for i in u.repo.items(name)}
            replayed = replay(u.repo.events(name))
            for item_id in sorted(set(stored) | set(replayed)):
                a, b = stored.get(item_id), replayed.get(item_id)
                if a is None or b is None:
                    problems.append(
                        f"{name}/{item_id}: {'missing from state' if a is None else 'not in events'}"
                    )
                    continue
                b.plan = a.plan
                da, db = a.as_dict(), b.as_dict()
                da["depends_on"], db["depends_on"] = sorted(da["depends_on"]), sorted(db["depends_on"])
                for key in da:
                    if da[key] != db[key]:
                        problems.append(f"{name}/{item_id}: {key} is {da[key]!r}, events say {db[key]!r}")
        problems += u.repo.chain_breaks(plan)  # tamper evidence: events written around todoledger
    return problems


def stranded(u: Unit, plan: str) -> list[dict[str, Any]]:
    """Open items that wait for a cancelled item: never ready until someone
    removes or re-points the dependency."""
    with u.store.read():
        pairs = u.repo.stranded(plan)
        found = u.repo.items_by_id([i for i, _ in pairs], deps=False)
    out: dict[str, dict[str, Any]] = {}
    for item_id, blocker in pairs:
        row = out.setdefault(item_id, compact_row(found[item_id]) | {"waits_on_cancelled": []})
        row["waits_on_cancelled"].append(blocker)
    return list(out.values())


def prime(u: Unit, plan: str, *, recent: int = 5, writer: str | None = None, recovering: bool = False) -> str:
    """The recovery text. `recovering` (after a compaction) resets the writer's
    base to what the text shows: a list the agent rebuilds from a summary
    must not cancel what the summary left out."""
    from todoledger.core.prime import render_prime, shown_ids

    shown = recovery_view(u, plan)
    if recovering and writer is not None and shown.items:
        recover_base(u, shown, writer, shown_ids(shown, recent=recent))
    return render_prime(shown, recent=recent)


def recover_base(u: Unit, view: PlanView, writer: str, shown: Iterable[str]) -> None:
    """After a compaction the writer knows of its items only those it was just
    shown, as they are now: its base shrinks to them, so a list rebuilt from a
    summary cancels nothing the summary left out. Items it never had stay out
    of its base: being shown someone else's work is no licence to drop it."""
    by_id = {it.id: it for it in view.items}
    with u.transaction(view.plan):
        old = u.repo.base(view.plan, writer)
        seen = {
            i: Seen(by_id[i].content, by_id[i].status, by_id[i].priority, by_id[i].active_form)
            for i in shown
            if i in old and i in by_id
        }
        u.save_base(view.plan, writer, old, seen, whole=True)


def last_event(u: Unit) -> int:
    """The number of the ledger's newest event (0 when it has none): where a
    feed that starts now, or resumes, begins."""
    with u.store.read():
        return u.repo.last_seq()


def last_change(u: Unit) -> int:
    """A number that grows with every recorded change anywhere in the ledger.
    Not the last op alone: on PostgreSQL writers of two plans commit side by
    side, and a lower op can commit after a higher one was seen; its events
    are numbered at commit (store/postgres.py `lock`), so the sum still grows."""
    with u.store.read():
        return u.repo.last_op() + u.repo.last_seq()


def last_changes(u: Unit) -> dict[str, dict[str, Any]]:
    """Per plan, its latest change: op, writer, at, kind, summary."""
    with u.store.read():
        rows = u.repo.last_ops()
    return {
        r[0]: {"op": r[1], "writer": r[2], "at": r[3], "kind": r[4], "summary": r[5]}
        | ({"untimed": True, "where": r[7] or "time not recorded"} if r[6] else {})
        for r in rows
    }


def ready(u: Unit, plan: str, limit: int, *, awaiting: bool = False) -> list[dict[str, Any]]:
    """Ready items by priority then order, without claiming any. `awaiting`: also those
    that wait only for a person's approval, marked `"ready": false, "awaiting_approval": true`."""
    with u.store.read():
        found = readiness.ready(u, plan, limit, approved_only=not awaiting)
        waiting = readiness.awaiting(u, plan, found) if awaiting else set()
    return [
        i.as_dict() | ({"ready": False, "awaiting_approval": True} if i.id in waiting else {"ready": True})
        for i in found
    ]
