"""The service layer: every interface (CLI, hooks, MCP, ingest) calls `Ledger`.

It is also the public Python API:

    from todoledger import Ledger
    with Ledger("plan.db") as ledger:
        ledger.write({"todos": [{"content": "Train", "status": "pending"}]}, writer="me")
        print(ledger.show()["items"])
"""

from __future__ import annotations

import os

from todoledger.core import graph
from todoledger.core.describe import short
from todoledger.core.ids import new_id
from todoledger.core.merge import Conflict, Merge, MergeInput, Seen, merge
from todoledger.core.model import (
    ANNOTATIONS,
    CREATED,
    DEFAULT_LEASE_SECONDS,
    DEFAULT_PRIORITY,
    MAX_CONTENT_CHARS,
    MAX_LEASE_SECONDS,
    MAX_NOTES_CHARS,
    OPEN_STATUSES,
    PRIORITIES,
    REMOVED,
    REPORTED,
    STATE_FIELDS,
    STATUSES,
    Finding,
    Item,
    LedgerError,
    ParsedWrite,
)
from todoledger.core.record import dataclass, field
from todoledger.core.scoped import contextmanager, nullcontext
from todoledger.core.timefmt import now, shift
from todoledger.core.unicode import check_text
from todoledger.defaults import default_plan as default_plan
from todoledger.defaults import default_writer as default_writer
from todoledger.store.repo import Lease, Repo, Writes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path
    from types import TracebackType
    from typing import Any

    from todoledger.core.view import PlanView
    from todoledger.store.base import SharedStore, Store
    from todoledger.verification import GatePassed


def locate(cwd: str | Path | None = None) -> str:
    """Where the project's ledger is, or will be created by the first write."""
    from todoledger.store.locate import ledger_file

    return ledger_file(cwd)


# The agents' formats, for interfaces (which reach the dialects only through here).
def parse(
    payload: str | bytes | dict[str, Any] | list[Any], dialect: str = "auto", *, response: Any = None
) -> ParsedWrite:
    """An agent's list read for the ledger; a payload with lint errors raises LintError."""
    from todoledger.dialects import parse as parse_payload

    return parse_payload(payload, dialect, response=response)


