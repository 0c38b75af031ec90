"""`Ledger`: the public API and the one door every interface uses.

A thin, typed façade: each method resolves the default plan and writer (in
`Facade._plan` and `Facade._who`, nowhere else) and hands plain values to the module that
owns the concern, each taking this ledger's `Unit`:

    from todoledger import Ledger
    with Ledger("plan.db") as ledger:
        ledger.write({"todos": [{"content": "Train", "status": "pending"}]}, writer="me")
        print(ledger.show()["items"])

The concern modules are imported where a method first needs them, so that
an agent's verb loads only what it uses (see bench/bench_core.py).
"""

from __future__ import annotations

import os

from todoledger.core.scoped import contextmanager
from todoledger.ledger.facade_checks import CheckMethods
from todoledger.ledger.facade_history import HistoryMethods
from todoledger.ledger.facade_leases import LeaseMethods
from todoledger.ledger.facade_people import PeopleMethods
from todoledger.ledger.facade_tasks import TaskMethods
from todoledger.ledger.retry import new_key, retry_calls
from todoledger.ledger.unit import Unit

# A lease's secret for a command line (`next --claim` prints it to its claimant only).
LEASE_SECRET_ENV = "TODOLEDGER_LEASE_SECRET"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path
    from types import TracebackType
    from typing import Any

    from todoledger.core.model import ParsedWrite
    from todoledger.core.view import PlanView
    from todoledger.ledger.writes import WriteResult
    from todoledger.store.base import Store
    from todoledger.store.repo import Repo


