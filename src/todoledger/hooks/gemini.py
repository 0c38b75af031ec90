"""Gemini CLI: mirror `write_todos` (AfterTool), prime on SessionStart.

Gemini reads a hook's stdout as JSON only (anything else surfaces as a
system message), so the recovery text travels as
`hookSpecificOutput.additionalContext`, and the mirror prints nothing.
"""

from __future__ import annotations

import json
import os
from typing import Any

TOOL = "write_todos"


def writer_of(event: dict[str, Any]) -> str:
    session = event.get("session_id") or os.environ.get("GEMINI_SESSION_ID") or "unknown"
    return f"gemini:{session}"


def handle(event: dict[str, Any], cwd: str | None) -> str | None:
    from todoledger.hooks import ledger as hook_ledger
    from todoledger.hooks import mirror

    name = event.get("hook_event_name")
    if name == "SessionStart":
        with hook_ledger(cwd, create=False) as ledger:
            text = ledger.prime()
        answer = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
        return json.dumps(answer)  # ASCII escapes: valid JSON on any console encoding
    if name == "PreCompress":
        # Gemini has no SessionStart after compressing: from here on the agent
        # knows what the recovery text shows, so that becomes its base.
        with hook_ledger(cwd, create=False) as ledger:
            ledger.prime(writer=writer_of(event), recovering=True)
        return None
    if name != "AfterTool" or event.get("tool_name") != TOOL:
        return None
    response = event.get("tool_response")
    if isinstance(response, dict) and response.get("error"):
        return None  # Gemini refused the list (say, two items in progress): nothing changed
    payload = event.get("tool_input")
    if not isinstance(payload, dict) and isinstance(response, dict):
        display = response.get("returnDisplay")
        if isinstance(display, dict) and isinstance(display.get("todos"), list):
            payload = {"todos": display["todos"]}
    if not isinstance(payload, dict):
        raise ValueError(f"{TOOL}: tool_input is not an object")
    mirror(cwd, payload, writer=writer_of(event), dialect="gemini")
    return None
