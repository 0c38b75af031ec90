"""One line of plain English for an event, shared by every renderer."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def short(value: Any, limit: int = 70) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_event(ev: dict[str, Any]) -> str:
    field, old, new = ev["field"], ev["old"], ev["new"]
    if field == "created":
        return f"added {short(new.get('content', ''))!r} [{new.get('status', 'pending')}]"
    if field == "removed":
        return "removed (undo)"
    if field == "status":
        return f"{old} → {new}"
    if field == "content":
        return f"reworded {short(old)!r} → {short(new)!r}"
    if field == "position":
        return "reordered"
    if field == "conflict":
        return f"conflict on {new['field']}: kept {new['kept']!r}, set aside {new['rejected']!r}"
    if field == "dropped":
        return f"dropped from {new}'s list"
    if field == "claimed" and isinstance(new, dict):
        return (
            f"claimed by {new.get('holder')} (token {new.get('token')}, lease until {new.get('expires_at')})"
        )
    if field == "released" and isinstance(new, dict):
        return f"{new.get('holder')}'s claim released ({new.get('why')}, token {new.get('token')})"
    if old is None:
        return f"{field}: {short(new)!r}"
    if new is None:
        return f"{field} cleared (was {short(old)!r})"
    return f"{field}: {short(old)!r} → {short(new)!r}"
