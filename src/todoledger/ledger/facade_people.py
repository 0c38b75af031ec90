"""`Ledger`'s methods about people: approvals of items and of the plan, each
plan's writers, and measured durations (see `ledger.people`)."""

from __future__ import annotations

from todoledger.ledger.facade import Facade

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from todoledger.tokens import Holder


class PeopleMethods(Facade):
    """Approvals, writers, durations."""

    def approve(
        self,
        ref: str,
        *,
        plan: str | None = None,
        writer: str | None = None,
        tasks: list[str] | None = None,
    ) -> dict[str, Any]:
        """A person approves an item as it is now: an agent may then start it. `tasks`:
        the waiting MCP tasks (ids or prefixes) it lets complete the item past a
        person's gate, as `gate_waits` showed them; none unless named."""
        from todoledger.ledger import people
        from todoledger.ledger import tasks as task_rows

        plan, writer = self._who(plan, writer)
        named = list(tasks or [])
        return people.approve(
            self._unit,
            plan,
            writer,
            ref,
            (lambda item_id: task_rows.consented(self._unit, plan, item_id, named)) if named else None,
        )

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

    def started_by(self, plan: str | None = None, *, ids: Sequence[str] | None = None) -> dict[str, str]:
        """For each item in progress, the writer who started it. `ids`: the items in progress
        as the caller read them already (the board's view), so that no item is read again."""
        from todoledger.ledger import people

        return people.started_by(self._unit, self._plan(plan), ids=ids)

    def durations(self, plan: str | None = None) -> dict[str, str]:
        """How long each completed item took, measured from its history, as `1h30m`."""
        from todoledger.ledger import people

        return people.durations(self._unit, self._plan(plan))

    # person keys (ledger.persons, ledger.signed) -----------------------------
    def sign_with(self, signer: Any) -> None:
        """The person's key for person-only actions on a signed ledger: an unlocked
        `personkeys.Signer`, or a callable that unlocks one when first needed (the
        CLI asks the passphrase then, and only then), or None."""
        self._unit.signer = signer

    def signer(self) -> Any:
        """The key unlocked for this ledger's last signed action, if any."""
        signer = self._unit.signer
        return signer if hasattr(signer, "sign") else None

    def people(self) -> dict[str, Any]:
        """The person keys, as every header shows them (`person keys: ann (registered at …)`)."""
        from todoledger.ledger import persons

        return persons.standing(self._unit)

    def signed(self) -> bool:
        """Does a registered person key sign this ledger's person-only actions?"""
        from todoledger.ledger import signed

        return signed.is_signed(self._unit)

    def person_init(
        self, signer: Any, *, route: str = "terminal", writer: str | None = None
    ) -> dict[str, Any]:
        """Register the ledger's first person key (trust on first use; it signs its own
        registration). Only a person registers it: `writer` (default: this process's route)."""
        from todoledger.ledger import persons

        return persons.init(self._unit, signer, route, self.first_key_writer(writer))

    def first_key_writer(self, writer: str | None = None) -> str:
        """Who would register this ledger's first key: refused in one line unless a person
        (an agent that registered the first key would sign every person-only action after)."""
        from todoledger.core.approval import require_person

        who = self._who(None, writer)[1]
        require_person("person init", who)
        return who

    def person_add(self, name: str, public: str) -> dict[str, Any]:
        """A registered key (this ledger's signer) signs another person's key in."""
        from todoledger.ledger import persons

        return persons.add(self._unit, name, public)

    def person_remove(self, ref: str) -> dict[str, Any]:
        """A registered key signs a key's removal."""
        from todoledger.ledger import persons

        return persons.remove(self._unit, ref)

    def person_reset(self, by: str) -> dict[str, Any]:
        """Every key removed without a signature (a lost passphrase); flagged seven days."""
        from todoledger.ledger import persons

        return persons.reset(self._unit, by)

    def remember_head(self) -> None:
        """After a signed action: the key's folder keeps the event it signed last."""
        from todoledger.ledger import persons

        signer = self.signer()
        if signer is not None:
            persons.remember_head(self._unit, signer)

    def agent_history(self) -> bool:
        """Has any agent written to this ledger?"""
        from todoledger.ledger import reading

        return reading.agent_history(self._unit)

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
