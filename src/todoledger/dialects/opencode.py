"""opencode `todowrite`: `{"todos": [{"content", "status", "priority", "id"?}]}`.

Older opencode versions required an `id` per item; newer ones dropped it.
"""

from __future__ import annotations

from todoledger.core.model import Incoming, ParsedWrite
from todoledger.dialects._base import ListShape, Reader, fit_list, read_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "opencode"
TOOLS = ("todowrite",)
# `activeForm` is Claude's alone; seeing it means the list is not opencode's.
SHAPE = ListShape(NAME, "todos", "content", frozenset({"activeForm"}))


def fits(payload: Any) -> str | None:
    return fit_list(payload, SHAPE)


def _extra(raw: dict[str, Any], inc: Incoming, r: Reader) -> None:
    inc.priority = r.word(raw, "priority", inc.where)
    inc.ext_id = r.ext_id(raw, "id", inc.where)


def read(payload: Any, *, response: Any = None, tool: str | None = None) -> ParsedWrite:
    return read_list(payload, SHAPE, _extra)


def render(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "todos": [
            {
                "content": it["content"],
                "status": it["status"],
                "priority": it.get("priority") or "medium",
                "id": it["id"],
            }
            for it in items
        ]
    }
