"""When each item was in each status: spans from a plan's events. Pure."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any


def spans(events: Iterable[Mapping[str, Any]], until: str) -> list[dict[str, Any]]:
    """[{item, status, start, end}] in order of start; the last span of an item
    that still exists runs `until` (now); a removed item's spans end at its removal."""
    current: dict[str, tuple[str, str]] = {}  # item -> (status, since)
    out: list[dict[str, Any]] = []

    def close(item: str, at: str) -> None:
        status, since = current.pop(item)
        out.append({"item": item, "status": status, "start": since, "end": at})

    for ev in events:
        item = ev.get("item")
        if item is None:
            continue
        field = ev["field"]
        if field == "created":
            if item in current:
                close(item, ev["at"])
            current[item] = ((ev.get("new") or {}).get("status") or "pending", ev["at"])
        elif field == "removed":
            if item in current:
                close(item, ev["at"])
        elif field == "status" and item in current and current[item][0] != ev["new"]:
            close(item, ev["at"])
            current[item] = (ev["new"], ev["at"])
    for item in list(current):
        close(item, until)
    return sorted(out, key=lambda s: (s["start"], s["item"]))


def by_sequence(events: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Spans of a plan whose changes have no time of their own (store migration
    `untimed_ops`), placed by sequence instead: each op is one step (`start`, `end`: step
    numbers), and the ticks name each step by its place (`msg 4350 (seed 000)`)."""
    steps, ticks = _steps(events)
    out = spans(steps, f"{len(ticks):09d}")
    for sp in out:
        sp["start"], sp["end"] = int(sp["start"]), int(sp["end"])
    return out, ticks


def _steps(events: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The events with `at` replaced by their step, zero-padded (`spans` orders by it). A step
    is a run of ops from one place (a call, or the reviewer's changes after it): the x axis
    then has a tick per call, readable, not one per op."""
    ticks: list[str] = []
    out = []
    last_op = None
    for ev in events:
        op = int(ev["op"])
        place = str(ev.get("where") or (ev["at"] if not ev.get("untimed") else f"op {op}"))
        if op != last_op and (not ticks or ticks[-1] != place):
            ticks.append(place)
        last_op = op
        out.append({**ev, "at": f"{len(ticks) - 1:09d}"})
    return out, ticks
