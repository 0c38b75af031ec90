"""A plan's story from its events: per-item timelines and phases.

Pure: takes `Ledger.history(plan)` events and `Ledger.ops(plan)` rows.

Its records have `__slots__`: a report of a 100,000-item plan holds one
`ItemStory`, `Span` and `Transition` or more per item, and each instance's
`__dict__` made the report's memory, and so its cost per item, grow with the
plan (bench/bench_report.py).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from todoledger.core.model import CREATED, OPEN_STATUSES, REMOVED

# What the story (`build`) and the claims (`ingest/claims.py`) read of a "created" event's
# value: the rest of the item it made is not kept (`Ledger.history(created=...)`).
CREATED_FIELDS = ("status", "content")


def seconds_between(a: str, b: str) -> float:
    return max(0.0, (parse_time(b) - parse_time(a)).total_seconds())


_TIMES: dict[str, datetime] = {}


def parse_time(stamp: str) -> datetime:
    # Thousands of events share a few hundred stamps: parse each once.
    got = _TIMES.get(stamp)
    if got is None:
        if len(_TIMES) > 100_000:
            _TIMES.clear()
        got = _TIMES[stamp] = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return got


@dataclass(slots=True)
class Span:
    status: str
    start: str
    end: str
    op: int  # the call that set the status

    @property
    def seconds(self) -> float:
        return seconds_between(self.start, self.end)


@dataclass(slots=True)
class Transition:
    at: str
    old: str | None
    new: str
    op: int
    writer: str = ""


@dataclass(slots=True)
class ItemStory:
    id: str
    content: str
    added_at: str
    added_op: int
    writer: str
    spans: list[Span] = field(default_factory=list)
    transitions: list[Transition] = field(default_factory=list)
    rewordings: list[tuple[str, str, int]] = field(default_factory=list)  # old, new, op
    dropped_op: int | None = None
    removed: bool = False
    reason: str | None = None

    @property
    def status(self) -> str:
        return self.spans[-1].status if self.spans else "pending"

    def time_in(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.spans:
            out[s.status] = out.get(s.status, 0.0) + s.seconds
        return out

    def first(self, status: str) -> Transition | None:
        return next((t for t in self.transitions if t.new == status), None)

    def last(self, status: str) -> Transition | None:
        return next((t for t in reversed(self.transitions) if t.new == status), None)


@dataclass(slots=True)
class Call:
    op: int
    at: str
    writer: str
    kind: str
    dialect: str | None
    summary: str | None
    warnings: list[dict[str, str]]
    where: str
    untimed: bool = False  # its `at` is when it was recorded, not the call's time (store m009)
    msg: int | None = None  # the message number its source gives
    counted: int | None = None  # a counter event of refusals past the day's cap: how many (core/refusals.py)
    counted_from: str | None = None  # and whose

    @property
    def place(self) -> str:
        """Where the call sits, for people: its place in the source, else its op."""
        return self.where or f"op {self.op}"

    @property
    def is_list(self) -> bool:
        """A todo call (applied or refused), not another writer's single change. A refused
        todo call carries its dialect; a live refused write (`done`, `plan_update`) does not."""
        return self.kind == "write" or (self.kind == "refused" and self.dialect is not None)


@dataclass(slots=True)
class Phase:
    index: int
    start: str
    end: str
    items: list[str]
    first_op: int

    @property
    def seconds(self) -> float:
        return seconds_between(self.start, self.end)


@dataclass
class Story:
    plan: str
    calls: list[Call]
    items: dict[str, ItemStory]
    phases: list[Phase]
    start: str
    end: str
    # per op: the items in progress right after it, each with the writer who started it
    # (only ops where it changed)
    doing_after: list[tuple[int, dict[str, str]]]
    events: list[dict[str, Any]]

    def call(self, op: int) -> Call | None:
        return self._calls.get(op)

    def __post_init__(self) -> None:
        # Asked once per item (the report, the findings): worked out once here, not by a pass
        # over every call each time, which made a report quadratic in the plan (bench_report.py).
        self._calls = {c.op: c for c in self.calls}
        self._untimed = any(c.untimed for c in self.calls)
        list_ops = [c.op for c in self.calls if c.is_list]
        self._last_list_op = list_ops[-1] if list_ops else None
        self._lists_by: dict[str, list[Call]] = {}  # each writer's lists, in order of op
        for c in sorted((c for c in self.calls if c.is_list), key=lambda c: c.op):
            self._lists_by.setdefault(c.writer, []).append(c)

    @property
    def untimed(self) -> bool:
        """Some calls have no time of their own (the demo's seeds give message numbers):
        the story is told by sequence, with no durations."""
        return self._untimed

    def place(self, op: int | None) -> str:
        call = self.call(op) if op is not None else None
        return call.place if call is not None else (f"op {op}" if op is not None else "")

    def list_calls(self) -> list[Call]:
        return [c for c in self.calls if c.is_list]

    def unseen_before(self, op: int) -> tuple[Call | None, list[Call]] | None:
        """When the call at `op` is a list whose source numbers its messages and the
        writer's list before it is several messages earlier (or there is none, and
        the source starts later than its first message): (that list or None, the
        calls refused between). Then the lists between were not seen, and what one
        list leaves out of the other may have been finished there."""
        call = self.call(op)
        if call is None or call.msg is None or not call.is_list:
            return None
        lists = self._lists_by.get(call.writer, [])
        before = lists[: bisect_left(lists, op, key=lambda c: c.op)]
        applied = [c for c in before if c.kind == "write"]
        if not applied:
            return (None, before) if call.msg > 1 else None
        if applied[-1].msg is None or call.msg - applied[-1].msg <= 1:
            return None
        prev = applied[-1]
        return prev, [c for c in before if c.kind == "refused" and c.op > prev.op]

    def last_list_op(self) -> int | None:
        return self._last_list_op


def build(plan: str, events: list[dict[str, Any]], ops: list[dict[str, Any]]) -> Story:
    calls = [
        Call(
            op=o["op"],
            at=o["at"],
            writer=o["writer"],
            kind=o["kind"],
            dialect=o.get("dialect"),
            summary=o.get("summary"),
            warnings=list(o.get("warnings") or []),
            where=o.get("source_at") or "",
            untimed=bool(o.get("untimed")),
            msg=o.get("source_msg"),
            counted=o.get("counted"),
            counted_from=o.get("counted_from"),
        )
        for o in ops
    ]
    times = [c.at for c in calls] + [e["at"] for e in events]
    start, end = (min(times), max(times)) if times else ("", "")
    items: dict[str, ItemStory] = {}
    doing: dict[str, str] = {}  # item in progress -> the writer who started it
    doing_after: list[tuple[int, dict[str, str]]] = []
    phases: list[Phase] = []
    open_ids: set[str] = set()
    current_op: int | None = None
    opened_in_op: list[str] = []
    # The last phase's items as a set too: a membership test on its list grew with the plan (quadratic).
    in_last_phase: set[str] = set()
    was_open_before = False

    def close_op() -> None:
        nonlocal opened_in_op
        if current_op is None:
            return
        # A phase starts when items arrive while nothing is open: a fresh list.
        if opened_in_op and (not was_open_before or not phases):
            at = next(e["at"] for e in events_by_op[current_op])
            phases.append(Phase(len(phases) + 1, at, end, list(opened_in_op), current_op))
            in_last_phase.clear()
            in_last_phase.update(opened_in_op)
        elif opened_in_op and phases:
            for item in opened_in_op:
                if item not in in_last_phase:
                    in_last_phase.add(item)
                    phases[-1].items.append(item)
        opened_in_op = []
        if phases and not open_ids and phases[-1].end == end:
            phases[-1].end = last_at
        if not doing_after or doing != doing_after[-1][1]:
            doing_after.append((current_op, dict(sorted(doing.items()))))

    events_by_op: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        events_by_op.setdefault(e["op"], []).append(e)
    last_at = start
    for e in events:
        if e["op"] != current_op:
            close_op()
            current_op = e["op"]
            was_open_before = bool(open_ids)
        last_at = e["at"]
        item_id, name = e["item"], e["field"]
        if item_id is None:
            continue
        story = items.get(item_id)
        if name == CREATED:
            fields = e["new"] or {}
            status = fields.get("status", "pending")
            story = items[item_id] = ItemStory(
                item_id, fields.get("content", ""), e["at"], e["op"], e["writer"]
            )
            story.spans.append(Span(status, e["at"], end, e["op"]))
            story.transitions.append(Transition(e["at"], None, status, e["op"], e["writer"]))
            opened_in_op.append(item_id)
            _track(item_id, None, status, open_ids, doing, e["writer"])
            continue
        if story is None:
            continue
        if name == "status":
            old, new = e["old"], e["new"]
            story.spans[-1].end = e["at"]
            story.spans.append(Span(new, e["at"], end, e["op"]))
            story.transitions.append(Transition(e["at"], old, new, e["op"], e["writer"]))
            if new in OPEN_STATUSES and old not in OPEN_STATUSES:
                opened_in_op.append(item_id)  # reopened: back into the work
            _track(item_id, old, new, open_ids, doing, e["writer"])
        elif name == "content":
            story.rewordings.append((e["old"], e["new"], e["op"]))
            story.content = e["new"]
        elif name == "reason":
            story.reason = e["new"]
        elif name == "dropped":
            last = story.transitions[-1]
            # Open when dropped (a cancel before ledgers knew `dropped`); finished work is kept.
            if last.op == e["op"] and last.new in ("dropped", "cancelled"):
                story.dropped_op = e["op"]
        elif name == REMOVED:
            story.removed = True
            story.spans[-1].end = e["at"]
            _track(item_id, story.status, "removed", open_ids, doing, e["writer"])
    close_op()
    return Story(plan, calls, items, phases, start, end, doing_after, events)


def _track(
    item: str, old: str | None, new: str, open_ids: set[str], doing: dict[str, str], writer: str
) -> None:
    if new in OPEN_STATUSES:
        open_ids.add(item)
    else:
        open_ids.discard(item)
    if new == "in_progress":
        doing[item] = writer
    else:
        doing.pop(item, None)
