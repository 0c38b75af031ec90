"""What went wrong in a plan, each finding with its evidence: the call (and
so the transcript line or message) where it shows."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

from todoledger.core.approval import is_person
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
    "completed-unseen": "completed, with the lists before it not seen",
    "stuck-in-progress": "in progress far longer than the rest",
    "parallel-in-progress": "several items in progress at once",
    "went-backwards": "went backwards",
    "dropped": "dropped without being completed",
    "left-out-unseen": "left out of a later list, the lists between not seen",
    "left-open": "still open at the last todo call",
    "duplicate": "duplicate content",
    "truncated": "truncated content",
    "unrelated-rewording": "text replaced by unrelated text",
    "conflict": "conflicting writes",
    "lint": "lint findings of the calls",
    "prerequisites-unmet": "started or completed while waiting for unmet prerequisites",
    "refused-call": "calls refused, which changed nothing",
    "held-cancel": "cancelled a person's gated item",
    "clock-backwards": "clock went backwards",
}


# The kinds of op in which todoledger itself completes an item: a check that held
# (an assumption, `verify`) and a sweep (its parent, once every combination is measured).
CHECK_COMPLETIONS = frozenset({"verify", "sweep"})

# Warnings the ledger attaches to a write about one item (not lint of the payload).
ITEM_WARNINGS = frozenset({"prerequisites-unmet"})


class Add(Protocol):
    def __call__(
        self, code: str, message: str, op: int | None, items: list[str], at: str | None = None
    ) -> None: ...


@dataclass(slots=True)
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
    # Completions todoledger made itself: an assumption whose check held (`verify`),
    # a sweep's parent once its combinations were measured. Nobody claimed them.
    by_todoledger = {c.op for c in story.calls if c.kind in CHECK_COMPLETIONS}
    for it in items:
        _item_findings(story, it, add, by_todoledger)
    if not story.untimed:  # without the calls' own times there is no duration to compare
        _stuck(items, add)
    _parallel(story, add)
    _content(story, add)
    _lint(story, add)
    _clock(story, add)
    for call in story.calls:
        if call.kind == "refused":
            add(
                "refused-call",
                f"{call.writer}'s {call.dialect} call: {call.summary or 'refused'}"
                if call.dialect
                else f"{call.writer}, refused: {call.summary or 'no reason recorded'}",
                call.op,
                [],
            )
    for e in story.events:
        if e["field"] == "held_cancel" and isinstance(e["new"], dict):
            d = e["new"]
            add(
                "held-cancel",
                f"{e['writer']} cancelled {e['item']} (held by {d.get('held')}): {d.get('reason')}",
                e["op"],
                [e["item"]],
            )
        if e["field"] == "conflict" and isinstance(e["new"], dict):
            d = e["new"]
            add(
                "conflict",
                f"{e['item']}: {d.get('field')} kept {d.get('kept')!r} over {d.get('rejected')!r}",
                e["op"],
                [e["item"]],
            )
    out.sort(key=order(story))
    return out


def order(story: Story) -> Callable[[Finding], tuple[str, int, str]]:
    """Findings in the order of the story: by time, or by sequence where times are not recorded."""
    if story.untimed:
        return lambda f: ("", f.op or 0, f.code)
    return lambda f: (f.at, f.op or 0, f.code)


def unseen(story: Story, op: int) -> str:
    """ "; no list between msg A and msg B was seen" where the source skips the lists between, else ""."""
    gap = story.unseen_before(op)
    if gap is None:
        return ""
    prev, refused = gap
    also = f" ({', '.join(r.place for r in refused)} was refused)" if refused else ""
    if prev is None:
        return f"; no list before {story.place(op)} was seen{also}"
    return f"; no list between {prev.place} and {story.place(op)} was seen{also}"


def _item_findings(
    story: Story, it: ItemStory, add: Add, by_todoledger: AbstractSet[int] = frozenset()
) -> None:
    label = f'"{short(it.content)}"'
    done = it.first("completed")
    skipped = (
        done is not None
        and done.op not in by_todoledger
        and not any(t.new == "in_progress" for t in it.transitions if t.op < done.op)
    )
    # A person who records work done (a reviewer, `todoledger done`) is not keeping a list: only
    # agents' completions are held to going through in_progress.
    if skipped and done is not None and not is_person(done.writer):
        how = f"went {done.old} → completed" if done.old else "was added already completed"
        before = unseen(story, done.op)  # the lists before were not seen: it may have been in progress there
        add(
            "completed-unseen" if before else "completed-without-progress",
            f"{label} {how}{before}",
            done.op,
            [it.id],
        )
    for t in it.transitions:
        if t.old is None:
            continue
        backwards = (t.old == "cancelled" and t.new in OPEN_STATUSES) or (
            t.old in _RANK and t.new in _RANK and _RANK[t.new] < _RANK[t.old]
        )
        if backwards:
            add("went-backwards", f"{label} went {t.old} → {t.new}", t.op, [it.id])
    if it.dropped_op is not None:
        gap = story.unseen_before(it.dropped_op)
        if gap is None:
            add(
                "dropped",
                f"{label} was left out of the list while open",
                it.dropped_op,
                [it.id],
            )
        else:
            # The lists between were not seen: it may have been finished there. Say what is known.
            was = next((t.new for t in reversed(it.transitions) if gap[0] and t.op <= gap[0].op), None)
            held = f" ({was.replace('_', ' ')} at {gap[0].place})" if was and gap[0] is not None else ""
            add(
                "left-out-unseen",
                f"{label}{held} is not in the list of {story.place(it.dropped_op)} and was closed as left out"
                f"{unseen(story, it.dropped_op)}, so whether it was done is not known",
                it.dropped_op,
                [it.id],
            )
    last = story.last_list_op()
    # Items added after the last todo call (a reviewer's, afterwards) were not open when the session ended.
    if it.status in OPEN_STATUSES and not it.removed and last is not None and it.added_op <= last:
        span = it.spans[-1]
        add(
            "left-open",
            f"{label} was still {it.status} at the last call"
            + (f" ({story.place(last)})" if story.untimed else ""),
            span.op,
            [it.id],
        )
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
        if call.kind != "write" or not call.at or call.untimed:
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
    """One finding per stretch of calls with two or more items in progress that one
    writer started (two agents each doing one item is parallel work, not a slip)."""
    run_start: int | None = None
    for op, doing in story.doing_after:
        by_writer: dict[str, list[str]] = {}
        for item, writer in doing.items():
            by_writer.setdefault(writer, []).append(item)
        most = max(by_writer.values(), key=len, default=[])
        if len(most) > 1 and run_start is None:
            run_start = op
            ordered = [i for i in story.items if i in most]  # in the order the items came
            names = ", ".join(f'"{short(story.items[i].content, 40)}"' for i in ordered)
            add("parallel-in-progress", f"{len(most)} items in progress: {names}", op, ordered)
        elif len(most) <= 1:
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
