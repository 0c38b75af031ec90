"""Leases: a claim on an item for a while, with a fencing token, so that many
agents share one plan without doing the same work twice. "Held" means a lease
here and everywhere: an item that waits for its gate is "gated".

Each lease has a 128-bit secret, returned only in the claimant's reply (never in
the history or another caller's reply; the ledger keeps its SHA-256). The
fencing number only orders writes: a write proves its holder by the secret
(`Unit.proves`), never by a writer's name or a number read from the history."""

from __future__ import annotations

from todoledger.core.merge import Seen
from todoledger.core.model import DEFAULT_LEASE_SECONDS, LedgerError
from todoledger.core.timefmt import now, shift
from todoledger.ledger import readiness
from todoledger.ledger.values import lease_length
from todoledger.store.repo import Lease

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.core.model import Item
    from todoledger.ledger.unit import Unit


def claim(
    u: Unit, plan: str, writer: str, *, lease: int | None = None, at: str | None = None
) -> list[dict[str, Any]]:
    """The first ready item, given to the writer for a lease (`lease` seconds,
    else the plan's length, else 30 minutes): it is started, and the reply
    carries the lease's fencing token. Expired leases of the plan are released
    first. An agent skips what waits for a person's approval."""
    from todoledger.core.approval import is_person

    with u.transaction(plan):
        at = at or now()
        seconds = _lease_seconds(u, plan, lease)
        _release_expired(u, plan, writer, at)
        # An agent claims only what needs no person first; a person may claim what awaits them.
        ready = readiness.ready(u, plan, 1, approved_only=not is_person(writer))
        if not ready:
            return []
        item = ready[0]
        u.store.lock("tokens")  # tokens count across plans: claims of two plans take turns here
        token = u.repo.next_token()
        secret = new_secret()
        u.held_secrets.add(secret_digest(secret))  # this caller holds it: its later writes prove it
        expires = shift(at, seconds)
        w = u.op(plan, writer, at, "claim", summary=f"claimed {item.id}")
        w.set(item.id, "status", item.status, "in_progress")
        w.annotate(item.id, "claimed", None, {"holder": writer, "token": token, "expires_at": expires})
        u.repo.save_lease(Lease(item.id, plan, writer, token, seconds, at, expires, secret_digest(secret)))
        u.repo.save_base(
            plan,
            writer,
            {item.id: Seen(item.content, "in_progress", item.priority, item.active_form)},
        )
        item.status, item.updated_by, item.updated_at = "in_progress", writer, at
        u.repo.touch_plan(plan, at)
        claimed = {
            "claimed": True,
            "token": token,
            "lease_secret": secret,
            "lease_expires": expires,
            "lease_seconds": seconds,
        }
        return [item.as_dict() | {"ready": False} | claimed]


def renew(
    u: Unit,
    plan: str,
    writer: str,
    ref: str,
    *,
    token: int,
    lease: int | None = None,
    at: str | None = None,
) -> dict[str, Any]:
    """Extend the writer's lease on an item (by `lease` seconds, else its own length)."""
    with u.transaction(plan):
        at = at or now()
        held = _held_lease(u, u.require(plan, ref), writer, token, at)
        seconds = _lease_seconds(u, plan, lease) if lease is not None else held.seconds
        held.seconds, held.expires_at = seconds, shift(at, seconds)
        u.repo.save_lease(held)
    return held.as_dict()


def release(
    u: Unit,
    plan: str,
    writer: str,
    ref: str,
    *,
    token: int,
    at: str | None = None,
) -> dict[str, Any]:
    """The holder gives its claim back: the item is pending again (if still in progress)."""
    with u.transaction(plan):
        at = at or now()
        held = _held_lease(u, u.require(plan, ref), writer, token, at)
        w = u.op(plan, writer, at, "release", summary=f"released {held.item}")
        u.end_lease(w, held, "released")
        u.repo.touch_plan(plan, at)
    return held.as_dict() | {"holder": None, "released_by": writer}


def reclaim(u: Unit, writer: str, plan: str | None = None, *, at: str | None = None) -> list[dict[str, Any]]:
    """Release every expired lease (of the plan, or of every plan given None)."""
    with u.transaction(plan):  # every plan's, given None: a cross-plan write
        return [lease.as_dict() for lease in _release_expired(u, plan, writer, at or now())]


def leases(u: Unit, plan: str) -> list[dict[str, Any]]:
    """The plan's held leases, oldest claim first."""
    with u.store.read():
        return [lease.as_dict() for lease in u.repo.leases(plan)]


def set_lease_length(u: Unit, plan: str, seconds: int | None) -> None:
    """The plan's default lease length (None: back to 30 minutes)."""
    if seconds is not None:
        seconds = lease_length(seconds)
    with u.transaction(plan):
        u.repo.set_plan_lease_seconds(plan, seconds, now())


def new_secret() -> str:
    """128 bits from the OS's generator, as 32 hex digits."""
    import os

    return os.urandom(16).hex()


def secret_digest(secret: str) -> str:
    """What the ledger keeps of a lease's secret, and what a caller's is compared by."""
    import hashlib

    return hashlib.sha256(secret.strip().encode("utf-8", "replace")).hexdigest()


def _lease_seconds(u: Unit, plan: str, lease: int | None) -> int:
    if lease is not None:
        return lease_length(lease)
    return u.repo.plan_lease_seconds(plan) or DEFAULT_LEASE_SECONDS


def _held_lease(u: Unit, item: Item, writer: str, token: int, at: str) -> Lease:
    lease = u.fence(item, writer, token, at)
    if lease.holder is None:
        raise LedgerError(f"{item.id} is {item.status} and no longer claimed: its lease ended")
    return lease


def _release_expired(u: Unit, plan: str | None, writer: str, at: str) -> list[Lease]:
    expired = u.repo.expired_leases(plan, at)
    for name in dict.fromkeys(lease.plan for lease in expired):
        mine = [lease for lease in expired if lease.plan == name]
        w = u.op(name, writer, at, "reclaim", summary=f"released {len(mine)} expired lease(s)")
        for lease in mine:
            u.end_lease(w, lease, "expired")
        u.repo.touch_plan(name, at)
    return expired