@retry_calls  # a call whose connection the server closed runs once more where it may (ledger/retry.py)
class Ledger(HistoryMethods, PeopleMethods, LeaseMethods, CheckMethods, TaskMethods):
    """A ledger of plans: a SQLite file or a PostgreSQL schema."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        store: Store | None = None,
        cwd: str | Path | None = None,
        create: bool = True,
        busy_ms: int | None = None,
        lean: bool = False,
        deadline: float | None = None,
        key: str | None = None,
    ) -> None:
        """The ledger at `path` (":memory:" for a scratch ledger), else the
        project's (see `store.locate`). With `create=False` a missing ledger
        reads as empty and nothing is created. `lean`: this process is an
        agent's short call (a lean verb, a hook): a PostgreSQL ledger is reached
        through the small libpq binding rather than psycopg (store/libpq.py).
        `deadline` (time.monotonic): past it, a PostgreSQL server that has not
        answered is given up on, the connection closed (a hook's; store/open.py).
        `key`: the idempotency key of this ledger's writes (one route's call: a
        command, a hook event, a tool call, a request), made before their first
        attempt; see `keyed`."""
        self._target: str | None = os.fspath(path) if path is not None else None
        if store is None:
            from todoledger.store.locate import ledger_file
            from todoledger.store.open import open_store

            self._target = self._target if self._target is not None else ledger_file(cwd)
            store = open_store(self._target, create=create, busy_ms=busy_ms, lean=lean, deadline=deadline)
        self._unit = Unit(store)
        self._unit.call_key = key
        given = os.environ.get(LEASE_SECRET_ENV)
        if given:  # the secrets of the claims this caller made (a command line after `next --claim`)
            for secret in given.split(","):
                self.hold(secret)

    def hold(self, secret: str | None) -> None:
        """This caller holds the lease whose secret this is (a claim's `lease_secret`):
        its writes to the item are the holder's. Anything else proves nothing."""
        if secret and secret.strip():
            from todoledger.ledger.leases import secret_digest

            self._unit.held_secrets.add(secret_digest(secret))

    # the ledger itself -------------------------------------------------------
    @staticmethod
    def create_team(url: str) -> str:
        """Create a team's PostgreSQL ledger at `url` (its schema and tables) and
        say where it is, without the password (`todoledger init --team`)."""
        from todoledger.store.open import create_team_ledger

        store = create_team_ledger(url)
        try:
            return store.location
        finally:
            store.close()

    def start_test_clock(self) -> None:
        """Let TODOLEDGER_NOW fix this ledger's clock (`init --test-clock`): only a
        ledger without history yet, for the README generator and tests."""
        from todoledger.core.timefmt import now
        from todoledger.store.settings import start_test_clock

        start_test_clock(self._unit.store, now())

    @property
    def test_clock(self) -> bool:
        """Whether TODOLEDGER_NOW fixes this ledger's clock (created with --test-clock)."""
        from todoledger.store.settings import has_test_clock

        return has_test_clock(self._unit.store)

    @property
    def location(self) -> str:
        """Where the ledger lives, or where its first write will create it (a
        URL as the store says it: without its password)."""
        if self._target is None or "://" in self._target:
            return self._unit.store.location
        return self._target

    @property
    def exists(self) -> bool:
        """False for a reader opened before the ledger was created (it reads as empty)."""
        return self._target is None or self._unit.store.location != ":memory:" or self._target == ":memory:"

    @property
    def store(self) -> Store:
        """The backend, for tests and benchmarks; the interfaces never touch it (tests/test_layers.py)."""
        return self._unit.store

    @property
    def repo(self) -> Repo:
        """Every query of the ledger, for tests and benchmarks; the interfaces never touch it."""
        return self._unit.repo

    @property
    def run_checks(self) -> bool:
        """False where requests come from elsewhere (`serve` without --allow-checks): no check runs."""
        return self._unit.run_checks

    @run_checks.setter
    def run_checks(self, value: bool) -> None:
        self._unit.run_checks = value

    @property
    def override(self) -> str:
        """How a refusal names the override of a failing gate on this interface."""
        return self._unit.override

    @override.setter
    def override(self, value: str) -> None:
        self._unit.override = value

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Many writes in one transaction (an import): each write still
        refuses alone and leaves nothing; the batch commits at the end.
        A cross-plan transaction: it may write any plan."""
        with self._unit.locked():
            self._unit.batching = True
            try:
                yield
            finally:
                self._unit.batching = False

    @contextmanager
    def keyed(self, key: str | None = None, *, route: str = "call") -> Iterator[str]:
        """The writes made inside carry an idempotency key, made now, before their
        first attempt (`key`, else a new one named by `route`): each op they record
        keeps it (ops.call_key, unique; the first as given, later ones `key#2`...),
        and a write whose key the ledger holds already applies nothing (a whole-list
        write answers skipped; any other says it was applied before). So a call
        retried after its connection was lost (ledger/retry.py), its commit landed
        or not, is applied once."""
        unit = self._unit
        saved = unit.call_key, unit.keyed_ops
        unit.call_key, unit.keyed_ops = key or new_key(route), 0
        try:
            yield unit.call_key
        finally:
            unit.call_key, unit.keyed_ops = saved

    @contextmanager
    def untimed(self, msg: int | None = None, where: str | None = None) -> Iterator[None]:
        """Changes whose own time is not known (a source that gives message numbers,
        no clock): their ops say so, with the source's message number (and `where`,
        the place a change without one of its own names), and readers order them by
        sequence and show no durations. Their `at` is when this ledger recorded them."""
        saved = self._unit.untimed
        self._unit.untimed = {"untimed": True, "source_msg": msg} | ({"source_at": where} if where else {})
        try:
            yield
        finally:
            self._unit.untimed = saved

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Many batches in a row: commits may skip the fsync (see the store)."""
        with self._unit.store.bulk():
            yield

    def integrity(self) -> list[str]:
        """What the backend finds wrong with the stored file itself; empty when sound."""
        return self._unit.store.integrity()

    def twin(self) -> Ledger:
        """Another connection to the same ledger, for another thread of this process
        (a connection is never shared between threads: a sweep runner's heartbeat)."""
        if self._target == ":memory:":
            from todoledger.core.model import LedgerError

            raise LedgerError("a scratch ledger (:memory:) has no second connection")
        return Ledger(self._target, create=False)

    def close(self) -> None:
        """Close the store; after a signed action, the signing key's folder first
        remembers the last event it signed here (a later signature checks it)."""
        if hasattr(self._unit.signer, "sign"):
            from contextlib import suppress

            with suppress(OSError):  # a head not kept weakens a later check; it never undoes what was done
                self.remember_head()
        self._unit.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # reading -------------------------------------------------------------------
    def plans(self) -> list[dict[str, Any]]:
        """Every plan: revision, last update, item and open counts."""
        from todoledger.ledger import reading

        return reading.plans(self._unit)

    def items(self, plan: str | None = None) -> list[dict[str, Any]]:
        """The plan's items as `show` gives them."""
        return list(self.show(plan)["items"])

    def show(self, plan: str | None = None, *, writer: str | None = None) -> dict[str, Any]:
        """The plan with derived `blocked`/`ready`. Given a writer, the items
        join its base: it has now seen them."""
        from todoledger.ledger import reading

        return reading.show(self._unit, self._plan(plan), writer=writer)

    def show_json(self, plan: str | None = None, *, writer: str | None = None) -> str:
        """`show` as compact JSON text, written from the rows without building the dicts."""
        from todoledger.ledger import reading

        return reading.show_json(self._unit, self._plan(plan), writer=writer)

    def view(self, plan: str | None = None, *, writer: str | None = None) -> PlanView:
        """The plan as every reader shows it: counts, in progress, ready next,
        blocked, recently completed, each item with its depth."""
        from todoledger.ledger import reading

        return reading.view(self._unit, self._plan(plan), writer=writer)

    def recovery_view(self, plan: str | None = None, *, scheduled: bool = False) -> PlanView:
        """The view the recovery text and the compact read render, read in bounded
        work: whole-plan counts, every open item, the latest few finished and dropped."""
        from todoledger.ledger import reading

        return reading.recovery_view(self._unit, self._plan(plan), scheduled=scheduled)

    def rows(self, plan: str, ids: list[str]) -> list[dict[str, Any]]:
        """These items as they are now, in the order given (those not in the plan left out)."""
        from todoledger.ledger import reading

        return reading.rows(self._unit, plan, ids)

    def get(self, ref: str, plan: str | None = None) -> dict[str, Any]:
        """One item, by id or unique prefix."""
        from todoledger.ledger import reading

        return reading.get(self._unit, self._plan(plan), ref)

    def stranded(self, plan: str | None = None) -> list[dict[str, Any]]:
        """Open items that wait for a cancelled item: never ready until someone
        removes or re-points the dependency."""
        from todoledger.ledger import reading

        return reading.stranded(self._unit, self._plan(plan))

    def history(
        self, plan: str | None = None, item: str | None = None, *, created: tuple[str, ...] | None = None
    ) -> list[dict[str, Any]]:
        """The plan's events (or one item's), oldest first; given `created`, a "created"
        event's value keeps only those fields of the item it made (a report reads two)."""
        from todoledger.ledger import reading

        return reading.history(self._unit, self._plan(plan), item, created=created)

    def ops(self, plan: str | None = None) -> list[dict[str, Any]]:
        """The plan's changes: who, when, what kind, summary and warnings."""
        from todoledger.ledger import reading

        return reading.ops(self._unit, self._plan(plan))

    def check(self, plan: str | None = None) -> list[str]:
        """Differences between the stored state and the replay of its events (every plan given None)."""
        from todoledger.ledger import reading, tokens

        found = reading.check(self._unit, plan)
        if plan is None:  # the signatures and the columns that decide verification, ledger-wide
            from todoledger.ledger import persons

            found += persons.audit(self._unit)
        return found + tokens.breaks(self._unit) if plan in (None, tokens.TOKENS_PLAN) else found

    def watch(
        self, *, after: int | None = None, wait: float = 1.0, stop: Callable[[], bool] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every plan's events as they are committed, from any process or machine."""
        from todoledger.ledger import reading

        return reading.watch(self._unit, after=after, wait=wait, stop=stop)

    def last_event(self) -> int:
        """The number of the ledger's newest event (0 when it has none)."""
        from todoledger.ledger import reading

        return reading.last_event(self._unit)

    def last_change(self) -> int:
        """A number that grows with every recorded change anywhere in the ledger."""
        from todoledger.ledger import reading

        return reading.last_change(self._unit)

    def last_changes(self) -> dict[str, dict[str, Any]]:
        """Per plan, its latest change: op, writer, at, kind, summary."""
        from todoledger.ledger import reading

        return reading.last_changes(self._unit)

    def prime(
        self, plan: str | None = None, *, recent: int = 5, writer: str | None = None, recovering: bool = False
    ) -> str:
        """The recovery text; `recovering` (after a compaction) resets the writer's base to what it shows."""
        from todoledger.ledger import reading

        return reading.prime(
            self._unit, self._plan(plan), recent=recent, writer=writer, recovering=recovering
        )

    def recover_base(self, view: PlanView, writer: str, shown: Iterable[str]) -> None:
        """After a compaction the writer's base shrinks to what it was just shown."""
        from todoledger.ledger import reading

        reading.recover_base(self._unit, view, writer, shown)

    # whole-list writes -----------------------------------------------------------
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
        restore_hint: str | None = None,
    ) -> WriteResult:
        """An agent's whole list (or patch) in its own format, merged into the plan.
        `restore_hint`: how the caller's route restores an item (`{id}`, `{status}`)."""
        from todoledger.ledger import writes

        return writes.write(
            self._unit,
            *self._who(plan, writer),
            payload,
            dialect=dialect,
            response=response,
            at=at,
            source_key=source_key,
            source_at=source_at,
            restore_hint=restore_hint or writes.RESTORE_HINT,
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
        restore_hint: str | None = None,
    ) -> WriteResult:
        """A list already parsed (`dialects.parse`), merged into the plan."""
        from todoledger.ledger import writes

        return writes.apply(
            self._unit,
            *self._who(plan, writer),
            parsed,
            at=at,
            source_key=source_key,
            source_at=source_at,
            restore_hint=restore_hint or writes.RESTORE_HINT,
        )

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
        """Tell in the plan's story that a call was made and refused; nothing in the plan changes."""
        from todoledger.ledger import writes

        return writes.record_refused(
            self._unit,
            *self._who(plan, writer),
            reason,
            dialect=dialect,
            at=at,
            source_key=source_key,
            source_at=source_at,
        )

    def record_refusal(self, reason: str, *, plan: str | None = None, writer: str | None = None) -> bool:
        """A live write refused (lint, a lease fence, an identity refusal), in the plan's story with
        its writer and reason, one by one up to a cap per principal and plan a day, then counted
        (core/refusals.py); nothing else changes."""
        from todoledger.ledger import writes

        return writes.record_refusal(self._unit, *self._who(plan, writer), reason)

    # single-item commands ----------------------------------------------------------
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
        """A new item, after `after` (else last among its parent's children, else last)."""
        from todoledger.ledger import items

        return items.add(
            self._unit,
            *self._who(plan, writer),
            content,
            parent=parent,
            after=after,
            priority=priority,
            status=status,
            depends_on=depends_on,
            notes=notes,
            estimate=estimate,
            uses=uses,
            needs_approval=needs_approval,
            at=at,
        )

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
        task: str | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Change one item's fields and dependencies (`add_blocker`, `remove_blocker`);
        progress past unmet prerequisites is refused unless `force`, which is recorded.
        `task`: the MCP task whose wait a person's approval ended (a completion forced
        past a person's gate; see `persons_gate`)."""
        from todoledger.core.model import LedgerError
        from todoledger.ledger import items, tasks

        plan, writer = self._who(plan, writer)
        consent = None
        if task is not None:
            with self._unit.store.read():
                item_id = self._unit.require(plan, ref).id
            consent = tasks.gate_consent(self._unit, task, plan, item_id, writer)
            asked = tasks.get(self._unit, task, None)
            given = {k: v for k, v in fields.items() if v is not None}
            if consent is not None and (
                not force or asked is None or tasks.update_fields(asked["arguments"]) != given
            ):
                # The person let through the task's update as it was shown, not another one.
                raise LedgerError(
                    f"task {task[:8]} was let through to complete {item_id} with its own arguments,"
                    " not these; nothing was done"
                )
        return items.update(
            self._unit,
            plan,
            writer,
            ref,
            kind=kind,
            at=at,
            force=force,
            token=token,
            consent=consent,
            recheck=None
            if consent is None or task is None
            else lambda: tasks.gate_consent(self._unit, task, plan, item_id, writer),
            **fields,
        )

    def start(
        self,
        ref: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
        force: bool = False,
        token: int | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """Mark an item in progress."""
        return self.update(
            ref, plan=plan, writer=writer, force=force, token=token, at=at, status="in_progress", kind="start"
        )

    def done(
        self,
        ref: str,
        *,
        evidence: str | None = None,
        metrics: dict[str, float] | None = None,
        force_reason: str | None = None,
        plan: str | None = None,
        writer: str | None = None,
        force: bool = False,
        token: int | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """Complete an item once its gates pass (`force_reason` overrides a failing
        gate and is recorded); `metrics` are recorded first, so metric gates see them."""
        if metrics:
            self.record_metrics(ref, metrics, plan=plan, writer=writer)
        return self.update(
            ref,
            plan=plan,
            writer=writer,
            force=force,
            token=token,
            at=at,
            status="completed",
            evidence=evidence,
            kind="done",
            force_reason=force_reason,
        )

    def cancel(
        self,
        ref: str,
        *,
        reason: str | None = None,
        plan: str | None = None,
        writer: str | None = None,
        token: int | None = None,
        at: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        """Cancel an item, with why (`force`: a person's, past another writer's lease)."""
        return self.update(
            ref,
            plan=plan,
            writer=writer,
            token=token,
            force=force,
            at=at,
            status="cancelled",
            reason=reason or "cancelled",
            kind="cancel",
        )

    def restore(self, ref: str, *, plan: str | None = None, writer: str | None = None) -> dict[str, Any]:
        """Bring back a dropped or cancelled item with the status it had before."""
        from todoledger.ledger import items

        return items.restore(self._unit, *self._who(plan, writer), ref)

    def dep_add(
        self,
        ref: str,
        blocker: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """Make an item wait for `blocker`."""
        return self.update(ref, plan=plan, writer=writer, at=at, add_blocker=blocker, kind="dep")

    def dep_remove(
        self,
        ref: str,
        blocker: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
        at: str | None = None,
    ) -> dict[str, Any]:
        """Stop an item waiting for `blocker`."""
        return self.update(ref, plan=plan, writer=writer, at=at, remove_blocker=blocker, kind="dep")

    def clear(self, plan: str | None = None, *, writer: str | None = None) -> int:
        """Remove every item of a plan (recorded, so `undo` brings them back)."""
        from todoledger.ledger import items

        return items.clear(self._unit, *self._who(plan, writer))

    # copying between backends -------------------------------------------------------------
    def copy_to(self, target: str) -> dict[str, Any]:
        """Copy the whole ledger into the empty ledger at `target` (a file path or
        a postgresql:// URL), then verify the copy: the same row counts, its events
        replay to its state, and every plan exports and tells its history as here.
        A copy that does not verify raises."""
        from todoledger.core.model import LedgerError
        from todoledger.store.copy import copy_rows, count_rows
        from todoledger.store.open import open_store

        store = open_store(target)
        with Ledger(store=store) as copy:
            counts = copy_rows(self._unit.store, store)
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
        return {"from": self._unit.store.location, "to": location, "rows": counts, "verified": True}

    # the schedule ------------------------------------------------------------------
    def schedule(self, plan: str | None = None) -> dict[str, Any]:
        """Critical path of the open work and its length, the sets of ready items
        that can run together (resources), and measured durations of finished items."""
        plan = self._plan(plan)
        out = self.view(plan).schedule().as_dict()
        out["measured"] = self.durations(plan)
        return {"plan": plan, **out}
