"""Human output with rich, for a terminal: the short outputs (a plan itself is
drawn by `render_term`, whose cost is per row: bench/bench_show.py).

Agent-written text is printed through `Text` objects, never as console
markup, so a todo containing "[red]" shows literally, and every text goes
through the one sanitiser first: no escape code reaches the terminal.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from todoledger.core.describe import describe_event, when
from todoledger.core.sanitize import for_terminal as clean

console = Console(highlight=False, soft_wrap=False)

STATUS_STYLE = {
    "pending": ("○", "white"),
    "in_progress": ("◐", "bold yellow"),
    "completed": ("●", "green"),
    "cancelled": ("✕", "dim"),
    "dropped": ("⊖", "dim"),
}
PRIORITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}


def _safe(text: object) -> Text:
    return Text(clean(text))


def plans(rows: list[dict[str, Any]]) -> None:
    table = Table(title="plans", title_justify="left")
    for col in ("plan", "items", "open", "revision", "updated"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            _safe(r["plan"]), str(r["items"]), str(r["open"]), str(r["revision"]), _safe(r["updated_at"])
        )
    console.print(table)


def items(rows: list[dict[str, Any]], *, title: str, empty: str) -> None:
    if not rows:
        console.print(Text(empty))
        return
    for it in rows:
        line = Text(f"{clean(it['id'])} ", style="cyan") + Text(f"[{it['priority']}] ") + _safe(it["content"])
        if it.get("claimed"):
            line.append(f"  ({title} by {clean(it['updated_by'])})", style="yellow")
        console.print(line)


def changed(row: dict[str, Any], verb: str | None = None) -> None:
    mark, style = STATUS_STYLE.get(row["status"], ("?", "white"))
    line = Text(f"{verb + ' ' if verb else ''}{clean(row['id'])} ", style="cyan") + Text(
        f"{mark} {row['status']} ", style=style
    )
    console.print(line + _safe(row["content"]))


def history(events: list[dict[str, Any]], title: str | None = None) -> None:
    if title:
        console.print(Text(clean(title), style="bold"))
    if not events:
        console.print(Text("no history"))
        return
    for ev in events:
        line = Text(f"{clean(when(ev))} ", style="dim") + Text(f"{clean(ev['item'] or '-')} ", style="cyan")
        line += describe(ev) + Text(f"  ({clean(ev['writer'])})", style="dim")
        console.print(line)


def describe(ev: dict[str, Any]) -> Text:
    text = _safe(describe_event(ev))
    if ev["field"] == "conflict":
        text.stylize("bold magenta")
    elif ev["field"] == "status":
        text.stylize(STATUS_STYLE.get(str(ev["new"]), ("", ""))[1])
    return text


def write_result(result: dict[str, Any]) -> None:
    for w in result["warnings"]:
        console.print(Text(f"warning: {clean(w['where'])}: {clean(w['message'])}", style="yellow"))
    counts: dict[str, int] = {}
    for ch in result["changes"]:
        counts[ch["kind"]] = counts.get(ch["kind"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no change"
    console.print(
        Text(
            f"{result['dialect']} list → plan {clean(result['plan'])} (revision {result['revision']}): {summary}"
        )
    )
    for notice in result.get("notices", []):
        console.print(Text("note: ", style="bold yellow") + _safe(notice))


def stranded(rows: list[dict[str, Any]]) -> None:
    console.print(
        Text(
            "waits for a cancelled or dropped item (list a dropped one again, or remove or re-point"
            " the dependency):",
            style="bold magenta",
        )
    )
    for it in rows:
        line = Text(f"{it['id']} ", style="cyan") + _safe(it["content"])
        console.print(line + Text(f"  waits for {', '.join(it['waits_on_cancelled'])}", style="magenta"))
