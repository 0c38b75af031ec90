"""Lines for the schedule commands (`path`, `next --parallel`), shared by
the command modules without importing each other."""

from __future__ import annotations

from typing import Any


def label(row: dict[str, Any] | None, item_id: str) -> str:
    if row is None:
        return item_id
    extra = [row["status"]]
    if row.get("estimate"):
        extra.append(row["estimate"])
    if row.get("uses"):
        extra.append("uses " + ", ".join(row["uses"]))
    return f"{item_id}  {row['content']}  ({'; '.join(extra)})"


def parallel_lines(sched: dict[str, Any], rows: dict[str, dict[str, Any]], waiting: set[str]) -> list[str]:
    """`next --parallel`: the ready items in sets that share no resource."""
    sets = sched["parallel"]
    if not sets:
        return ["nothing is ready"]
    out = [f"held by items in progress: {', '.join(sched['held'])}"] if sched["held"] else []
    for n, members in enumerate(sets):
        title = "can start now, together" if n == 0 else f"then (set {n + 1})"
        out.append(f"{title}:" if members else f"{title}: nothing (what is ready waits for held resources)")
        for item_id in members:
            gate = "  [needs a person's approval]" if item_id in waiting else ""
            out.append(f"  {label(rows.get(item_id), item_id)}{gate}")
    return out
