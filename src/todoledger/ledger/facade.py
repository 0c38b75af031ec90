"""The façade's base: where every method of `Ledger` resolves the default
plan and writer (once, here), and the unit of work it hands to the concern
modules. `Ledger` is this base and its method groups (`facade_*`)."""

from __future__ import annotations

from todoledger.defaults import default_plan, default_writer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from todoledger.ledger.unit import Unit


class Facade:
    """What the façade's method groups share."""

    _unit: Unit

    def _plan(self, plan: str | None) -> str:
        return plan or default_plan()

    def _who(self, plan: str | None, writer: str | None) -> tuple[str, str]:
        return plan or default_plan(), writer or default_writer()
