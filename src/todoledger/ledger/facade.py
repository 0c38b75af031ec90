"""The façade's base: where every method of `Ledger` resolves the default
plan and writer (once, here), and the unit of work it hands to the concern
modules. `Ledger` is this base and its method groups (`facade_*`)."""

from __future__ import annotations

from todoledger.defaults import default_plan, default_writer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.unit import Unit
    from todoledger.tokens import Holder


class Facade:
    """What the façade's method groups share."""

    _unit: Unit

    def _plan(self, plan: str | None) -> str:
        return plan or default_plan()

    def _who(self, plan: str | None, writer: str | None) -> tuple[str, str]:
        return plan or default_plan(), writer or default_writer(self._token_holder)

    def _token_holder(self, token: str) -> Holder | None:
        """Who holds `token` in this ledger's registry (`ledger.tokens`): how a
        command line's TODOLEDGER_TOKEN is told apart from a made-up one."""
        from todoledger.ledger import tokens

        return tokens.holder(self._unit, token)
