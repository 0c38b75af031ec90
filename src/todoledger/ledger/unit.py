"""The unit of work: one store and its repo, the write transaction, and the
recording of each change as an op with its events.

Every concern module of the ledger (writes, items, leases, reading, history,
people, gates) takes a `Unit` and plain values; only the façade (`Ledger`)
makes one. A change happens inside `transaction()`: `op()` opens an op whose
events are buffered and inserted just before the transaction commits, after
the leases of the writer's touched items are renewed (or ended).

A transaction names the one plan it writes (`transaction(plan)`): on
PostgreSQL it then waits only for that plan's writers. One that names none is
a cross-plan operation and waits for every writer. An op for another plan than
the transaction's is a bug, refused before it writes anything.
"""

from __future__ import annotations

from todoledger.core.ids import ALPHABET, ID_LENGTH, looks_like_id, new_id
from todoledger.core.merge import Seen
from todoledger.core.model import ANNOTATIONS, OPEN_STATUSES, AppliedBefore, Item, LedgerError
from todoledger.core.scoped import contextmanager
from todoledger.core.timefmt import shift
from todoledger.core.unicode import check_text
from todoledger.store.repo import Lease, Repo, Writes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from todoledger.store.base import Store


class _Discarded(Exception):
    """Ends a transaction run again in a retry only to reach what came after it: rolled back."""


