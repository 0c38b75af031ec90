"""Plain-text output for pipes and scripts: one line per item, no colour.

Agent-written text is untrusted: every text goes through the one sanitiser,
so that a todo cannot move the cursor, clear or recolour a terminal, plant a
link or reorder what it is shown next to.
"""

from __future__ import annotations

import sys

from todoledger.core.sanitize import for_terminal as clean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from todoledger.core.view import ItemView, PlanView

# Cancelled (someone decided) and dropped (left out of a list) are both closed, never alike.
MARKS = {"pending": "○", "in_progress": "◐", "completed": "●", "cancelled": "✕", "dropped": "⊖"}


def _write(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


def summary(view: PlanView) -> str:
    return f"plan {clean(view.plan)} · revision {view.revision} · {view.summary() or 'empty'}"


def plan(view: PlanView, location: str | None = None, *, show_all: bool = False) -> None:
    """Open work first; completed and cancelled items folded into a count unless `show_all`."""
    from todoledger.core.view import fold

    lines = [summary(view)]
    if not view.items:
        lines.append("no items yet: `todoledger add TEXT`, `todoledger write FILE` or `todoledger demo`")
    drawn = fold(view, show_all=show_all)
    lines += map(_row, drawn.shown)
    if drawn.rest:
        lines.append(f"{folded_kinds(drawn.folded)} ({folded_counts(drawn.folded)}):")
        lines += map(_row, drawn.rest)
    elif drawn.folded:
        lines.append(folded_line(drawn.folded))
    if location:
        lines.append(f"ledger: {clean(location)}")
    _write(lines)


def _row(it: ItemView) -> str:
    flag = it.flag()
    shown = f" ({flag})" if flag in ("ready", "blocked") else ""
    waits = f"  waits for {clean(', '.join(it.depends_on))}" if it.depends_on else ""
    tags = "".join(f"  {clean(t)}" for t in it.tags())
    if it.status in ("cancelled", "dropped"):  # both closed, never alike: the word says which
        tags = f"  {closed_word(it)}" + tags
    return (
        f"{clean(it.id)}  {MARKS.get(it.status, '?')}  {it.priority:<6}  {'  ' * it.depth}"
        f"{clean(it.content)}{shown}{waits}{tags}"
    )


def closed_word(it: ItemView) -> str:
    """`cancelled` or `dropped`, with its reason (sanitised), unless the reason says it already."""
    why = clean(it.reason) if it.reason else ""
    return why if why.startswith(it.status) else f"{it.status}: {why}" if why else it.status


def folded_kinds(folded: dict[str, int]) -> str:
    """The heading over the folded items under --all; dropped is named only where there is one."""
    return "completed, cancelled and dropped" if "dropped" in folded else "completed and cancelled"


def folded_counts(folded: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in folded.items())


def folded_line(folded: dict[str, int]) -> str:
    """The line that stands for the items a view folded away."""
    return f"({folded_counts(folded)} not shown: todoledger show --all)"


def plans(rows: list[dict[str, Any]]) -> None:
    width = max([4, *(len(clean(r["plan"])) for r in rows)])
    lines = [f"{'plan':<{width}} {'items':>6} {'open':>6} {'revision':>8}  updated"]
    lines += [
        f"{clean(r['plan']):<{width}} {r['items']:>6} {r['open']:>6} {r['revision']:>8}  {clean(r['updated_at'])}"
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
        lines.append(f"{clean(it['id'])} [{it['priority']}] {clean(it['content'])}{claimed}")
    _write(lines)


def changed(row: dict[str, Any], verb: str | None = None) -> None:
    prefix = f"{verb} " if verb else ""
    _write(
        [
            f"{prefix}{clean(row['id'])} {MARKS.get(row['status'], '?')} {row['status']} {clean(row['content'])}"
        ]
    )


def event_line(ev: dict[str, Any]) -> str:
    """One event for a person, as `watch` prints it; agent text sanitised."""
    from todoledger.core.describe import describe_event

    where = f"{ev['plan']}/{ev['item'] or '-'}"
    return (
        f"{clean(ev['at'])} #{ev['seq']} {clean(where)} {clean(describe_event(ev))}  ({clean(ev['writer'])})"
    )


def history(events: list[dict[str, Any]], title: str | None = None) -> None:
    from todoledger.core.describe import describe_event, when

    lines = [clean(title)] if title else []
    if not events:
        lines.append("no history")
    for ev in events:
        lines.append(
            f"{clean(when(ev))} {clean(ev['item'] or '-')} {clean(describe_event(ev))}  ({clean(ev['writer'])})"
        )
    _write(lines)


def item(d: dict[str, Any]) -> None:
    """One item in full (`show ID`): what it is, what backs it, what it waits for, its story."""
    from todoledger.core.describe import describe_event, when

    it = d["item"]
    state = [
        s
        for s in (
            it.get("verification"),
            "blocked" if it.get("blocked") else "",
            "ready" if it.get("ready") else "",
        )
        if s
    ]
    lines = [
        f"{clean(it['id'])}  {MARKS.get(it['status'], '?')} {it['status']}  [{it['priority']}]  {clean(it['content'])}",
        f"plan {clean(d['plan'])}" + "".join(f" · {clean(s)}" for s in state),
        f"added by {clean(it['created_by'])}, last changed by {clean(it['updated_by'])}",
    ]
    for label in ("evidence", "reason", "notes"):
        if it.get(label):
            text = clean(it[label], newlines=True).splitlines()
            lines += [f"{label}: {text[0]}", *(f"  {ln}" for ln in text[1:])]

    def brief(rows: list[dict[str, Any]]) -> str:
        return "; ".join(
            f"{clean(r['id'])} {clean(r.get('content', '(gone)'))} ({r.get('status', '?')})" for r in rows
        )

    for label, key in (
        ("phase items", "children"),
        ("waits for", "waits_for"),
        ("waited on by", "waited_on_by"),
    ):
        if d[key]:
            lines.append(f"{label}: {brief(d[key])}")
    if d["checks"]:
        lines.append("checks:")
    for c in d["checks"]:
        last = c["last"]
        got = "never ran"
        if last is not None:
            tail = (last["output"] or "").strip().splitlines()
            got = last["result"] + (f": {tail[-1]}" if tail else "")
            if last.get("changed"):
                got += f" (stale: {last['changed']} changed since it ran)"
        lines.append(
            f"  {clean(c['id'])} {c['role']} {clean(c['spec'])} (by {clean(c['created_by'])}): {clean(got)}"
        )
    if d["metrics"]:
        lines.append(
            "metrics: "
            + "; ".join(
                f"{clean(m['name'])} {m['value']:g} (run {m['run']}, {m.get('provenance') or 'typed'})"
                for m in d["metrics"]
            )
        )
    lines.append("history:")
    lines += [
        f"  {clean(when(ev))}  {clean(describe_event(ev))}  ({clean(ev['writer'])})" for ev in d["history"]
    ]
    _write(lines)


def write_result(result: dict[str, Any]) -> None:
    _write(write_lines(result))


def write_lines(result: dict[str, Any]) -> list[str]:
    """A write's reply for a person: its warnings, what changed, then its notes."""
    lines = [f"warning: {clean(w['where'])}: {clean(w['message'])}" for w in result["warnings"]]
    counts: dict[str, int] = {}
    for ch in result["changes"]:
        counts[ch["kind"]] = counts.get(ch["kind"], 0) + 1
    done = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no change"
    lines.append(
        f"{result['dialect']} list → plan {clean(result['plan'])} (revision {result['revision']}): {done}"
    )
    lines += [f"note: {clean(n)}" for n in result.get("notices", [])]
    return lines


# What `next` says above items that wait for a closed one (reading.stranded).
STRANDED = (
    "waits for a cancelled or dropped item (list a dropped one again, or remove or re-point the dependency):"
)


def stranded(rows: list[dict[str, Any]]) -> None:
    lines = [STRANDED]
    lines += [
        f"{it['id']} {clean(it['content'])}  waits for {', '.join(it['waits_on_cancelled'])}" for it in rows
    ]
    _write(lines)
