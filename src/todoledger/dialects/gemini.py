"""Gemini CLI `write_todos`: `{"todos": [{"description", "status"}]}`.

Gemini's docs also allow `blocked`, which the ledger has no word for: it is
read as `pending` (blocking belongs in dependencies) with a warning.
"""

from __future__ import annotations

from todoledger.core.lint import field_where
from todoledger.core.model import Incoming, ParsedWrite
from todoledger.dialects._base import ListShape, Reader, fit_list, read_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "gemini"
TOOLS = ("write_todos",)
SHAPE = ListShape(NAME, "todos", "description")


def fits(payload: Any) -> str | None:
    return fit_list(payload, SHAPE)


def _extra(raw: dict[str, Any], inc: Incoming, r: Reader) -> None:
    if inc.status == "blocked":
        inc.status = "pending"
        msg = 'status "blocked" has no ledger equivalent; read as "pending" (record blockers as dependencies)'
        r.warn(field_where(inc.where, "status"), "status-mapped", msg)


def read(payload: Any, *, response: Any = None, tool: str | None = None) -> ParsedWrite:
    return read_list(payload, SHAPE, _extra)


def render(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"todos": [{"description": it["content"], "status": it["status"]} for it in items]}