class Unit:
    """One store, its queries, and the transaction that records changes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.repo = Repo(store)
        # False where requests come from elsewhere (`serve` without --allow-checks):
        # then no check runs, neither by `verify` nor as the gate of `done`.
        self.run_checks = True
        # How a refusal names the override of a failing gate: the CLI's flags here;
        # the MCP tools name their own arguments.
        self.override = "--force with --reason"
        self.batching = False  # inside `Ledger.batch()`: one transaction holds many writes
        # Inside `Ledger.untimed()`: the ops recorded carry no time of their own (see store/migrations.py, m009).
        self.untimed: dict[str, Any] | None = None
        self._writes: list[Writes] | None = None
        # (writer, item): a person's --force past another writer's live lease in this transaction.
        self.overrides: set[tuple[str, str]] = set()
        self._plans: list[str | None] = []  # the plan of each open transaction, outermost first
        # A person's key for person-only actions on a signed ledger (ledger/signed.py):
        # an unlocked `personkeys.Signer`, or a callable that unlocks one when first
        # needed (the CLI's passphrase prompt), or None (no person here to sign).
        self.signer: Any = None
        # Signatures made in this transaction: (plan, item, record), each kept as a
        # `signed` event of the transaction's op of that plan.
        self.signatures: list[tuple[str, str | None, dict[str, Any]]] = []
        # The lease secrets this caller holds (SHA-256 of each): those of the claims it
        # made, and those it was given (TODOLEDGER_LEASE_SECRET, `Ledger.hold`). A
        # holder is known by them, never by its writer's name alone.
        self.held_secrets: set[str] = set()
        # The idempotency key of the calls under way (`Ledger.keyed`), made by the route
        # before their first attempt (issue 30): the ops they record carry it (ops.call_key),
        # the first as given, later ones `key#2`, `key#3`...; `keyed_ops` counts them.
        self.call_key: str | None = None
        self.keyed_ops = 0
        # Set once a write transaction of the call under way has begun (ledger/retry.py).
        self.wrote = False
        self.calls = 0  # façade calls under way (a call that calls another is retried as one)
        # A retry that goes on past what landed (ledger/retry.py): the transactions found applied
        # (key, op), run again and rolled back, and how many it committed that had not landed.
        self.resuming = False
        self.found_applied: list[tuple[str, int]] = []
        self.applied_new = 0
        self.discarding = False  # inside such a rolled-back transaction

    @property
    def in_transaction(self) -> bool:
        return bool(self._plans)

    def next_call_key(self) -> str | None:
        """The key the next op of the keyed calls will carry (None: not keyed)."""
        if self.call_key is None:
            return None
        n = self.keyed_ops + 1
        return self.call_key if n == 1 else f"{self.call_key}#{n}"

    def take_call_key(self) -> dict[str, str]:
        """The next op's key, as an op's field (counted as taken), or nothing. In a
        transaction run again only to be rolled back, the key is counted, not stored
        (the op that holds it landed before)."""
        key = self.next_call_key()
        if key is None:
            return {}
        self.keyed_ops += 1
        return {} if self.discarding else {"call_key": key}

    def proves(self, lease: Lease) -> bool:
        """Does this caller hold the lease's secret? (A lease claimed before secrets has none.)"""
        return lease.secret is None or lease.secret in self.held_secrets

    def holds(self, lease: Lease, writer: str) -> bool:
        """`writer` holds `lease`, shown by its secret."""
        return lease.holder == writer and self.proves(lease)

    def live_for_others(self, lease: Lease, writer: str, at: str) -> bool:
        """Is this lease live and not shown to be `writer`'s own?"""
        return _live(lease, writer, at) or (
            lease.holder == writer
            and lease.expires_at is not None
            and lease.expires_at > at
            and not self.proves(lease)
        )

    @contextmanager
    def locked(self, plan: str | None = None) -> Iterator[None]:
        """The store's write transaction for `plan` (None: a cross-plan one),
        without ops of its own; a nested one joins the outer, and may not
        write another plan than the outer's."""
        outer = self._plans[0] if self._plans else None
        if self._plans and outer is not None and plan not in (None, outer):
            raise AssertionError(f"a write of plan {plan!r} inside one locked for plan {outer!r}")
        self._plans.append(plan if not self._plans else outer)
        try:
            with self.store.write(plan):
                self.wrote = True  # begun: a lost connection from here may have applied it
                yield
        finally:
            self._plans.pop()

    @contextmanager
    def transaction(self, plan: str | None = None) -> Iterator[None]:
        """A write transaction whose buffered events are inserted before it
        commits; a nested one joins the outer. `plan`: the one plan it writes
        (None: any, a cross-plan operation).

        A keyed call's transaction whose key the ledger holds was applied before
        (its commit landed, the reply was lost): refused with `AppliedBefore`, or,
        in a retry that goes on past what landed (`resuming`, ledger/retry.py), run
        again and rolled back, so that the call reaches its parts that never ran
        (`done`: its metrics landed, its completion did not) and nothing is applied twice."""
        discard, key = False, None
        try:
            with self.locked(plan):
                if self._writes is not None:
                    yield
                    return
                key = self.next_call_key()
                if key is not None:  # its commit may have landed before the connection was lost
                    found = self.repo.call_op(key)
                    if found is not None:
                        if not self.resuming:
                            raise AppliedBefore(key, found)
                        self.found_applied.append((key, found))
                        discard = self.discarding = True
                self._writes = []
                try:
                    yield
                    if discard:
                        raise _Discarded  # the store rolls this transaction back
                    # Leases first, then the events: the events' turn on the
                    # ledger-wide feed (Writes.flush) lasts only to the commit.
                    for w in self._writes:
                        self._renew_leases(w)
                    self._attach_signatures()
                    for w in self._writes:
                        w.flush()
                finally:
                    self._writes = None
                    self.overrides = set()
                    self.signatures = []
                    self.discarding = False
        except _Discarded:
            return
        if self.resuming and key is not None:
            self.applied_new += 1  # committed in the retry: a part the first attempt never applied

    def _attach_signatures(self) -> None:
        """Each signature made in this transaction joins the op of its plan (the
        action it signs); one with no op there signed nothing that was written."""
        assert self._writes is not None
        for plan, item, record in self.signatures:
            w = next((w for w in self._writes if w.plan == plan), None)
            if w is not None:
                w.annotate(item, "signed", None, record)

    def op(self, plan: str, writer: str, at: str, kind: str, **extra: Any) -> Writes:
        """A new op of this transaction: the change's record, its events to follow."""
        assert self._writes is not None, "changes happen inside transaction()"
        assert self._plans[0] in (None, plan), (
            f"an op of plan {plan!r} in a write locked for {self._plans[0]!r}"
        )
        self.check_new_plan(plan)
        check_text("the writer", writer)
        marks = self.marks() | self.take_call_key()  # an op's own source place wins over the block's
        op = self.repo.new_op(
            plan, writer, at, kind, **(marks | {k: v for k, v in extra.items() if v is not None})
        )
        w = Writes(self.repo, plan, writer, at, op)
        self._writes.append(w)
        return w

    def marks(self) -> dict[str, Any]:
        """What every op recorded now carries beyond its own fields: inside `Ledger.untimed()`,
        that its time is not the call's (and the source's message number)."""
        return dict(self.untimed) if self.untimed is not None else {}

    def check_new_plan(self, plan: str) -> None:
        """A plan's name is text; a new plan's is never of an item id's form, so that
        `show NAME` can tell a plan from an item (a plan so named before stays readable)."""
        check_text("the plan name", plan)
        if looks_like_id(plan) and self.repo.revision(plan) == 0 and not self.repo.items(plan):
            raise LedgerError(
                f"plan name {plan!r} has the form of an item id ({ID_LENGTH} characters of {ALPHABET}):"
                " `todoledger show` could not tell the plan from an item; choose another name"
            )

    def require(self, plan: str, ref: str) -> Item:
        """The item `ref` names in the plan: its id, or a unique prefix of two or more characters."""
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

    def fresh_id(self, taken: dict[str, Item]) -> str:
        """An item id used nowhere in the ledger nor among `taken`."""
        while True:
            candidate = new_id()
            if candidate not in taken and not self.repo.exists(candidate):
                return candidate

    def save_base(
        self,
        plan: str,
        writer: str,
        old: dict[str, Seen],
        new: dict[str, Seen],
        *,
        whole: bool,
        listed: bool = False,
    ) -> None:
        """Store only what changed in the writer's view: most writes flip one status.
        A whole list forgets what it no longer names. `listed`: a list of the
        writer's (not a read) says what it lists (`Seen.listed`) too."""
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        if changed:
            self.repo.save_base(plan, writer, changed, listed=listed)
        if whole:
            gone = [k for k in old if k not in new]
            if gone:
                self.repo.forget_base(plan, writer, gone)

    def fence(self, item: Item, writer: str, token: int, at: str) -> Lease:
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
        if not self.proves(lease):
            raise LedgerError(
                f"token {token} on {item_id}: the lease's secret was not shown (the claim's reply gave it to the"
                " claimant only: pass it in TODOLEDGER_LEASE_SECRET); a number from the history proves nothing:"
                " your change is refused"
            )
        if lease.holder is None and item.status in OPEN_STATUSES:
            lease.holder, lease.expires_at = writer, shift(at, lease.seconds)
            self.repo.save_lease(lease)
        return lease

    def leased(self, item: Item, writer: str, at: str, *, force: bool = False) -> Lease | None:
        """Refuse a change to an item another writer holds a live lease on
        (a lapsed one fences nobody); a person's `force` passes, and the
        override is returned so that the caller records it (`forced`)."""
        lease = self.repo.lease(item.id)
        if lease is None:
            return None
        if lease.holder is None:
            self._refuse_former_holder(item, lease, writer)
            return None
        if not self.live_for_others(lease, writer, at):
            return None
        if not force:
            raise LedgerError(lease_refusal(lease))
        from todoledger.ledger.signed import force as person_force

        person_force(
            self,
            f"--force past {lease.holder}'s lease on {item.id}",
            writer,
            item.plan,
            item.id,
            {"past": "lease", "holder": lease.holder, "token": lease.token},
        )
        if self._writes is not None:
            self.overrides.add((writer, item.id))
        return lease

    def record_override(self, w: Writes, lease: Lease, why: dict[str, Any]) -> None:
        """A person's change past another writer's lease, told in the item's history."""
        past = {"past": "lease", "holder": lease.holder, "token": lease.token, "until": lease.expires_at}
        w.annotate(lease.item, "forced", None, past | why)

    def foreign_leases(self, plan: str, writer: str, at: str) -> dict[str, Lease]:
        """The plan's live leases that writers other than `writer` hold, by item."""
        return {
            lease.item: lease
            for lease in self.repo.held_in_plan(plan)
            if self.live_for_others(lease, writer, at)
        }

    def _refuse_former_holder(self, item: Item, lease: Lease, writer: str) -> None:
        """A writer that held an earlier lease on an item that was claimed again and
        finished since is fenced: its late `done` would overwrite the successor's
        evidence. Only an item closed after a later claim is looked at."""
        if item.status in OPEN_STATUSES:
            return
        claims = [
            e
            for e in self.repo.events(item.plan, item.id)
            if e.field == "claimed" and isinstance(e.new, dict) and e.new.get("token") is not None
        ]
        latest = max((int(e.new["token"]) for e in claims), default=0)
        if any(e.new.get("holder") == writer and int(e.new["token"]) < latest for e in claims) and not any(
            e.new.get("holder") == writer and int(e.new["token"]) == latest for e in claims
        ):
            by = next(e.new.get("holder") for e in claims if int(e.new["token"]) == latest)
            raise LedgerError(
                f"fenced: {item.id} was claimed again by {by} (token {latest}) and is {item.status};"
                " your earlier lease on it ended: your change is refused"
            )

    def end_lease(self, w: Writes, lease: Lease, why: str) -> None:
        """Each release is an event; work given back or abandoned is pending again."""
        w.annotate(lease.item, "released", None, {"holder": lease.holder, "token": lease.token, "why": why})
        item = self.repo.item(lease.item)
        if item is not None and item.status == "in_progress" and why in ("expired", "released"):
            w.set(item.id, "status", "in_progress", "pending")
        self.repo.end_lease(lease.item)

    def _renew_leases(self, w: Writes) -> None:
        """Any write by a holder to its item renews the lease; finishing,
        cancelling or removing the item ends it, whoever did it. The last
        fence of every route: a change of state to an item another writer
        holds a live lease on is refused here unless a person overrode it."""
        touched = {row[2] for row in w.pending if row[2] is not None}
        if not touched:
            return
        for lease in self.repo.held_in_plan(w.plan):
            if lease.item not in touched:
                continue
            changed = any(row[2] == lease.item and row[3] not in ANNOTATIONS for row in w.pending)
            if (
                changed
                and self.live_for_others(lease, w.writer, w.at)
                and (w.writer, lease.item) not in self.overrides
            ):
                raise LedgerError(lease_refusal(lease))
            item = self.repo.item(lease.item)
            if item is None or item.status not in OPEN_STATUSES:
                self.end_lease(w, lease, item.status if item is not None else "removed")
            elif self.holds(lease, w.writer):
                lease.expires_at = shift(w.at, lease.seconds)
                self.repo.save_lease(lease)


def _live(lease: Lease, writer: str, at: str) -> bool:
    """Is this lease held by someone other than `writer`, and not yet expired?"""
    return (
        lease.holder is not None
        and lease.holder != writer
        and lease.expires_at is not None
        and lease.expires_at > at
    )


def leased_to(lease: Lease, name: str | None = None) -> str:
    """How a lease is named in refusals and replies: the item (its id, else
    `name`), its holder and when the lease ends."""
    return f"{name or lease.item} is leased to {lease.holder} until {lease.expires_at}"


def lease_refusal(lease: Lease) -> str:
    """The one line that refuses a change to an item someone else holds."""
    return f"{leased_to(lease)}: your change is refused; a person may override it with --force (recorded)"
