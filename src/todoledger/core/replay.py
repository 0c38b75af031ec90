"""Rebuild a plan's items from its events alone.

The store keeps current state for speed; this is the definition of what that
state must be. `todoledger check` and the crash tests compare the two.
"""

from __future__ import annotations

from collections.abc import Iterable

from todoledger.core.model import CREATED, REMOVED, STATE_FIELDS, Event, Item

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def replay(events: Iterable[Event]) -> dict[str, Item]:
    items: dict[str, Item] = {}
    for ev in events:
        if ev.item is None:
            continue
        if ev.field == CREATED:
            fields: dict[str, Any] = dict(ev.new)
            items[ev.item] = Item(
                id=ev.item,
                plan=ev.plan,
                content=fields.get("content", ""),
                created_by=ev.writer,
                created_at=ev.at,
            )
            target = items[ev.item]
            for name in STATE_FIELDS:
                if name in fields:
                    setattr(target, name, _copy(fields[name]))
        elif ev.field == REMOVED:
            items.pop(ev.item, None)
            continue
        elif ev.field in STATE_FIELDS and ev.item in items:
            setattr(items[ev.item], ev.field, _copy(ev.new))
        else:
            continue
        items[ev.item].updated_by = ev.writer
        items[ev.item].updated_at = ev.at
    return items


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value
