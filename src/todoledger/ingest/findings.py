"""What went wrong in a plan, each finding with its evidence: the call (and
so the transcript line or message) where it shows."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Protocol

from todoledger.core.lint import looks_truncated
from todoledger.core.merge import is_rewording, normalise
from todoledger.core.model import OPEN_STATUSES
from todoledger.ingest.story import ItemStory, Story, parse_time

# "Far longer than the rest": this many times the median, and at least this long.
STUCK_FACTOR = 3.0
STUCK_MIN_SECONDS = 300.0
_RANK = {"pending": 0, "in_progress": 1, "completed": 2}

TITLES = {
    "completed-without-progress": "completed without ever being in progress",
    "stuck-in-progress": "in progress far longer than the rest",
    "parallel-in-progress": "several items in progress at once",
    "went-backwards": "went backwards",
    "dropped": "dropped without being completed",
    "left-open": "still open when the session ended",
    "duplicate": "duplicate content",
    "truncated": "truncated content",
    "unrelated-rewording": "text replaced by unrelated text",
    "conflict": "conflicting writes",
    "lint": "lint findings of the calls",
    "prerequisites-unmet": "started or completed while waiting for unmet prerequisites",
    "refused-call": "calls refused, which changed nothing",
    "clock-backwards": "clock went backwards",
}


# Warnings the ledger attaches to a write about one item (not lint of the payload).
ITEM_WARNINGS = frozenset({"prerequisites-unmet"})


class Add(Protocol):
    def __call__(
        self, code: str, message: str, op: int | None, items: list[str], at: str | None = None
    ) -> None: ...


@dataclass
class Finding:
    code: str
    message: str
    op: int | None
    at: str
    where: str
    items: list[str]

    def as_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "message": self.message,
            "op": self.op,
            "at": self.at,
            "where": self.where,
            "items": self.items,
        }


def short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def find(story: Story) -> list[Finding]:
    out: list[Finding] = []

    def add(code: str, message: str, op: int | None, items: list[str], at: str | None = None) -> None:
        call = story.call(op) if op is not None else None
        out.append(
            Finding(code, message, op, at or (call.at if call else ""), call.where if call else "", items)
        )

    items = list(story.items.values())
    for it in items:
        _item_findings(it, add)
    _stuck(items, add)
    _parallel(story, add)
    _content(story, add)
    _lint(story, add)
    _clock(story, add)
    for call in story.calls:
        if call.kind == "refused":
            add(
                "refused-call",
                f"{call.writer}'s {call.dialect or 'todo'} call: {call.summary or 'refused'}",
                call.op,
                [],
            )
    for e in story.events:
        if e["field"] == "conflict" and isinstance(e["new"], dict):
            d = e["new"]
            add(
                "conflict",
                f"{e['item']}: {d.get('field')} kept {d.get('kept')!r} over {d.get('rejected')!r}",
                e["op"],
                [e["item"]],
            )
    out.sort(key=lambda f: (f.at, f.op or 0, f.code))
    return out


def _item_findings(it: ItemStory, add: Add) -> None:
    label = f'"{short(it.content)}"'
    done = it.first("completed")
    if done is not None and not any(t.new == "in_progress" for t in it.transitions if t.op < done.op):
        how = f"went {done.old} → completed" if done.old else "was added already completed"
        add("completed-without-progress", f"{label} {how}", done.op, [it.id])
    for t in it.transitions:
        if t.old is None:
            continue
        backwards = (t.old == "cancelled" and t.new in OPEN_STATUSES) or (
            t.old in _RANK and t.new in _RANK and _RANK[t.new] < _RANK[t.old]
        )
        if backwards:
            add("went-backwards", f"{label} went {t.old} → {t.new}", t.op, [it.id])
    if it.dropped_op is not None:
        add("dropped", f"{label} was left out of the list while open", it.dropped_op, [it.id])
    if it.status in OPEN_STATUSES and not it.removed:
        span = it.spans[-1]
        add("left-open", f"{label} was still {it.status} at the last call", span.op, [it.id])
    for old, new, op in it.rewordings:
        if not is_rewording(old, new):
            add(
                "unrelated-rewording",
                f'"{short(old)}" became "{short(new)}": the same item id reused',
                op,
                [it.id],
            )


def _lint(story: Story, add: Add) -> None:
    """Each call's lint warnings; one repeated in later calls is told once, with its count."""
    first: dict[tuple[str, str], list[str]] = {}
    ops: dict[tuple[str, str], int] = {}
    for call in story.calls:
        for w in call.warnings:
            if w.get("code") in ITEM_WARNINGS:  # a finding of its own, about one item
                add(
                    str(w["code"]),
                    f"{call.where or f'op {call.op}'}: {w.get('message', '')}",
                    call.op,
                    [str(w["item"])] if w.get("item") else [],
                )
                continue
            key = (w.get("where", "$"), w.get("message", ""))
            if key not in first:
                first[key], ops[key] = [], call.op
            first[key].append(call.where or f"op {call.op}")
    for (where, message), places in first.items():
        again = f" (in {len(places)} calls: {', '.join(places[:8])})" if len(places) > 1 else ""
        add("lint", f"{where}: {message}{again}", ops[(where, message)], [])


