"""Human output: rich tables and colours on a terminal; plain aligned text in
a pipe, without importing rich (its import alone costs more than a command's
own work, and scripts read plain text best)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from todoledger.core.view import PlanView


def _backend() -> ModuleType:
    if sys.stdout.isatty():
        from todoledger.cli import render_rich

        return render_rich
    from todoledger.cli import render_plain

    return render_plain


def plan(view: PlanView, location: str | None = None) -> None:
    _backend().plan(view, location)


def plans(rows: list[dict[str, Any]]) -> None:
    _backend().plans(rows)


def items(rows: list[dict[str, Any]], *, title: str, empty: str) -> None:
    _backend().items(rows, title=title, empty=empty)


def changed(row: dict[str, Any], verb: str | None = None) -> None:
    _backend().changed(row, verb)


def history(events: list[dict[str, Any]], title: str | None = None) -> None:
    _backend().history(events, title)


def item(detail: dict[str, Any]) -> None:
    """One item in full: plain lines on a terminal too (sanitised; nothing in it needs a table)."""
    from todoledger.cli import render_plain

    render_plain.item(detail)


def write_result(result: dict[str, Any]) -> None:
    _backend().write_result(result)


def stranded(rows: list[dict[str, Any]]) -> None:
    _backend().stranded(rows)
