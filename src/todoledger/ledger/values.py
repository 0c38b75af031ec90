"""Field values and small pure helpers shared by the ledger's concern modules:
validation of what a caller sets, lease lengths, and how items are named in
refusals and replies."""

from __future__ import annotations

from todoledger.core.describe import short
from todoledger.core.merge import Seen
from todoledger.core.model import (
    DEFAULT_PRIORITY,
    ITEM_STATUSES,
    MAX_CONTENT_CHARS,
    MAX_LEASE_SECONDS,
    MAX_NOTES_CHARS,
    OPEN_STATUSES,
    PRIORITIES,
    STATE_FIELDS,
    STATUSES,
    Item,
    LedgerError,
)
from todoledger.core.unicode import check_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# What an export line holds of an item: its state, not who changed it when.
EXPORTED = frozenset({"id", *STATE_FIELDS})
# Statuses that claim work is under way or done: they need the prerequisites met.
PROGRESS = frozenset({"in_progress", "completed"})


def rows_open(rows: list[dict[str, Any]], item_id: str) -> bool:
    """Is the item among these rows, and open?"""
    return any(r["id"] == item_id and r["status"] in OPEN_STATUSES for r in rows)


def epoch(at: str) -> float:
    """A stored timestamp as seconds since the epoch."""
    import datetime as dt

    return dt.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def seen_of(row: dict[str, Any]) -> Seen:
    """What a writer has seen of an item, from its row."""
    return Seen(row["content"], row["status"], row["priority"], row["active_form"])


def compact_row(item: Item) -> dict[str, Any]:
    """An item named in a reply: id, content, status, priority."""
    return {"id": item.id, "content": item.content, "status": item.status, "priority": item.priority}


def list_items(items: list[tuple[Item, str]], limit: int = 3) -> str:
    """Items with why each is named (its status, or why it does not count as finished)."""
    shown = [f"{it.id} {short(it.content, 40)!r} ({why})" for it, why in items[:limit]]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown) + more


def validate(name: str, value: Any, *, stored: bool = False) -> Any:
    """The value a caller sets on a field, checked and normalised; one clear line otherwise.
    `stored`: a value the ledger itself wrote (an import of an export), where an
    item may be `dropped`, the status only a whole list's omission sets."""
    check_text(name, value)
    if isinstance(value, str) and "\x00" in value:  # PostgreSQL text cannot hold it: refused on every backend
        raise LedgerError(f"{name} contains a NUL character")
    if name == "status":
        if value not in (ITEM_STATUSES if stored else STATUSES):
            raise LedgerError(f"status must be one of {', '.join(STATUSES)}, not {value!r}")
    elif name == "priority":
        if value not in PRIORITIES:
            raise LedgerError(f"priority must be one of {', '.join(PRIORITIES)}, not {value!r}")
    elif name == "content":
        if not isinstance(value, str) or not value.strip():
            raise LedgerError("content must not be empty")
        if len(value) > MAX_CONTENT_CHARS:
            raise LedgerError(f"content is {len(value)} characters; the limit is {MAX_CONTENT_CHARS}")
    elif name in ("notes", "evidence", "reason", "active_form") and (
        not isinstance(value, str) or len(value) > MAX_NOTES_CHARS
    ):
        raise LedgerError(f"{name} must be text of at most {MAX_NOTES_CHARS} characters")
    elif name == "position":
        import math  # only here: not loaded by every read

        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise LedgerError(f"position must be a finite number, not {value!r}")
        value = float(value)
    elif name == "parent":
        if not isinstance(value, str):
            raise LedgerError(f"parent must be an item id, not {value!r}")
    elif name == "estimate":
        if not isinstance(value, str):
            raise LedgerError(f"estimate must be a duration like 15m or 2h, not {value!r}")
        from todoledger.core.schedule import normalize_estimate

        value = normalize_estimate(value) if value.strip() else None  # empty: no estimate
    elif name == "uses":
        from todoledger.core.schedule import normalize_uses, split_uses

        if isinstance(value, str):
            value = split_uses(value)
        if not isinstance(value, list):
            raise LedgerError(f"uses must be a list of resources like server or gpu:0-3, not {value!r}")

        value = normalize_uses(value)
    elif name == "needs_approval":
        if not isinstance(value, bool):
            raise LedgerError(f"needs_approval must be true or false, not {value!r}")
    elif name == "depends_on" and (
        not isinstance(value, list)
        or not all(isinstance(v, str) for v in value)
        or len(set(value)) != len(value)
    ):
        raise LedgerError(f"depends_on must be a list of distinct item ids, not {value!r}")
    return value


def lease_length(seconds: Any) -> int:
    """A lease length in seconds, within the limits."""
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_LEASE_SECONDS:
        raise LedgerError(f"a lease lasts 1 to {MAX_LEASE_SECONDS} seconds, not {seconds!r}")
    return seconds


def default_value(name: str) -> Any:
    """A field's value when an import record leaves it out."""
    defaults: dict[str, Any] = {
        "status": "pending",
        "priority": DEFAULT_PRIORITY,
        "position": 0.0,
        "uses": [],
        "needs_approval": False,
    }
    return defaults.get(name)


def current_value(item: Item, name: str) -> Any:
    """A field as its events record it (dependencies sorted)."""
    value = getattr(item, name)
    return sorted(value) if name == "depends_on" else value