def _clock(story: Story, add: Add) -> None:
    """A call stamped earlier than the call before it: the transcript's clock
    jumped (or calls were taken in the wrong order), so durations around it lie."""
    prev = None
    for call in story.calls:
        if call.kind != "write" or not call.at:
            continue
        if prev is not None and parse_time(call.at) < parse_time(prev.at):
            back = (parse_time(prev.at) - parse_time(call.at)).total_seconds()
            add(
                "clock-backwards",
                f"call at {call.at} is {duration(back)} earlier than the call before it ({prev.at})",
                call.op,
                [],
            )
        prev = call


def _stuck(items: list[ItemStory], add: Add) -> None:
    spent = {it.id: it.time_in().get("in_progress", 0.0) for it in items}
    worked = [s for s in spent.values() if s > 0]
    if len(worked) < 3:
        return
    median = statistics.median(worked)
    limit = max(STUCK_FACTOR * median, STUCK_MIN_SECONDS)
    for it in items:
        if spent[it.id] > limit:
            span = next(s for s in it.spans if s.status == "in_progress")
            add(
                "stuck-in-progress",
                f'"{short(it.content)}" in progress {duration(spent[it.id])}; median {duration(median)}',
                span.op,
                [it.id],
            )


def _parallel(story: Story, add: Add) -> None:
    """One finding per stretch of calls with two or more items in progress."""
    run_start: int | None = None
    for op, doing in story.doing_after:
        if len(doing) > 1 and run_start is None:
            run_start = op
            ordered = [i for i in story.items if i in doing]  # in the order the items came
            names = ", ".join(f'"{short(story.items[i].content, 40)}"' for i in ordered)
            add("parallel-in-progress", f"{len(doing)} items in progress: {names}", op, list(doing))
        elif len(doing) <= 1:
            run_start = None


def _content(story: Story, add: Add) -> None:
    """Texts that look cut off, and the same text on two items."""
    by_text: dict[str, list[ItemStory]] = {}
    for it in story.items.values():
        first = it.rewordings[0][0] if it.rewordings else it.content
        versions = [(first, it.added_op), *((new, op) for _, new, op in it.rewordings)]
        for text, op in versions:
            why = looks_truncated(text)
            if why:
                add("truncated", f'"{short(text)}" {why}', op, [it.id])
        by_text.setdefault(normalise(it.content), []).append(it)
    for group in by_text.values():
        if len(group) > 1:
            ids = [g.id for g in group]
            add(
                "duplicate", f'"{short(group[0].content)}" appears {len(group)} times', group[1].added_op, ids
            )
