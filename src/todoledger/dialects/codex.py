"""Codex CLI `update_plan`: `{"explanation"?, "plan": [{"step", "status"}]}`.

Codex sends the arguments as a JSON string; the wrappers around it are
removed by `dialects.parse` before this module sees the payload.
"""

from __future__ import annotations

from todoledger.core.model import Finding, ParsedWrite
from todoledger.dialects._base import ListShape, fit_list, kind, read_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "codex"
TOOLS = ("update_plan",)
SHAPE = ListShape(NAME, "plan", "step")


def fits(payload: Any) -> str | None:
    return fit_list(payload, SHAPE)


def read(payload: Any, *, response: Any = None, tool: str | None = None) -> ParsedWrite:
    pw = read_list(payload, SHAPE)
    if isinstance(payload, dict):
        explanation = payload.get("explanation")
        if isinstance(explanation, str):
            pw.explanation = explanation
        elif explanation is not None:
            msg = f'"explanation" is {kind(explanation)}, not a string; ignored'
            pw.findings.append(Finding("warning", "explanation", "wrong-type", msg))
    return pw


def render(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "plan": [
            {"step": it["content"], "status": it["status"]}
            for it in items
            if it["status"] not in ("cancelled", "dropped")
        ]
    }
