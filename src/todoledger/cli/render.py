"""Human output: colours on a terminal, plain aligned text in a pipe.

A plan on a terminal is drawn by `render_term` (plain ANSI codes, one line a
row, long plans through a pager), and so are the agent verbs' one-line
replies; the other terminal output (`plans`, `history`) by rich;
a pipe gets `render_plain`, without importing rich (its import alone costs
more than a command's own work, and scripts read plain text best)."""

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


def _short() -> ModuleType:
    """The one-line outputs of the agent verbs: plain ANSI codes on a terminal, no rich."""
    if sys.stdout.isatty():
        from todoledger.cli import render_term

        return render_term
    from todoledger.cli import render_plain

    return render_plain


def plan(
    view: PlanView,
    location: str | None = None,
    *,
    show_all: bool = False,
    pager: bool = False,
    people: str | None = None,
) -> None:
    """The plan, open work first (`core.view.fold`); `pager`: page it on a terminal (`cli.pager`).
    `people`: on a terminal, the header's line about person keys (signed or not, a recent reset)."""
    if sys.stdout.isatty():
        from todoledger.cli import render_term

        if people is not None and location:  # on the ledger's own line, the last one
            location = f"{location}; {people}"
        lines = render_term.plan_lines(view, location, show_all=show_all)
        if pager:
            from todoledger.cli.pager import page

            page(lines)
        else:
            sys.stdout.write("\n".join(lines) + "\n")
        return
    from todoledger.cli import render_plain

    render_plain.plan(view, location, show_all=show_all)


def plans(rows: list[dict[str, Any]]) -> None:
    _backend().plans(rows)


def items(rows: list[dict[str, Any]], *, title: str, empty: str) -> None:
    _short().items(rows, title=title, empty=empty)


def changed(row: dict[str, Any], verb: str | None = None) -> None:
    _short().changed(row, verb)


def history(events: list[dict[str, Any]], title: str | None = None) -> None:
    _backend().history(events, title)


def item(detail: dict[str, Any]) -> None:
    """One item in full: plain lines on a terminal too (sanitised; nothing in it needs a table)."""
    from todoledger.cli import render_plain

    render_plain.item(detail)


def write_result(result: dict[str, Any]) -> None:
    _short().write_result(result)


def stranded(rows: list[dict[str, Any]]) -> None:
    _short().stranded(rows)
