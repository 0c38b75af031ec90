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
