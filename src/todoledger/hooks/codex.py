"""Codex CLI: import `update_plan` calls from the rollout on Stop and SessionStart
into the project's plan (one plan per project, as every live hook writes).

The rollout is read incrementally by `todoledger.ingest.rollout` (the one
ingest entry point hooks may call; see docs/ARCHITECTURE.md).
On SessionStart the plan's recovery text goes back as additionalContext.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def handle(event: dict[str, Any], cwd: str | None) -> str | None:
    from todoledger.defaults import default_plan
    from todoledger.hooks import ledger as hook_ledger

    name = event.get("hook_event_name")
    if name not in ("Stop", "SessionStart"):
        return None
    raw = event.get("transcript_path")
    transcript = Path(raw) if isinstance(raw, str) and raw else None
    if transcript is not None and not transcript.is_file():
        transcript = None
    session = event.get("session_id")
    writer = f"codex:{session}" if isinstance(session, str) and session else None
    plan = default_plan()
    with hook_ledger(cwd, create=transcript is not None) as ledger:
        if transcript is not None:
            from todoledger.ingest.rollout import import_rollout

            writer = import_rollout(ledger, transcript, into=plan) or writer
        if name != "SessionStart":
            return None
        text = ledger.prime(plan, writer=writer, recovering=event.get("source") == "compact")
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})
