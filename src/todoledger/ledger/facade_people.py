"""`Ledger`'s methods about people: approvals of items and of the plan, each
plan's writers, and measured durations (see `ledger.people`)."""

from __future__ import annotations

from todoledger.ledger.facade import Facade

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.tokens import Holder


class PeopleMethods(Facade):
    """Approvals, writers, durations."""

    def approve(self, ref: str, *, plan: str | None = None, writer: str | None = None) -> dict[str, Any]:
        """A person approves an item as it is now: an agent may then start it."""
        from todoledger.ledger import people

        return people.approve(self._unit, *self._who(plan, writer), ref)

    def approve_plan(self, plan: str | None = None, *, writer: str | None = None) -> dict[str, Any]:
        """A person approves the plan as it stands, with a hash; any later change is flagged."""
        from todoledger.ledger import people

        return people.approve_plan(self._unit, *self._who(plan, writer))

    def approvals(
        self, plan: str | None = None, *, rows: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The plan against its last approval, and each item's standing."""
        from todoledger.ledger import people

        return people.approvals(self._unit, self._plan(plan), rows=rows)

    def writers(self, plan: str | None = None) -> list[dict[str, Any]]:
        """Each writer of the plan: last write, number of changes, what it holds in progress."""
        from todoledger.ledger import people

        return people.writers(self._unit, self._plan(plan))

    def started_by(self, plan: str | None = None) -> dict[str, str]:
        """For each item in progress, the writer who started it."""
        from todoledger.ledger import people

        return people.started_by(self._unit, self._plan(plan))

    def durations(self, plan: str | None = None) -> dict[str, str]:
        """How long each completed item took, measured from its history, as `1h30m`."""
        from todoledger.ledger import people

        return people.durations(self._unit, self._plan(plan))

    # tokens (ledger.tokens) ---------------------------------------------------
    def add_token(
        self, name: str, *, agent: bool = False, token: str | None = None, writer: str | None = None
    ) -> dict[str, Any]:
        """A person registers a token for `name` (an agent's with `agent`); the
        secret is returned once, the ledger keeps its hash."""
        from todoledger.ledger import tokens

        return tokens.add(self._unit, self._who(None, writer)[1], name, agent=agent, token=token)

    def remove_token(self, ref: str, *, writer: str | None = None) -> list[dict[str, Any]]:
        """A person removes the tokens `ref` names (a token's id, or a holder's name)."""
        from todoledger.ledger import tokens

        return tokens.remove(self._unit, self._who(None, writer)[1], ref)

    def tokens(self) -> list[dict[str, Any]]:
        """The registered tokens: id, holder, role, who added it and when (no secrets)."""
        from todoledger.ledger import tokens

        return tokens.listing(self._unit)

    def token_holder(self, token: str) -> Holder | None:
        """Who holds `token`, if a person registered it in this ledger."""
        return self._token_holder(token)
