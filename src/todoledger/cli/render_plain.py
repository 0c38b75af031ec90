"""Plain-text output for pipes and scripts: one line per item, no colour.

Agent-written text is untrusted: control characters are replaced so that a
todo cannot move the cursor or recolour a terminal it is later shown on.
"""

from __future__ import annotations

import sys
from typing import Any

from todoledger.core.describe import describe_event

MARKS = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "✕"}


def clean(text: str | None) -> str:
    return "".join(ch if ch.isprintable() or ch == " " else "\ufffd" for ch in (text or ""))


def _write(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


def _depth(item: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> int:
    depth, parent = 0, item.get("parent")
    while parent in by_id and depth < 8:
        depth, parent = depth + 1, by_id[parent].get("parent")
    return depth


def summary(view: dict[str, Any]) -> str:
    counts: dict[str, int] = {}
    for it in view["items"]:
        counts[it["status"]] = counts.get(it["status"], 0) + 1
    text = ", ".join(f"{n} {s}" for s, n in counts.items()) or "empty"
    return f"plan {clean(view['plan'])} · revision {view['revision']} · {text}"


def plan(view: dict[str, Any], location: str | None = None) -> None:
    items = view["items"]
    lines = [summary(view)]
    if not items:
        lines.append("no items yet: `todoledger add TEXT`, `todoledger write FILE` or `todoledger demo`")
    by_id = {it["id"]: it for it in items}
    for it in items:
        flag = (
            " (ready)"
            if it.get("ready")
            else (" (blocked)" if it.get("blocked") and it["status"] == "pending" else "")
        )
        waits = f"  waits for {', '.join(it['depends_on'])}" if it.get("depends_on") else ""
        if it.get("waits_on_cancelled"):
            waits += f" (waits for a cancelled item: {', '.join(it['waits_on_cancelled'])})"
        indent = "  " * _depth(it, by_id)
        lines.append(
            f"{it['id']}  {MARKS.get(it['status'], '?')}  {it['priority']:<6}  {indent}{clean(it['content'])}{flag}{waits}"
        )
    if location:
        lines.append(f"ledger: {location}")
    _write(lines)


def plans(rows: list[dict[str, Any]]) -> None:
    width = max([4, *(len(clean(r["plan"])) for r in rows)])
    lines = [f"{'plan':<{width}} {'items':>6} {'open':>6} {'revision':>8}  updated"]
    lines += [
        f"{clean(r['plan']):<{width}} {r['items']:>6} {r['open']:>6} {r['revision']:>8}  {r['updated_at']}"
        for r in rows
    ]
    _write(lines)


def items(rows: list[dict[str, Any]], *, title: str, empty: str) -> None:
    if not rows:
        _write([empty])
        return
    lines = []
    for it in rows:
        claimed = f"  ({title} by {clean(it['updated_by'])})" if it.get("claimed") else ""
        lines.append(f"{it['id']} [{it['priority']}] {clean(it['content'])}{claimed}")
    _write(lines)


def changed(row: dict[str, Any], verb: str | None = None) -> None:
    prefix = f"{verb} " if verb else ""
    _write([f"{prefix}{row['id']} {MARKS.get(row['status'], '?')} {row['status']} {clean(row['content'])}"])


def history(events: list[dict[str, Any]], title: str | None = None) -> None:
    lines = [title] if title else []
    if not events:
        lines.append("no history")
    for ev in events:
        lines.append(f"{ev['at']} {ev['item'] or '-'} {clean(describe_event(ev))}  ({clean(ev['writer'])})")
    _write(lines)


def write_result(result: dict[str, Any]) -> None:
    lines = [f"warning: {w['where']}: {clean(w['message'])}" for w in result["warnings"]]
    counts: dict[str, int] = {}
    for ch in result["changes"]:
        counts[ch["kind"]] = counts.get(ch["kind"], 0) + 1
    done = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no change"
    lines.append(
        f"{result['dialect']} list → plan {clean(result['plan'])} (revision {result['revision']}): {done}"
    )
    lines += [f"note: {clean(n)}" for n in result.get("notices", [])]
    _write(lines)


def stranded(rows: list[dict[str, Any]]) -> None:
    lines = ["waits for a cancelled item (remove or re-point the dependency):"]
    lines += [
        f"{it['id']} {clean(it['content'])}  waits for {', '.join(it['waits_on_cancelled'])}" for it in rows
    ]
    _write(lines)
