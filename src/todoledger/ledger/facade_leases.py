"""`Ledger`'s lease methods: claims with fencing tokens, renewals, releases,
and the expired leases given back (see `ledger.leases`)."""

from __future__ import annotations

from todoledger.defaults import default_writer
from todoledger.ledger.facade import Facade

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class LeaseMethods(Facade):
    """Leases, and `next` (which claims)."""

    def next(
        self,
        plan: str | None = None,
        *,
        limit: int = 5,
        claim: bool = False,
        writer: str | None = None,
        lease: int | None = None,
        at: str | None = None,
        awaiting: bool = False,
    ) -> list[dict[str, Any]]:
        """Ready items by priority then order; `claim` gives the first to the
        writer for a lease, with a fencing token (see `ledger.leases.claim`).
        An item that waits for a person's approval is not ready; `awaiting`
        lists those too, marked so (what an approval prompt asks about)."""
        if not claim:
            from todoledger.ledger import reading

            return reading.ready(self._unit, self._plan(plan), limit, awaiting=awaiting)
        from todoledger.ledger import leases

        return leases.claim(self._unit, *self._who(plan, writer), lease=lease, at=at)

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
        from todoledger.ledger import leases

        return leases.renew(self._unit, *self._who(plan, writer), ref, token=token, lease=lease, at=at)

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
        from todoledger.ledger import leases

        return leases.release(self._unit, *self._who(plan, writer), ref, token=token, at=at)

    def reclaim(
        self, plan: str | None = None, *, writer: str | None = None, at: str | None = None
    ) -> list[dict[str, Any]]:
        """Release every expired lease (of the plan, or of every plan given None)."""
        from todoledger.ledger import leases

        return leases.reclaim(self._unit, writer or default_writer(self._token_holder), plan, at=at)

    def leases(self, plan: str | None = None) -> list[dict[str, Any]]:
        """The plan's held leases, oldest claim first."""
        from todoledger.ledger import leases

        return leases.leases(self._unit, self._plan(plan))

    def set_lease_length(self, seconds: int | None, *, plan: str | None = None) -> None:
        """The plan's default lease length (None: back to 30 minutes)."""
        from todoledger.ledger import leases

        leases.set_lease_length(self._unit, self._plan(plan), seconds)
