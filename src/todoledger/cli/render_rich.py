"""Human output with rich, for a terminal.

Agent-written text is printed through `Text` objects, never as console
markup, so a todo containing "[red]" or escape codes shows literally.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from todoledger.core.describe import describe_event

console = Console(highlight=False, soft_wrap=False)

STATUS_STYLE = {
    "pending": ("○", "white"),
    "in_progress": ("◐", "bold yellow"),
    "completed": ("●", "green"),
    "cancelled": ("✕", "dim"),
}
PRIORITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}


def _safe(text: str | None) -> Text:
    cleaned = "".join(ch if ch.isprintable() or ch == " " else "\ufffd" for ch in (text or ""))
    return Text(cleaned)


def _depth(item: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> int:
    depth, parent = 0, item.get("parent")
    while parent in by_id and depth < 8:
        depth, parent = depth + 1, by_id[parent].get("parent")
    return depth


def plan(view: dict[str, Any], location: str | None = None) -> None:
    items = view["items"]
    counts: dict[str, int] = {}
    for it in items:
        counts[it["status"]] = counts.get(it["status"], 0) + 1
    title = Text(f"plan {view['plan']} · revision {view['revision']} · ")
    title.append(", ".join(f"{n} {s}" for s, n in counts.items()) or "empty")
    if not items:
        console.print(title)
        console.print(
            Text("no items yet: `todoledger add TEXT`, `todoledger write FILE` or `todoledger demo`")
        )
        return
    table = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("item")
    table.add_column("pri", no_wrap=True)
    table.add_column("waits for", no_wrap=True)
    by_id = {it["id"]: it for it in items}
    for it in items:
        mark, style = STATUS_STYLE.get(it["status"], ("?", "white"))
        content = Text("  " * _depth(it, by_id)) + _safe(it["content"])
        if it["status"] in ("completed", "cancelled"):
            content.stylize("dim")
        if it.get("ready"):
            content.append(" ready", style="bold cyan")
        elif it.get("blocked") and it["status"] == "pending":
            content.append(" blocked", style="magenta")
        if it.get("waits_on_cancelled"):
            content.append(" waits for a cancelled item", style="bold magenta")
        if it.get("evidence"):
            content.append(Text(f"\n  evidence: {it['evidence']}", style="dim green"))
        if it.get("reason") and it["status"] == "cancelled":
            content.append(Text(f"\n  reason: {it['reason']}", style="dim"))
        table.add_row(
            it["id"],
            Text(mark, style=style),
            content,
            Text(it["priority"], style=PRIORITY_STYLE.get(it["priority"], "")),
            Text(", ".join(it.get("depends_on") or [])),
        )
    console.print(table)
    if location:
        console.print(Text(f"ledger: {location}", style="dim"))


def plans(rows: list[dict[str, Any]]) -> None:
    table = Table(title="plans", title_justify="left")
    for col in ("plan", "items", "open", "revision", "updated"):
        table.add_column(col)
    for r in rows:
        table.add_row(_safe(r["plan"]), str(r["items"]), str(r["open"]), str(r["revision"]), r["updated_at"])
    console.print(table)


def items(rows: list[dict[str, Any]], *, title: str, empty: str) -> None:
    if not rows:
        console.print(Text(empty))
        return
    for it in rows:
        line = Text(f"{it['id']} ", style="cyan") + Text(f"[{it['priority']}] ") + _safe(it["content"])
        if it.get("claimed"):
            line.append(f"  ({title} by {it['updated_by']})", style="yellow")
        console.print(line)


def changed(row: dict[str, Any], verb: str | None = None) -> None:
    mark, style = STATUS_STYLE.get(row["status"], ("?", "white"))
    line = Text(f"{verb + ' ' if verb else ''}{row['id']} ", style="cyan") + Text(
        f"{mark} {row['status']} ", style=style
    )
    console.print(line + _safe(row["content"]))


def history(events: list[dict[str, Any]], title: str | None = None) -> None:
    if title:
        console.print(Text(title, style="bold"))
    if not events:
        console.print(Text("no history"))
        return
    for ev in events:
        line = Text(f"{ev['at']} ", style="dim") + Text(f"{ev['item'] or '-'} ", style="cyan")
        line += describe(ev) + Text(f"  ({ev['writer']})", style="dim")
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
        console.print(Text(f"warning: {w['where']}: {w['message']}", style="yellow"))
    counts: dict[str, int] = {}
    for ch in result["changes"]:
        counts[ch["kind"]] = counts.get(ch["kind"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no change"
    console.print(
        Text(f"{result['dialect']} list → plan {result['plan']} (revision {result['revision']}): {summary}")
    )
    for notice in result.get("notices", []):
        console.print(Text("note: ", style="bold yellow") + _safe(notice))


def stranded(rows: list[dict[str, Any]]) -> None:
    console.print(
        Text("waits for a cancelled item (remove or re-point the dependency):", style="bold magenta")
    )
    for it in rows:
        line = Text(f"{it['id']} ", style="cyan") + _safe(it["content"])
        console.print(line + Text(f"  waits for {', '.join(it['waits_on_cancelled'])}", style="magenta"))
