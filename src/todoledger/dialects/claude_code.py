"""Claude Code `TodoWrite`: `{"todos": [{"content", "status", "activeForm"}]}`.

Versions up to about 1.0.8x sent `{"id", "content", "status", "priority"}`
instead; both are read. Claude has no `cancelled`, so rendering omits those.
"""

from __future__ import annotations

from todoledger.core.model import Incoming, ParsedWrite
from todoledger.dialects._base import ListShape, Reader, fit_list, read_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "claude-code"
TOOLS = ("TodoWrite",)
SHAPE = ListShape(NAME, "todos", "content")


def fits(payload: Any) -> str | None:
    return fit_list(payload, SHAPE)


def _extra(raw: dict[str, Any], inc: Incoming, r: Reader) -> None:
    inc.active_form = r.optional_text(raw, "activeForm", inc.where)
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
                "activeForm": it.get("active_form") or it["content"],
            }
            for it in items
            if it["status"] not in ("cancelled", "dropped")
        ]
    }