def render(dialect: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Ledger items as the agent's own tool shows them."""
    from todoledger.dialects import render as render_items

    return render_items(dialect, items)


def lint(data: str | bytes | Any, dialect: str = "auto") -> list[Finding]:
    """Every finding (errors and warnings) for a payload; raises only LimitError."""
    from todoledger.dialects import lint_payload

    return lint_payload(data, dialect)


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


class SharedLedger:
    """The project's ledger for a server's many threads (MCP over HTTP, the
    board): each call takes a `session` and reads or writes through the
    Ledger it gives. On PostgreSQL the calls run side by side on a pool of up
    to `pool_size` connections; on SQLite they take turns on one connection.
    Opened at the first call (an unreachable server fails that call, and the
    next one tries again)."""

    def __init__(
        self, cwd: str | Path | None = None, *, pool_size: int | None = None, busy_ms: int | None = None
    ) -> None:
        self.cwd = cwd
        self.pool_size = pool_size
        self.busy_ms = busy_ms
        self._shared: SharedStore | None = None
        import threading  # only servers share a ledger: the agent verbs never load threading

        self._opening = threading.Lock()

    def _open(self) -> SharedStore:
        with self._opening:
            if self._shared is None:
                from todoledger.store.open import open_shared

                self._shared = open_shared(
                    lambda: locate(self.cwd), pool_size=self.pool_size, busy_ms=self.busy_ms
                )
            return self._shared

    @contextmanager
    def session(
        self, *, run_checks: bool = True, override: str | None = None
    ) -> Iterator[Callable[[bool], Ledger]]:
        """A getter of this call's Ledger (True: to write). Until a SQLite
        ledger exists, reads see it empty and create nothing. `override` is how
        this interface tells its users to force past a failing gate."""
        made: dict[int, Ledger] = {}
        with self._open().session() as get:

            def ledger(write: bool) -> Ledger:
                store, target = get(write)
                found = made.get(id(store))
                if found is None:
                    found = made[id(store)] = Ledger(target, store=store)
                    found.run_checks = run_checks
                    if override is not None:
                        found.override = override
                return found

            yield ledger

    def close(self) -> None:
        with self._opening:
            if self._shared is not None:
                self._shared.close()
                self._shared = None


class Ledger:
    def __init__(
        self,
        path: str | Path | None = None,
        *,
        store: Store | None = None,
        cwd: str | Path | None = None,
        create: bool = True,
        busy_ms: int | None = None,
    ) -> None:
        """The ledger at `path` (":memory:" for a scratch ledger), else the
        project's (see `locate`). With `create=False` a missing ledger reads as
        empty and nothing is created."""
        self._target: str | None = os.fspath(path) if path is not None else None
        if store is None:
            from todoledger.store.open import open_store

            self._target = self._target if self._target is not None else locate(cwd)
            store = open_store(self._target, create=create, busy_ms=busy_ms)
        self.store = store
        self.repo = Repo(store)
        # False where requests come from elsewhere (`serve` without --allow-checks):
        # then no check runs, neither by `verify` nor as the gate of `done`.
        self.run_checks = True
        # How a refusal names the override of a failing gate: the CLI's flags here;
        # the MCP tools name their own arguments.
        self.override = "--force with --reason"
        self._writes: list[Writes] | None = None
        self._batching = False  # inside `batch()`: one transaction holds many writes

    @property
    def location(self) -> str:
        """Where the ledger lives, or where its first write will create it (a
        URL as the store says it: without its password)."""
        if self._target is None or "://" in self._target:
            return self.store.location
        return self._target

    @property
    def exists(self) -> bool:
        """False for a reader opened before the ledger was created (it reads as empty)."""
        return self._target is None or self.store.location != ":memory:" or self._target == ":memory:"

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes in one transaction (an import): each write still
        refuses alone and leaves nothing; the batch commits at the end."""
        with self.store.write():
            self._batching = True
            try:
                yield
            finally:
                self._batching = False

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Many batches in a row: commits may skip the fsync (see the store)."""
        with self.store.bulk():
            yield

    def cursors(self, sources: list[str]) -> dict[str, tuple[int, str | None]]:
        """Where an incremental reader stopped in each source: (position, fingerprint)."""
        with self.store.read():
            return self.repo.cursors(sources)

    def save_cursors(self, cursors: dict[str, tuple[int, str | None]]) -> None:
        with self.store.write():
            self.repo.save_cursors(cursors, now())

    def imported_from_others(self, plan: str, source_prefix: str) -> bool:
        """Does the plan hold imported calls whose source key does not start
        with `source_prefix` (another session's calls)?"""
        with self.store.read():
            return self.repo.has_other_sources(plan, source_prefix)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # reading ---------------------------------------------------------------
    def plans(self) -> list[dict[str, Any]]:
        with self.store.read():
            return [
                {"plan": r[0], "revision": r[1], "updated_at": r[2], "items": r[3], "open": r[4]}
                for r in self.repo.plans()
            ]

    def items(self, plan: str | None = None) -> list[dict[str, Any]]:
        return list(self.show(plan)["items"])

    def show(self, plan: str | None = None, *, writer: str | None = None) -> dict[str, Any]:
        """The plan with derived `blocked`/`ready`. Given a writer, the items
        join its base: it has now seen them."""
        plan = plan or default_plan()
        if writer is not None:
            with self._transaction():
                rows = self.repo.item_rows(plan)
                if rows:
                    self.repo.save_base(plan, writer, {r["id"]: _seen(r) for r in rows})
                revision = self.repo.revision(plan)
                verified, held = self._verification(plan, [(r["id"], r["status"]) for r in rows])
                forced = self.repo.forced(plan)
        else:
            with self.store.read():
                rows = self.repo.item_rows(plan)
                revision = self.repo.revision(plan)
                verified, held = self._verification(plan, [(r["id"], r["status"]) for r in rows])
                forced = self.repo.forced(plan)
        links = [(r["id"], r["parent"], r["status"], r["depends_on"]) for r in rows]
        derived = graph.derive_links(links, held)
        waiting = graph.cancelled_links(links)
        for row in rows:
            item_id = row["id"]
            row["blocked"], row["ready"] = derived[item_id]
            row["waits_on_cancelled"] = waiting.get(item_id, [])
            row["verification"] = verified[item_id]
            row["forced"] = forced.get(item_id, [])
        return {"plan": plan, "revision": revision, "items": rows}

    def show_json(self, plan: str | None = None, *, writer: str | None = None) -> str:
        """`show` as compact JSON text, byte for byte `jsontext.compact(show(...))`,
        written from the rows without building the dicts (`core.itemjson`)."""
        from todoledger.core.itemjson import plan_text
        from todoledger.store.repo import decode

        plan = plan or default_plan()
        with self._transaction() if writer is not None else self.store.read():
            rows, deps = self.repo.item_tuples(plan)
            if writer is not None and rows:
                seen = {r[0]: Seen(r[2], r[3], r[4], r[5]) for r in rows}
                self.repo.save_base(plan, writer, seen)
            revision = self.repo.revision(plan)
            verified, held = self._verification(plan, [(r[0], r[3]) for r in rows])
            forced = self.repo.forced(plan)
        links = [(r[0], r[6], r[3], deps.get(r[0], ())) for r in rows]
        return plan_text(
            plan,
            revision,
            rows,
            deps,
            graph.derive_links(links, held),
            graph.cancelled_links(links),
            verified,
            forced,
            decode,
        )

    def view(self, plan: str | None = None, *, writer: str | None = None) -> PlanView:
        """The plan as every reader shows it (`core.view`): counts, in progress,
        ready next, blocked, recently completed, each item with its depth."""
        from todoledger.core.view import build

        return build(self.show(plan, writer=writer))

    def rows(self, plan: str, ids: list[str]) -> list[dict[str, Any]]:
        """These items as they are now, in the order given (those not in the plan
        left out): what a write's reply shows, without reading the whole plan."""
        with self.store.read():
            found = self.repo.items_by_id(list(dict.fromkeys(ids)))
        return [found[i].as_dict() for i in ids if i in found and found[i].plan == plan]

    def get(self, ref: str, plan: str | None = None) -> dict[str, Any]:
        plan = plan or default_plan()
        with self.store.read():
            item = self._require(plan, ref)
        return item.as_dict()

    def next(
        self,
        plan: str | None = None,
        *,
        limit: int = 5,
        claim: bool = False,
        writer: str | None = None,
        lease: int | None = None,
        at: str | None = None,
    ) -> list[dict[str, Any]]:
        """Ready items by priority then order. `claim` gives the first to the
        writer for a lease (`lease` seconds, else the plan's length, else 30
        minutes): it is started, and the reply carries the lease's fencing
        token. Expired leases of the plan are released first."""
        plan = plan or default_plan()
        writer = writer or default_writer()
        if not claim:
            with self.store.read():
                return [i.as_dict() | {"ready": True} for i in self._ready(plan, limit)]
        from todoledger.core.approval import is_person

        with self._transaction():
            at = at or now()
            seconds = self._lease_seconds(plan, lease)
            self._release_expired(plan, writer, at)
            ready = self._ready(plan, 1)
            fetch = 8
            while ready and not is_person(writer):  # an agent claims only what needs no person first
                candidates = self._ready(plan, fetch)
                awaiting = self._awaiting(plan, candidates)
                ready = [it for it in candidates if it.id not in awaiting][:1]
                if ready or len(candidates) < fetch:
                    break
                ready, fetch = candidates, fetch * 4  # all of these wait for a person: look further
            if not ready:
                return []
            item = ready[0]
            token = self.repo.next_token()
            expires = shift(at, seconds)
            w = self._op(plan, writer, at, "claim", summary=f"claimed {item.id}")
            w.set(item.id, "status", item.status, "in_progress")
            w.annotate(item.id, "claimed", None, {"holder": writer, "token": token, "expires_at": expires})
            self.repo.save_lease(Lease(item.id, plan, writer, token, seconds, at, expires))
            self.repo.save_base(
                plan,
                writer,
                {item.id: Seen(item.content, "in_progress", item.priority, item.active_form)},
            )
            item.status, item.updated_by, item.updated_at = "in_progress", writer, at
            self.repo.touch_plan(plan, at)
            claimed = {"claimed": True, "token": token, "lease_expires": expires, "lease_seconds": seconds}
            return [item.as_dict() | {"ready": False} | claimed]

    # leases --------------------------------------------------------------------
    def renew(
        self,
        ref: str,
        *,
        token: int,
        plan: str | None = None,
        writer: str | None = None,
        lease: int | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """Extend the writer's lease on an item (by `lease` seconds, else its own length)."""
        plan = plan or default_plan()
        writer = writer or default_writer()
        with self._transaction():
            at = at or now()
            held = self._held_lease(self._require(plan, ref), writer, token, at)
            seconds = self._lease_seconds(plan, lease) if lease is not None else held.seconds
            held.seconds, held.expires_at = seconds, shift(at, seconds)
            self.repo.save_lease(held)
        return held.as_dict()

    def release(
        self,
        ref: str,
        *,
        token: int,
        plan: str | None = None,
        writer: str | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """The holder gives its claim back: the item is pending again (if still in progress)."""
        plan = plan or default_plan()
        writer = writer or default_writer()
        with self._transaction():
            at = at or now()
            held = self._held_lease(self._require(plan, ref), writer, token, at)
            w = self._op(plan, writer, at, "release", summary=f"released {held.item}")
            self._end_lease(w, held, "released")
            self.repo.touch_plan(plan, at)
        return held.as_dict() | {"holder": None, "released_by": writer}

    def reclaim(
        self, plan: str | None = None, *, writer: str | None = None, at: str | None = None
    ) -> list[dict[str, Any]]:
        """Release every expired lease (of the plan, or of every plan given None)."""
        writer = writer or default_writer()
        with self._transaction():
            return [lease.as_dict() for lease in self._release_expired(plan, writer, at or now())]

    def leases(self, plan: str | None = None) -> list[dict[str, Any]]:
        """The plan's held leases, oldest claim first."""
        with self.store.read():
            return [lease.as_dict() for lease in self.repo.leases(plan or default_plan())]

    def set_lease_length(self, seconds: int | None, *, plan: str | None = None) -> None:
        """The plan's default lease length (None: back to 30 minutes)."""
        plan = plan or default_plan()
        if seconds is not None:
            seconds = _lease_length(seconds)
        with self._transaction():
            self.repo.set_plan_lease_seconds(plan, seconds, now())

    def _lease_seconds(self, plan: str, lease: int | None) -> int:
        if lease is not None:
            return _lease_length(lease)
        return self.repo.plan_lease_seconds(plan) or DEFAULT_LEASE_SECONDS

    def _fence(self, item: Item, writer: str, token: int, at: str) -> Lease:
        """The lease this token names, if it is still the item's latest: an
        older token (the item was claimed again since) is refused. A lease
        that expired and was released, but not claimed again, is taken back
        while the item is open."""
        item_id = item.id
        if isinstance(token, bool) or not isinstance(token, int) or token < 1:
            raise LedgerError(f"a fencing token is a positive whole number, not {token!r}")
        lease = self.repo.lease(item_id)
        if lease is None or token > lease.token:
            raise LedgerError(f"token {token} was never given for {item_id}: claim it with next --claim")
        if token < lease.token:
            by = f" by {lease.holder}" if lease.holder else ""
            raise LedgerError(
                f"fenced: {item_id} was claimed again{by} (token {lease.token}) after your token {token};"
                " your change is refused: claim another item"
            )
        if lease.holder is not None and lease.holder != writer:
            raise LedgerError(f"token {token} on {item_id} is {lease.holder}'s, not {writer}'s")
        if lease.holder is None and item.status in OPEN_STATUSES:
            lease.holder, lease.expires_at = writer, shift(at, lease.seconds)
            self.repo.save_lease(lease)
        return lease

    def _held_lease(self, item: Item, writer: str, token: int, at: str) -> Lease:
        lease = self._fence(item, writer, token, at)
        if lease.holder is None:
            raise LedgerError(f"{item.id} is {item.status} and no longer claimed: its lease ended")
        return lease

    def _release_expired(self, plan: str | None, writer: str, at: str) -> list[Lease]:
        expired = self.repo.expired_leases(plan, at)
        for name in dict.fromkeys(lease.plan for lease in expired):
            mine = [lease for lease in expired if lease.plan == name]
            w = self._op(name, writer, at, "reclaim", summary=f"released {len(mine)} expired lease(s)")
            for lease in mine:
                self._end_lease(w, lease, "expired")
            self.repo.touch_plan(name, at)
        return expired

    def _end_lease(self, w: Writes, lease: Lease, why: str) -> None:
        """Each release is an event; work given back or abandoned is pending again."""
        w.annotate(lease.item, "released", None, {"holder": lease.holder, "token": lease.token, "why": why})
        item = self.repo.item(lease.item)
        if item is not None and item.status == "in_progress" and why in ("expired", "released"):
            w.set(item.id, "status", "in_progress", "pending")
        self.repo.end_lease(lease.item)

    def _renew_held(self, w: Writes) -> None:
        """Any write by a holder to its item renews the lease; finishing,
        cancelling or removing the item ends it."""
        touched = {row[2] for row in w.pending if row[2] is not None}
        if not touched:
            return
        for lease in self.repo.held_leases(w.writer, touched):
            item = self.repo.item(lease.item)
            if item is None or item.status in ("completed", "cancelled"):
                self._end_lease(w, lease, item.status if item is not None else "removed")
            else:
                lease.expires_at = shift(w.at, lease.seconds)
                self.repo.save_lease(lease)

    def stranded(self, plan: str | None = None) -> list[dict[str, Any]]:
        """Open items that wait for a cancelled item: never ready until someone
        removes or re-points the dependency."""
        plan = plan or default_plan()
        with self.store.read():
            pairs = self.repo.stranded(plan)
            found = self.repo.items_by_id([i for i, _ in pairs], deps=False)
        out: dict[str, dict[str, Any]] = {}
        for item_id, blocker in pairs:
            row = out.setdefault(item_id, _compact_row(found[item_id]) | {"waits_on_cancelled": []})
            row["waits_on_cancelled"].append(blocker)
        return list(out.values())

    def _ready(self, plan: str, limit: int) -> list[Item]:
        out: list[Item] = []
        fetch = limit + 8
        held = self._held(plan)
        while True:
            ids = self.repo.ready_candidates(plan, fetch)
            found = self.repo.items_by_id(ids)
            # The query knows its prerequisites completed; these did not finish all the same.
            unfinished = held | self.repo.open_below([b for i in ids for b in found[i].depends_on])
            out = [
                found[i]
                for i in ids
                if not unfinished.intersection(found[i].depends_on)
                and not self._ancestor_blocked(found[i], held)
            ][:limit]
            if len(out) >= limit or len(ids) < fetch:
                return out
            fetch *= 4

    def _ancestor_blocked(self, item: Item, held: frozenset[str] = frozenset()) -> bool:
        parent, depth = item.parent, 0
        while parent and depth < 64:
            blockers = self.repo.items_by_id(self.repo.blockers(parent))
            if any(graph.unmet(b) or b.id in held for b in blockers.values()):
                return True
            if self.repo.open_below(list(blockers)):  # all completed, but over open work
                return True
            parent, depth = self.repo.parent_of(parent), depth + 1
        return False

    def watch(
        self, *, after: int | None = None, wait: float = 1.0, stop: Callable[[], bool] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every plan's events as they are committed, from any process or
        machine: those after event `after` (default: from now on). Between
        looks it waits for the store to signal a commit (PostgreSQL
        LISTEN/NOTIFY) or polls the event sequence (SQLite), looking again at
        least every `wait` seconds, so no event is missed; `stop` ends it
        when nothing is pending."""
        with self.store.read():
            seq = self.repo.last_seq() if after is None else after
        while True:
            with self.store.read():
                events = self.repo.events_after(seq)
            for ev in events:
                seq = ev.seq
                yield ev.as_dict() | {"plan": ev.plan}
            if not events:
                if stop is not None and stop():
                    return
                self.store.wait_for_change(wait)

    def history(self, plan: str | None = None, item: str | None = None) -> list[dict[str, Any]]:
        plan = plan or default_plan()
        with self.store.read():
            item_id = self._require(plan, item).id if item else None
            return [e.as_dict() for e in self.repo.events(plan, item_id)]

    def ops(self, plan: str | None = None) -> list[dict[str, Any]]:
        import json  # here: the agents' verbs never load it (core/jsontext.py)

        plan = plan or default_plan()
        with self.store.read():
            return [
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
                }
                for r in self.repo.ops(plan)
            ]

    def integrity(self) -> list[str]:
        """What the backend finds wrong with the stored file itself; empty when sound."""
        return self.store.integrity()

    def check(self, plan: str | None = None) -> list[str]:
        """Differences between the stored state and the replay of its events."""
        from todoledger.core.replay import replay

        plans = [plan] if plan else [p["plan"] for p in self.plans()]
        problems: list[str] = []
        with self.store.read():
            for name in plans:
                stored = {i.id: i for i in self.repo.items(name)}
                replayed = replay(self.repo.events(name))
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
        return problems

    # whole-list writes -----------------------------------------------------
    def write(
        self,
        payload: str | bytes | dict[str, Any] | list[Any],
        *,
        plan: str | None = None,
        writer: str | None = None,
        dialect: str = "auto",
        response: Any = None,
        at: str | None = None,
        source_key: str | None = None,
        source_at: str | None = None,
    ) -> WriteResult:
        if source_key is not None:
            with self.store.read():
                if self.repo.has_source(source_key):  # imported before: skip even the parsing
                    return WriteResult(
                        plan or default_plan(),
                        dialect,
                        self.repo.revision(plan or default_plan()),
                        [],
                        skipped=True,
                    )
        parsed = parse(payload, dialect, response=response)
        # Inside a longer transaction (an import's batch) the check above still holds.
        checked = source_key is not None and self._batching
        return self.apply(
            parsed,
            plan=plan,
            writer=writer,
            at=at,
            source_key=source_key,
            source_at=source_at,
            _source_checked=checked,
        )

    def apply(
        self,
        parsed: ParsedWrite,
        *,
        plan: str | None = None,
        writer: str | None = None,
        at: str | None = None,
        source_key: str | None = None,
        source_at: str | None = None,
        _source_checked: bool = False,
    ) -> WriteResult:
        plan = plan or default_plan()
        writer = writer or default_writer()
        at = at or now()
        warnings = [f for f in parsed.findings if f.level == "warning"]
        with self._transaction():
            if source_key and not _source_checked and self.repo.has_source(source_key):
                return WriteResult(plan, parsed.dialect, self.repo.revision(plan), [], skipped=True)
            # The writer's base and the items it names, as they are now, in one query.
            base, known, blocked = self.repo.writer_view(plan, writer)
            linked = any(e.ext_id or e.blocked_by or e.blocks for e in parsed.items)
            aliases = self.repo.aliases(plan, writer) if linked else {}
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
                by_content, also_blocked = self.repo.items_by_content(plan, contents)
                known.update(by_content)
                blocked |= also_blocked
            wanted.difference_update(known)
            if wanted:  # ids the writer names that it has not seen
                named = {
                    i: it
                    for i, it in self.repo.items_by_id(sorted(wanted), deps=False).items()
                    if it.plan == plan
                }
                if named:
                    known.update(named)
                    blocked |= self.repo.with_blockers(list(named))
            known = {i: known[i] for i in sorted(known)}  # in id order, as merge has always met them
            self._check_patch_targets(parsed, known, aliases)
            result = merge(
                MergeInput(
                    writer=writer,
                    at=at,
                    incoming=parsed.items,
                    known=known,
                    base={k: v for k, v in base.items() if k in known},
                    aliases=aliases,
                    whole=parsed.whole,
                    tail=lambda: self.repo.tail_position(plan),
                    new_id=lambda: self._fresh_id(known),
                )
            )
            warnings += self._hold_for_approval(plan, writer, parsed, result, known)
            changes = _changes(result, known)
            warnings += self._progress_warnings(parsed, result, known, blocked)
            warnings += self._completion_warnings(plan, result)
            notices = _drop_notices(result, known) + _reword_notices(parsed, result, known)
            links = any(e.blocked_by or e.blocks for e in parsed.items)
            fresh = [c for c in result.conflicts if not self._repeat_conflict(c.item, writer, _conflict(c))]
            recorded = result.creates or result.sets or result.dropped or fresh
            if not (recorded or links or warnings or source_key):
                # Agents rewrite unchanged lists often: no op row, no revision, only the writer's view.
                self._save_base(plan, writer, base, result.base, whole=parsed.whole)
                return WriteResult(plan, parsed.dialect, self.repo.ensure_plan(plan, at), result.matches)
            # A link refused (a cycle) after this write's state went in takes back only this
            # write, so that an enclosing transaction (an import) can go on.
            with self.repo.savepoint() if links else nullcontext():
                w = self._op(
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
                    self._apply_links(w, parsed, result.matches, known, aliases | result.aliases)
            new_base = dict(result.base)
            for create in result.creates:
                new_base[create.item.id] = Seen.of(create.item)
                entry = parsed.items[create.index]
                if entry.ext_id and entry.ext_id != create.item.id:
                    result.aliases[entry.ext_id] = create.item.id
            self._save_base(plan, writer, base, new_base, whole=parsed.whole)
            if result.aliases:
                self.repo.save_aliases(plan, writer, result.aliases)
            revision = self.repo.touch_plan(plan, at) if w.count else self.repo.ensure_plan(plan, at)
        return WriteResult(plan, parsed.dialect, revision, result.matches, changes, warnings, notices)

    def record_refused(
        self,
        reason: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
        dialect: str | None = None,
        at: str | None = None,
        source_key: str | None = None,
        source_at: str | None = None,
    ) -> bool:
        """Tell in the plan's story that a call was made and refused (by the agent's
        own tool, or by lint): nothing in the plan changes. False if recorded before."""
        plan = plan or default_plan()
        at = at or now()
        with self._transaction():
            if source_key and self.repo.has_source(source_key):
                return False
            self.repo.ensure_plan(plan, at)
            self.repo.new_op(
                plan,
                writer or default_writer(),
                at,
                "refused",
                dialect=dialect,
                summary=reason,
                source_key=source_key,
                source_at=source_at,
            )
        return True

    def _hold_for_approval(
        self, plan: str, writer: str, parsed: ParsedWrite, result: Merge, known: dict[str, Item]
    ) -> list[Finding]:
        """An agent's list cannot start or complete an item that waits for a
        person's approval: that status change is left out, and the agent told."""
        from todoledger.core.approval import is_person

        moves = [s for s in result.sets if s.field == "status" and s.new in PROGRESS and s.item in known]
        if is_person(writer) or not moves:
            return []
        awaiting = self._awaiting(plan, [known[s.item] for s in moves])
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

    def _progress_warnings(
        self, parsed: ParsedWrite, result: Merge, known: dict[str, Item], blocked: set[str]
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
            waiting = self._unmet_prerequisites(item_id, after)
            if waiting:
                where = parsed.items[index].where or f"item {index}"
                message = (
                    f"{short(known[item_id].content, 60)!r} marked {status} while it waits for"
                    f" {_list_items(waiting)}"
                )
                out.append(Finding("warning", where, "prerequisites-unmet", message, item_id))
        return out

    def _check_patch_targets(
        self, parsed: ParsedWrite, known: dict[str, Item], aliases: dict[str, str]
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
        self,
        w: Writes,
        parsed: ParsedWrite,
        matches: list[str],
        known: dict[str, Item],
        aliases: dict[str, str],
    ) -> None:
        def resolve(ref: str) -> str | None:
            target = aliases.get(ref, ref)
            if target in known:
                return target
            item = self.repo.item(target)
            return (
                target if item is not None and item.plan == w.plan else None
            )  # never reach into another plan

        for entry, item_id in zip(parsed.items, matches, strict=True):
            for blocker_ref in entry.blocked_by:
                blocker = resolve(blocker_ref)
                if blocker:
                    self._add_dep(w, item_id, blocker)
            for dependent_ref in entry.blocks:
                dependent = resolve(dependent_ref)
                if dependent:
                    self._add_dep(w, dependent, item_id)

    def _add_dep(self, w: Writes, item_id: str, blocker: str) -> None:
        graph.check_new_dependency(item_id, blocker, self.repo.blockers)
        current = self.repo.blockers(item_id)
        if blocker not in current:
            w.set(item_id, "depends_on", sorted(current), sorted([*current, blocker]))

    def _save_base(
        self, plan: str, writer: str, old: dict[str, Seen], new: dict[str, Seen], *, whole: bool
    ) -> None:
        """Store only what changed in the writer's view: most writes flip one status."""
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        if changed:
            self.repo.save_base(plan, writer, changed)
        if whole:
            gone = [k for k in old if k not in new]
            if gone:
                self.repo.forget_base(plan, writer, gone)

    def _repeat_conflict(self, item: str, writer: str, detail: dict[str, Any]) -> bool:
        """Has this writer already reported this conflict since the item last changed?"""
        return detail in self.repo.conflicts_since_change(item, writer)

    def _fresh_id(self, taken: dict[str, Item]) -> str:
        while True:
            candidate = new_id()
            if candidate not in taken and not self.repo.exists(candidate):
                return candidate

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """A write transaction whose buffered events are inserted before it commits."""
        with self.store.write():
            if self._writes is not None:
                yield
                return
            self._writes = []
            try:
                yield
                for w in self._writes:
                    self._renew_held(w)
                    w.flush()
            finally:
                self._writes = None

    def _op(self, plan: str, writer: str, at: str, kind: str, **extra: Any) -> Writes:
        assert self._writes is not None, "changes happen inside _transaction()"
        check_text("the plan name", plan)
        check_text("the writer", writer)
        op = self.repo.new_op(plan, writer, at, kind, **extra)
        w = Writes(self.repo, plan, writer, at, op)
        self._writes.append(w)
        return w

    # single-item commands --------------------------------------------------
    def _require(self, plan: str, ref: str) -> Item:
        item = self.repo.item(ref)
        if item is not None and item.plan == plan:
            return item
        ids = self.repo.ids_with_prefix(plan, ref) if len(ref) >= 2 else []
        if len(ids) == 1:
            found = self.repo.item(ids[0])
            assert found is not None
            return found
        if len(ids) > 1:
            raise LedgerError(f"item {ref!r} is ambiguous in plan {plan!r}: {', '.join(sorted(ids)[:5])}")
        raise LedgerError(f"no item {ref!r} in plan {plan!r}")

    def update(
        self,
        ref: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
        kind: str = "update",
        at: str | None = None,
        force: bool = False,
        token: int | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Change one item's fields (content, status, priority, active_form,
        parent, evidence, reason, notes) and dependencies (`add_blocker`,
        `remove_blocker`). Starting or completing an item whose prerequisites
        are unmet is refused unless `force`, which is recorded. `token`, a
        claim's fencing token, refuses the change once the item was claimed again."""
        plan = plan or default_plan()
        writer = writer or default_writer()
        status = fields.get("status")
        # Why a person forced it: recorded with whatever the force overrides.
        why = {"reason": fields["force_reason"]} if fields.get("force_reason") else {}
        with self.store.read():  # before the gates run: a refusal runs no check
            early = self._require(plan, ref)
            self._check_person(plan, early, writer, status, fields)
            if status in PROGRESS and not force:
                self._refuse_unmet(early, status)
        gate = self._gate(plan, ref, writer, fields, force)
        at = at or now()
        with self._transaction():
            item = self._require(plan, ref)
            if token is not None:
                self._fence(item, writer, token, at)
            self._check_person(plan, item, writer, status, fields)
            waiting: list[tuple[Item, str]] = []
            if status in PROGRESS and status != item.status:
                if not force:
                    self._refuse_unmet(item, status)  # again: it may have changed since the gates ran
                waiting = self._unmet_prerequisites(item.id)
            above_open = (
                status == "completed" and status != item.status and bool(self.repo.open_below([item.id]))
            )
            w = self._op(
                plan,
                writer,
                at,
                kind,
                summary=f"{kind} {item.id}" + (" (forced)" if waiting or above_open else ""),
            )
            if gate is not None:
                gate.record(self, w)  # the gates' receipts (and an override) go with the change
            if waiting:
                w.annotate(
                    item.id,
                    "forced",
                    None,
                    {"past": "prerequisites", "open": [b.id for b, _ in waiting]} | why,
                )
            if above_open:
                w.annotate(item.id, "forced", None, {"past": "open sub-items"} | why)
            self._update_item(w, plan, item, fields)
            self.repo.save_base(plan, writer, {item.id: Seen.of(self._require(plan, item.id))})
            if w.count:
                self.repo.touch_plan(plan, at)
            return self._require(plan, item.id).as_dict()

    def _refuse_unmet(self, item: Item, status: str) -> None:
        if status == item.status:
            return
        waiting = self._unmet_prerequisites(item.id)
        if waiting:
            verb = "complete" if status == "completed" else "start"
            raise LedgerError(
                f"cannot {verb} {item.id}: it waits for {_list_items(waiting)};"
                " finish those first or remove the dependency (force overrides, and is recorded)"
            )
        if status == "completed" and self.repo.open_below([item.id]):
            # A phase is done through its children: what waits for it would wait on.
            raise LedgerError(
                f"cannot complete {item.id}: work below it is still open; finish or cancel"
                " its sub-items first (force overrides, and is recorded)"
            )

    def _check_person(
        self, plan: str, item: Item, writer: str, status: str | None, fields: dict[str, Any]
    ) -> None:
        """What only a person may do: start, claim or complete an item that waits
        for approval, and lift the need for it."""
        from todoledger.core.approval import is_person

        if is_person(writer):
            return
        if fields.get("needs_approval") is False and item.needs_approval:
            raise LedgerError(f"only a person can lift {item.id}'s need for approval (todoledger approve)")
        if status in PROGRESS and status != item.status and self._awaiting(plan, [item]):
            verb = "complete" if status == "completed" else "start"
            raise LedgerError(
                f"cannot {verb} {item.id}: it needs a person's approval first"
                " (todoledger approve, or the board); an agent cannot approve"
            )

    def _awaiting(self, plan: str, items: list[Item]) -> set[str]:
        """Of these items, those that need an approval they do not have (as they are now)."""
        gated = [it for it in items if it.needs_approval]
        if not gated:
            return set()
        from todoledger.core.approval import item_approvals

        events = [e.as_dict() for e in self.repo.approval_events(plan)]
        standing = item_approvals([it.as_dict() for it in gated], events)
        return {i for i, a in standing.items() if a.waiting}

    def _unmet_prerequisites(
        self, item_id: str, status_after: dict[str, str] | None = None
    ) -> list[tuple[Item, str]]:
        """What the item waits for that is not finished, its phases' prerequisites
        included, each with why: its status, or why a completed one does not
        count (its gate has not passed, or open work below it), as `next`
        judges them. `status_after` overlays statuses a write is about to set."""
        ids = list(self.repo.blockers(item_id))
        parent, depth = self.repo.parent_of(item_id), 0
        while parent and depth < 64:
            ids += self.repo.blockers(parent)
            parent, depth = self.repo.parent_of(parent), depth + 1
        found = self.repo.items_by_id(list(dict.fromkeys(ids)), deps=False)
        overlay = status_after or {}
        for blocker in found.values():
            blocker.status = overlay.get(blocker.id, blocker.status)
        done = [i for i in found if not graph.unmet(found[i])]
        held = self._held(found[done[0]].plan) if done else frozenset()
        below = self.repo.open_below(done) if done else set()
        out: list[tuple[Item, str]] = []
        for i in dict.fromkeys(ids):
            if i not in found:
                continue
            if graph.unmet(found[i]):
                out.append((found[i], found[i].status))
            elif i in held:
                out.append((found[i], "completed, its gate has not passed"))
            elif i in below:
                out.append((found[i], "completed above open sub-items"))
        return out

    def _update_item(self, w: Writes, plan: str, item: Item, fields: dict[str, Any]) -> None:
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
            value = _validate(name, value)
            if name == "parent":
                value = self._require(plan, value).id if value else None
                if value:
                    graph.check_new_parent(item.id, value, self.repo.parent_of)
            old = getattr(item, name)
            if name == "status" and value in OPEN_STATUSES and item.status == "cancelled" and item.reason:
                w.set(item.id, "reason", item.reason, None)
            w.set(item.id, name, old, value)
            setattr(item, name, value)
        if add_blocker:
            self._add_dep(w, item.id, self._require(plan, add_blocker).id)
        if remove_blocker:
            blocker = self._require(plan, remove_blocker).id
            current = self.repo.blockers(item.id)
            if blocker not in current:
                raise LedgerError(f"{item.id} does not wait for {blocker}")
            w.set(item.id, "depends_on", sorted(current), sorted(b for b in current if b != blocker))

    def start(self, ref: str, **kw: Any) -> dict[str, Any]:
        return self.update(ref, status="in_progress", kind="start", **kw)

    def done(
        self,
        ref: str,
        *,
        evidence: str | None = None,
        metrics: dict[str, float] | None = None,
        force_reason: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        """Complete an item once its gates pass (`force_reason` overrides a failing
        gate and is recorded); `metrics` are recorded first, so metric gates see them."""
        if metrics:
            from todoledger.verification import record_metrics

            record_metrics(self, ref, metrics, plan=kw.get("plan"), writer=kw.get("writer"))
        return self.update(
            ref, status="completed", evidence=evidence, kind="done", force_reason=force_reason, **kw
        )

    def cancel(self, ref: str, *, reason: str | None = None, **kw: Any) -> dict[str, Any]:
        return self.update(ref, status="cancelled", reason=reason or "cancelled", kind="cancel", **kw)

    def restore(self, ref: str, *, plan: str | None = None, writer: str | None = None) -> dict[str, Any]:
        """Bring back a dropped or cancelled item with the status it had before."""
        plan = plan or default_plan()
        with self.store.read():
            item = self._require(plan, ref)
            if item.status != "cancelled":
                raise LedgerError(f"{item.id} is {item.status}, not cancelled: nothing to restore")
            previous = "pending"
            for ev in reversed(self.repo.events(plan, item.id)):
                if ev.field == "status" and ev.new == "cancelled":
                    previous = ev.old or "pending"
                    break
        return self.update(item.id, plan=plan, writer=writer, status=previous, kind="restore")

    def add(
        self,
        content: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
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
        plan = plan or default_plan()
        writer = writer or default_writer()
        at = at or now()
        content = _validate("content", content)
        estimate = _validate("estimate", estimate) if estimate else None
        used: list[str] = _validate("uses", list(uses)) if uses else []
        priority = _validate("priority", priority or DEFAULT_PRIORITY)
        status = _validate("status", status)
        if notes is not None:
            notes = _validate("notes", notes)
        with self._transaction():
            parent_id = self._require(plan, parent).id if parent else None
            blockers = sorted({self._require(plan, d).id for d in depends_on})
            position = self._position_after(plan, after, parent_id)
            item = Item(
                id=self._fresh_id({}),
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
            w = self._op(plan, writer, at, "add", summary=f"added {item.id}")
            w.create(item)
            self.repo.save_base(plan, writer, {item.id: Seen.of(item)})
            self.repo.touch_plan(plan, at)
            created = self._require(plan, item.id)
        return created.as_dict()

    def _position_after(self, plan: str, after: str | None, parent: str | None) -> float:
        anchor = self._require(plan, after) if after else None
        if anchor is None and parent:
            kids = [i for i in self.repo.items(plan) if i.parent == parent]
            anchor = kids[-1] if kids else self._require(plan, parent)
        if anchor is None:
            return self.repo.tail_position(plan) + 1.0
        following = self.repo.position_after(plan, anchor.position)
        return anchor.position + 1.0 if following is None else (anchor.position + following) / 2

    def dep_add(self, ref: str, blocker: str, **kw: Any) -> dict[str, Any]:
        return self.update(ref, add_blocker=blocker, kind="dep", **kw)

    def dep_remove(self, ref: str, blocker: str, **kw: Any) -> dict[str, Any]:
        return self.update(ref, remove_blocker=blocker, kind="dep", **kw)

    def clear(self, plan: str | None = None, *, writer: str | None = None) -> int:
        """Remove every item of a plan (recorded, so `undo` brings them back)."""
        plan = plan or default_plan()
        writer = writer or default_writer()
        at = now()
        with self._transaction():
            items = self.repo.items(plan)
            w = self._op(plan, writer, at, "clear", summary=f"cleared {len(items)} items")
            for item in items:
                w.remove(item)
            if items:
                self.repo.touch_plan(plan, at)
        return len(items)

    # undo ------------------------------------------------------------------
    def undo(
        self, plan: str | None = None, *, writer: str | None = None, any_writer: bool = False
    ) -> dict[str, Any]:
        """Reverse the writer's last change by appending inverse events; with
        `any_writer`, the plan's last change, whoever made it. A change that a
        later change overwrote is not undone behind that change's back."""
        plan = plan or default_plan()
        writer = writer or default_writer()
        at = now()
        with self._transaction():
            last = self.repo.last_undoable(plan, None if any_writer else writer)
            if last is None:
                anyone = None if any_writer else self.repo.last_undoable(plan)
                if anyone is None:
                    raise LedgerError(f"nothing to undo in plan {plan!r}")
                raise LedgerError(
                    f"nothing of {writer}'s to undo in plan {plan!r}; the last change is"
                    f" {anyone[1]} by {anyone[2]} (op {anyone[0]}): --any undoes it"
                )
            op, kind, by, when, summary = last
            events = [
                ev
                for ev in self.repo.events(plan, op=op)
                if ev.item is not None and ev.field not in ANNOTATIONS
            ]
            if events:
                touched = {(ev.item, ev.field) for ev in events}
                created = {ev.item for ev in events if ev.field in (CREATED, REMOVED)}
                items = sorted({ev.item for ev in events if ev.item is not None})
                for later in self.repo.later_changes(plan, max(ev.seq for ev in events), items):
                    if (
                        (later.item, later.field) in touched
                        or later.item in created
                        or later.field in (CREATED, REMOVED)
                    ):
                        raise LedgerError(
                            f"cannot undo op {op} ({kind} by {by}): {later.item}'s {later.field} was changed"
                            f" since by {later.writer} (op {later.op}); undo that first or change it by hand"
                        )
            w = self._op(plan, writer, at, "undo", summary=f"undo op {op} ({kind} by {by} at {when})")
            for ev in reversed(events):
                assert ev.item is not None
                if ev.field == CREATED:
                    current = self.repo.item(ev.item)
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
                    current = self.repo.item(ev.item)
                    if current is not None:
                        w.set(ev.item, ev.field, _current_value(current, ev.field), ev.old)
            self.repo.mark_undone(op, w.op)
            self.repo.touch_plan(plan, at)
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

    # copying between backends ------------------------------------------------
    def copy_to(self, target: str) -> dict[str, Any]:
        """Copy the whole ledger (every plan, the whole event history) into the
        empty ledger at `target` (a file path or a postgresql:// URL), then
        verify the copy: the same row counts, its events replay to its state,
        and every plan exports and tells its history as here. A copy that
        does not verify raises."""
        from todoledger.store.copy import copy_rows, count_rows
        from todoledger.store.open import open_store

        store = open_store(target)
        with Ledger(store=store) as copy:
            counts = copy_rows(self.store, store)
            problems = [
                f"{table}: {n} rows here, {m} there"
                for table, n in counts.items()
                if (m := count_rows(store, [table])[table]) != n
            ]
            problems += copy.check()
            for plan in [p["plan"] for p in self.plans()]:
                if list(copy.export(plan)) != list(self.export(plan)):
                    problems.append(f"plan {plan!r} exports differently")
                if copy.history(plan) != self.history(plan) or copy.ops(plan) != self.ops(plan):
                    problems.append(f"plan {plan!r} tells a different history")
            location = store.location
        if problems:
            raise LedgerError(f"the copy at {location} does not verify: {'; '.join(problems[:5])}")
        return {"from": self.store.location, "to": location, "rows": counts, "verified": True}

    # export / import -------------------------------------------------------
    def export(self, plan: str | None = None) -> Iterator[str]:
        """JSON Lines, one item a line in plan order, keys sorted: diffs well in git."""
        import json

        plan = plan or default_plan()
        with self.store.read():
            items = self.repo.items(plan)
            checks = self._export_checks(plan)
        for it in items:
            # State only: who and when live in the history, not in the diffable plan.
            record = {
                k: v
                for k, v in it.as_dict().items()
                if k in EXPORTED and v not in (None, []) and v is not False
            }
            if it.id in checks:
                record["checks"] = checks[it.id]
            yield json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    def import_jsonl(
        self, lines: Iterable[str], *, plan: str | None = None, writer: str | None = None
    ) -> dict[str, Any]:
        """Make the plan's items match an export; unchanged items cost nothing,
        so importing the same file twice changes nothing."""
        import json

        plan = plan or default_plan()
        writer = writer or default_writer()
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
                        record[name] = _validate(name, record[name])
                    except LedgerError as exc:
                        raise LedgerError(f"line {number}: {exc}") from None
            records.append(record)
        ids = [r["id"] for r in records]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise LedgerError(f"item id {twice[0]} appears more than once")
        at = now()
        added = changed = 0
        with self._transaction():
            w = self._op(plan, writer, at, "import", summary=f"import {len(records)} items")
            existing = self.repo.items_by_id([r["id"] for r in records])
            for r in records:
                if r["id"] in existing and existing[r["id"]].plan != plan:
                    raise LedgerError(f"item {r['id']} belongs to plan {existing[r['id']].plan!r}")
            in_file = set(ids)
            for r in records:
                for ref in [*(r.get("depends_on") or []), *([r["parent"]] if r.get("parent") else [])]:
                    if ref not in in_file and self.repo.item(ref) is None:
                        raise LedgerError(f"item {r['id']} refers to {ref}, which is not in the plan")
                    other = self.repo.item(ref)
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
                    before = w.count
                    for name in STATE_FIELDS:
                        if name == "depends_on":
                            continue
                        w.set(current.id, name, getattr(current, name), r.get(name, _default(name)))
                    changed += w.count > before
            for r in records:
                if r.get("parent"):
                    graph.check_new_parent(r["id"], r["parent"], self.repo.parent_of)
            for r in records:
                blockers = sorted(r.get("depends_on") or [])
                current_deps = sorted(self.repo.blockers(r["id"]))
                if blockers != current_deps:
                    for b in blockers:
                        if b not in current_deps:
                            graph.check_new_dependency(r["id"], b, self.repo.blockers)
                    w.set(r["id"], "depends_on", current_deps, blockers)
            imported_checks = self._import_checks(w, records)
            if w.count:
                self.repo.touch_plan(plan, at)
        out: dict[str, Any] = {"plan": plan, "records": len(records), "added": added, "changed": changed}
        if imported_checks:
            out["untrusted_checks"] = imported_checks  # nothing runs them before `todoledger trust`
        return out

    # checks (issue 8): the service lives in todoledger.verification ----------
    # Most plans have no checks: for them one query answers, and the checks' modules
    # (2 ms to import, on every agent call) stay unloaded. The answers are those of
    # todoledger.verification for a plan without checks.
    def _verification(
        self, plan: str, items: list[tuple[str, str]]
    ) -> tuple[dict[str, str | None], frozenset[str]]:
        """Per (id, status) of the plan's items, its verification state; and the
        items held back as unfinished (`core.verification.held`): none without checks."""
        if not items or not self.repo.has_checks(plan):
            return {i: REPORTED if status == "completed" else None for i, status in items}, frozenset()
        from todoledger.core.verification import held
        from todoledger.verification import states

        verified = states(self, plan, items)
        return verified, held(verified)

    def _held(self, plan: str) -> frozenset[str]:
        if not self.repo.has_checks(plan):
            return frozenset()
        from todoledger.verification import held

        return held(self, plan)

    def _gate(
        self, plan: str, ref: str, writer: str, fields: dict[str, Any], force: bool
    ) -> GatePassed | None:
        """Completing an item runs its gates first (outside any transaction: a check may take a minute)."""
        force_reason = fields.pop("force_reason", None)
        if fields.get("status") != "completed":
            return None
        if force_reason is None:
            with self.store.read():
                if not self.repo.has_checks(plan):
                    return None  # no gates to run
        from todoledger.verification import gate_before_done

        try:
            return gate_before_done(self, plan, ref, writer, force_reason)
        except LedgerError as refusal:
            if force and force_reason is None:  # forcing past a gate takes a reason, recorded with it
                raise LedgerError(f"{refusal}; overriding a failing gate needs {self.override}") from None
            raise

    def _completion_warnings(self, plan: str, result: Merge) -> list[Finding]:
        completed = [s.item for s in result.sets if s.field == "status" and s.new == "completed"]
        if not completed or not self.repo.has_checks(plan):
            return []
        from todoledger.verification import write_warnings

        return write_warnings(self, plan, completed)

    def _export_checks(self, plan: str) -> dict[str, list[dict[str, Any]]]:
        from todoledger.verification import export_checks

        return export_checks(self, plan)

    def _import_checks(self, w: Writes, records: list[dict[str, Any]]) -> int:
        from todoledger.verification import import_checks

        return import_checks(self, w, records)

    # people and the schedule (the board, issue 10) --------------------------
    def approve(self, ref: str, *, plan: str | None = None, writer: str | None = None) -> dict[str, Any]:
        """A person approves an item as it is now: an agent may then start it."""
        from todoledger.core.approval import is_person, item_snapshot

        plan = plan or default_plan()
        writer = writer or default_writer()
        if not is_person(writer):
            raise LedgerError(f"only a person can approve (cli:... or web:...), not {writer}")
        at = now()
        with self._transaction():
            item = self._require(plan, ref)
            w = self._op(plan, writer, at, "approve", summary=f"approved {item.id}")
            w.annotate(item.id, "approved", None, item_snapshot(item.as_dict()))
            self.repo.touch_plan(plan, at)
        standing: dict[str, Any] = self.approvals(plan)["items"].get(item.id, {})
        return standing | {"id": item.id, "content": item.content}

    def approve_plan(self, plan: str | None = None, *, writer: str | None = None) -> dict[str, Any]:
        """A person approves the plan as it stands: its items' content, order,
        dependencies and gates, with a hash; any later change is flagged."""
        from todoledger.core.approval import is_person, plan_hash, plan_snapshot

        plan = plan or default_plan()
        writer = writer or default_writer()
        if not is_person(writer):
            raise LedgerError(f"only a person can approve (cli:... or web:...), not {writer}")
        at = now()
        with self._transaction():
            items = self.repo.items(plan)
            if not items:
                raise LedgerError(f"plan {plan!r} is empty: nothing to approve")
            snap = plan_snapshot([it.as_dict() for it in items])
            digest = plan_hash(snap)
            w = self._op(plan, writer, at, "approve", summary=f"approved the plan ({len(items)} items)")
            w.annotate(None, "plan_approved", None, {"hash": digest, "items": snap})
            self.repo.touch_plan(plan, at)
        return {"plan": plan, "by": writer, "at": at, "hash": digest, "items": len(snap)}

    def approvals(
        self, plan: str | None = None, *, rows: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The plan against its last approval, and each item's standing:
        {"plan": {approved, by, at, hash, diff}, "items": {id: {...}}, "waiting": [ids]}.
        Items listed are those that need approval or were approved."""
        from todoledger.core.approval import item_approvals, plan_standing

        plan = plan or default_plan()
        with self.store.read():  # `rows`: the plan's items as `show` gave them, read in the same instant
            rows = rows if rows is not None else [it.as_dict() for it in self.repo.items(plan)]
            events = [e.as_dict() for e in self.repo.approval_events(plan)]
        last_plan = next((e for e in reversed(events) if e["field"] == "plan_approved"), None)
        standing = item_approvals(rows, events)
        items = {i: a.as_dict() for i, a in standing.items() if a.needs_approval or a.by is not None}
        waiting = [i for i, a in standing.items() if a.waiting and rows_open(rows, i)]
        return {"plan": plan_standing(rows, last_plan), "items": items, "waiting": waiting}

    def schedule(self, plan: str | None = None) -> dict[str, Any]:
        """Critical path of the open work and its length, the sets of ready items
        that can run together (resources), and measured durations of finished items."""
        plan = plan or default_plan()
        out = self.view(plan).schedule().as_dict()
        out["measured"] = self.durations(plan)
        return {"plan": plan, **out}

    def durations(self, plan: str | None = None) -> dict[str, str]:
        """How long each completed item took, measured from its history (first
        start, or creation, to completion), as `1h30m`."""
        from todoledger.core.schedule import format_duration, measured

        plan = plan or default_plan()
        with self.store.read():
            events = [e.as_dict() for e in self.repo.events(plan)]
        return {i: format_duration(sec) for i, sec in measured(events, _epoch).items()}

    def last_change(self) -> int:
        """A number that grows with every recorded change anywhere in the ledger."""
        with self.store.read():
            return self.repo.last_op()

    def writers(self, plan: str | None = None) -> list[dict[str, Any]]:
        """Each writer of the plan: last write, number of changes, what it holds in progress."""
        from todoledger.core.approval import is_person

        plan = plan or default_plan()
        with self.store.read():
            rows = self.repo.writers(plan)
            items = self.repo.items(plan)
        out = []
        for writer, at, count in rows:
            holding = [it.id for it in items if it.status == "in_progress" and it.updated_by == writer]
            out.append(
                {
                    "writer": writer,
                    "person": is_person(writer),
                    "last_write": at,
                    "changes": int(count),
                    "in_progress": holding,
                }
            )
        return out

    def last_changes(self) -> dict[str, dict[str, Any]]:
        """Per plan, its latest change: op, writer, at, kind, summary."""
        with self.store.read():
            rows = self.repo.last_ops()
        return {r[0]: {"op": r[1], "writer": r[2], "at": r[3], "kind": r[4], "summary": r[5]} for r in rows}

    # recovery --------------------------------------------------------------
    def prime(
        self, plan: str | None = None, *, recent: int = 5, writer: str | None = None, recovering: bool = False
    ) -> str:
        """The recovery text. `recovering` (after a compaction) resets the writer's
        base to what the text shows: a list the agent rebuilds from a summary
        must not cancel what the summary left out."""
        from todoledger.core.prime import render_prime, shown_ids

        view = self.view(plan)
        if recovering and writer is not None and view.items:
            self.recover_base(view, writer, shown_ids(view, recent=recent))
        return render_prime(view, recent=recent)

    def recover_base(self, view: PlanView, writer: str, shown: Iterable[str]) -> None:
        """After a compaction the writer knows of its items only those it was just
        shown, as they are now: its base shrinks to them, so a list rebuilt from a
        summary cancels nothing the summary left out. Items it never had stay out
        of its base: being shown someone else's work is no licence to drop it."""
        by_id = {it.id: it for it in view.items}
        with self._transaction():
            old = self.repo.base(view.plan, writer)
            seen = {
                i: Seen(by_id[i].content, by_id[i].status, by_id[i].priority, by_id[i].active_form)
                for i in shown
                if i in old and i in by_id
            }
            self._save_base(view.plan, writer, old, seen, whole=True)


EXPORTED = frozenset({"id", *STATE_FIELDS})
# Statuses that claim work is under way or done: they need the prerequisites met.
PROGRESS = frozenset({"in_progress", "completed"})


def rows_open(rows: list[dict[str, Any]], item_id: str) -> bool:
    return any(r["id"] == item_id and r["status"] in OPEN_STATUSES for r in rows)


def _epoch(at: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def _seen(row: dict[str, Any]) -> Seen:
    return Seen(row["content"], row["status"], row["priority"], row["active_form"])


def _compact_row(item: Item) -> dict[str, Any]:
    return {"id": item.id, "content": item.content, "status": item.status, "priority": item.priority}


def _list_items(items: list[tuple[Item, str]], limit: int = 3) -> str:
    """Items with why each is named (its status, or why it does not count as finished)."""
    shown = [f"{it.id} {short(it.content, 40)!r} ({why})" for it, why in items[:limit]]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown) + more


def _validate(name: str, value: Any) -> Any:
    check_text(name, value)
    if isinstance(value, str) and "\x00" in value:  # PostgreSQL text cannot hold it: refused on every backend
        raise LedgerError(f"{name} contains a NUL character")
    if name == "status":
        if value not in STATUSES:
            raise LedgerError(f"status must be one of {', '.join(STATUSES)}, not {value!r}")
    elif name == "priority":
        if value not in PRIORITIES:
            raise LedgerError(f"priority must be one of {', '.join(PRIORITIES)}, not {value!r}")
    elif name == "content":
        if not isinstance(value, str) or not value.strip():
            raise LedgerError("content must not be empty")
        if len(value) > MAX_CONTENT_CHARS:
            raise LedgerError(f"content is {len(value)} characters; the limit is {MAX_CONTENT_CHARS}")
    elif name in ("notes", "evidence", "reason", "active_form") and (
        not isinstance(value, str) or len(value) > MAX_NOTES_CHARS
    ):
        raise LedgerError(f"{name} must be text of at most {MAX_NOTES_CHARS} characters")
    elif name == "position":
        import math  # only here: not loaded by every read

        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise LedgerError(f"position must be a finite number, not {value!r}")
        value = float(value)
    elif name == "parent":
        if not isinstance(value, str):
            raise LedgerError(f"parent must be an item id, not {value!r}")
    elif name == "estimate":
        if not isinstance(value, str):
            raise LedgerError(f"estimate must be a duration like 15m or 2h, not {value!r}")
        from todoledger.core.schedule import normalize_estimate

        value = normalize_estimate(value) if value.strip() else None  # empty: no estimate
    elif name == "uses":
        from todoledger.core.schedule import normalize_uses, split_uses

        if isinstance(value, str):
            value = split_uses(value)
        if not isinstance(value, list):
            raise LedgerError(f"uses must be a list of resources like server or gpu:0-3, not {value!r}")

        value = normalize_uses(value)
    elif name == "needs_approval":
        if not isinstance(value, bool):
            raise LedgerError(f"needs_approval must be true or false, not {value!r}")
    elif name == "depends_on" and (
        not isinstance(value, list)
        or not all(isinstance(v, str) for v in value)
        or len(set(value)) != len(value)
    ):
        raise LedgerError(f"depends_on must be a list of distinct item ids, not {value!r}")
    return value


def _lease_length(seconds: Any) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_LEASE_SECONDS:
        raise LedgerError(f"a lease lasts 1 to {MAX_LEASE_SECONDS} seconds, not {seconds!r}")
    return seconds


def _default(name: str) -> Any:
    defaults: dict[str, Any] = {
        "status": "pending",
        "priority": DEFAULT_PRIORITY,
        "position": 0.0,
        "uses": [],
        "needs_approval": False,
    }
    return defaults.get(name)


def _current_value(item: Item, name: str) -> Any:
    value = getattr(item, name)
    return sorted(value) if name == "depends_on" else value


def _describe(item: str, name: str, old: Any, new: Any) -> dict[str, Any]:
    if name == "status" and new == "cancelled":
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
    """Work in progress that a list left out was cancelled: if it was finished
    instead, the writer should say so."""
    cancelled = {s.item for s in result.sets if s.field == "status" and s.new == "cancelled"}
    return [
        f"you dropped {short(known[i].content, 60)!r} ({i}), which was in progress: it is now cancelled;"
        " if it is done, mark it completed"
        for i in result.dropped
        if i in cancelled and known[i].status == "in_progress"
    ]


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
